"""`rlhelper search --batch`: many queries from a JSON Lines file, one result line each.

Each output line has the input's `id` plus the same fields as `ask --json`, so
issue dumps can be triaged and eval files replayed with ordinary tools (jq).
A bad line yields an `error` line for that id and the batch goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from .answer import build_answer
from .errors import RlhelperError


def run_batch(helper, path: Path, *, k: int = 5, mode: str = "hybrid", **filters) -> Iterator[dict]:
    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                query = item["query"]
                item_id = item.get("id", number)
            except (ValueError, KeyError, TypeError):
                yield {"id": number, "error": f"line {number} is not a JSON object with a 'query' field"}
                continue
            try:
                result = helper.retrieve(query, k=k, mode=mode, **filters)
            except RlhelperError as err:
                yield {"id": item_id, "error": str(err)}
                continue
            answer = build_answer(result.query, result.normalized_query, result.hits, abstained=result.abstained,
                                  truncated=result.truncated, notices=result.notices)
            yield {"id": item_id, **answer.to_dict()}
