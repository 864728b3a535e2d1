"""`rlhelper search --batch`: many queries from a JSON Lines file, one result line each.

Each output line has the input's `id` and `line` number plus the same fields
as `ask --json`, so issue dumps can be triaged and eval files replayed with
ordinary tools (jq). A bad line yields an `error` line for it and the batch goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ..errors import RlhelperError


def run_batch(helper, path: Path, *, k: int = 5, mode: str = "hybrid", **filters) -> Iterator[dict]:
    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            item_id, fields = _answer_line(helper, line, number, k=k, mode=mode, filters=filters)
            yield {"id": item_id, "line": number, **fields}


def _answer_line(helper, line: str, number: int, *, k: int, mode: str, filters: dict) -> tuple[object, dict]:
    """(id, the answer's fields) for one input line, or (id, {"error": ...}) when it cannot be searched."""
    try:
        item = json.loads(line)
    except ValueError:
        item = None
    if not isinstance(item, dict) or "query" not in item:
        item_id = item.get("id", number) if isinstance(item, dict) else number  # keep the id it has
        return item_id, {"error": f"line {number} is not a JSON object with a 'query' field"}
    query, item_id = item["query"], item.get("id", number)
    if not isinstance(query, str):
        return item_id, {"error": f"line {number}: 'query' must be a string, not {type(query).__name__}"}
    try:
        return item_id, helper.ask(query, k=k, mode=mode, **filters).to_dict()
    except RlhelperError as err:
        return item_id, {"error": str(err)}
