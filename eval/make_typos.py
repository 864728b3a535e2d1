"""Write eval/typos.jsonl: the English questions of eval/seeds.jsonl, each with one or two typos.

    python eval/make_typos.py            # rewrites eval/typos.jsonl (deterministic)
    rlhelper eval --set eval/typos.jsonl --split test

Users type questions from memory and misspell them; seeds.jsonl's questions were
written carefully and hold almost none. This set measures what typos cost, without
anyone choosing which typos a system copes with: every English question and
unanswerable item gets the same treatment, decided by a hash. Each typo is one
of the four edits that make up most real misspellings (Damerau, 1964): two
letters swapped, one dropped, one doubled, one replaced by a neighbouring key.
Pasted errors and tracebacks are left out: they are copied, not typed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE, TARGET = HERE / "seeds.jsonl", HERE / "typos.jsonl"
SALT = "rlhelper-typos-v1:"
# A plain word of four letters or more, not part of an identifier, a path or a flag.
WORD = re.compile(r"(?<![\w./\-])[A-Za-z]{4,}(?![\w/\-]|\.\w)")
KEYBOARD = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]


def _number(*parts: object) -> int:
    return int(hashlib.sha256((SALT + ":".join(map(str, parts))).encode()).hexdigest(), 16)


def _neighbour(letter: str, pick: int) -> str:
    for row in KEYBOARD:
        i = row.find(letter.lower())
        if i >= 0:
            options = [row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)]
            return options[pick % len(options)]
    return letter


def misspell(word: str, seed: int) -> str:
    """One edit, never on the first letter (people rarely get that wrong)."""
    at = 1 + seed % (len(word) - 1)
    edit = (seed // 7) % 4
    if edit == 0 and at < len(word) - 1 and word[at] != word[at + 1]:
        return word[:at] + word[at + 1] + word[at] + word[at + 2:]  # swapped
    if edit == 1:
        return word[:at] + word[at + 1:]  # dropped
    if edit == 2:
        return word[:at] + word[at] + word[at:]  # doubled
    return word[:at] + _neighbour(word[at], seed // 29) + word[at + 1:]  # neighbouring key


def with_typos(item_id: str, query: str) -> str | None:
    words = list(WORD.finditer(query))
    if not words:
        return None
    count = 2 if len(words) >= 6 else 1
    chosen = sorted(words, key=lambda m: _number(item_id, m.start()))[:count]
    for match in sorted(chosen, key=lambda m: m.start(), reverse=True):
        typo = misspell(match.group(), _number(item_id, "edit", match.start()))
        query = query[:match.start()] + typo + query[match.end():]
    return query


def typo_items(seed_lines: list[str]) -> list[dict]:
    """The typo set for the lines of seeds.jsonl."""
    rows = []
    for line in seed_lines:
        item = json.loads(line)
        if item["lang"] != "en" or item["kind"] not in ("question", "unanswerable"):
            continue
        typed = with_typos(item["id"], item["query"])
        if typed is not None and typed != item["query"]:
            rows.append({**item, "id": item["id"] + "-typo", "query": typed})
    return rows


def main() -> None:
    rows = typo_items(SOURCE.read_text(encoding="utf-8").splitlines())
    TARGET.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} items -> {TARGET}")


if __name__ == "__main__":
    main()
