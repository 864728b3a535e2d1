"""Thumbs up/down from the web chat, kept in a local SQLite file.

One row per voted answer: time (UTC, ISO 8601), query, answer (Markdown),
cited entry ids (JSON list), vote (+1/-1) and an optional comment. Re-voting
the same answer changes its row; un-voting deletes it. `export` writes the
rows as JSON Lines for `rlhelper feedback export`; `eval_items` turns them
into an eval set (`rlhelper feedback export --as-eval`), so the questions
users really ask can measure retrieval and refit abstention.

Each call opens its own connection: the web server calls in from many threads,
and SQLite connections must not be shared between threads.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from . import config, lexical

FILE_NAME = "feedback.sqlite3"
# A vote on a pasted 1 MB log should not make a 1 MB row.
MAX_QUERY_CHARS = 20_000
MAX_ANSWER_CHARS = 50_000
MAX_COMMENT_CHARS = 5_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    query TEXT NOT NULL,
    answer TEXT NOT NULL,
    cited_entry_ids TEXT NOT NULL,
    vote INTEGER NOT NULL CHECK (vote IN (-1, 1)),
    comment TEXT
)
"""
COLUMNS = ("id", "time", "query", "answer", "cited_entry_ids", "vote", "comment")


def default_path() -> Path:
    return config.data_dir() / FILE_NAME


def _vote(value: int) -> int:
    if value not in (1, -1):
        raise ValueError(f"a vote is +1 or -1, not {value!r}")
    return value


class FeedbackStore:
    """The feedback table in one SQLite file (created on first write)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=10)
        conn.execute(_SCHEMA)
        return conn

    def record(self, query: str, answer: str, cited_entry_ids: list[str], vote: int,
               comment: str | None = None) -> int:
        """Store one vote; returns its row id."""
        row = (
            datetime.now(UTC).isoformat(timespec="seconds"),
            (query or "")[:MAX_QUERY_CHARS],
            (answer or "")[:MAX_ANSWER_CHARS],
            json.dumps(list(cited_entry_ids), ensure_ascii=False),
            _vote(vote),
            (comment or None) and comment[:MAX_COMMENT_CHARS],
        )
        with closing(self._connect()) as conn, conn:
            cur = conn.execute(
                "INSERT INTO feedback (time, query, answer, cited_entry_ids, vote, comment) VALUES (?, ?, ?, ?, ?, ?)",
                row,
            )
            return int(cur.lastrowid)

    def change_vote(self, row_id: int, vote: int) -> None:
        with closing(self._connect()) as conn, conn:
            conn.execute("UPDATE feedback SET vote = ?, time = ? WHERE id = ?",
                         (_vote(vote), datetime.now(UTC).isoformat(timespec="seconds"), row_id))

    def set_comment(self, row_id: int, comment: str) -> None:
        with closing(self._connect()) as conn, conn:
            conn.execute("UPDATE feedback SET comment = ? WHERE id = ?",
                         ((comment or "").strip()[:MAX_COMMENT_CHARS] or None, row_id))

    def remove(self, row_id: int) -> None:
        with closing(self._connect()) as conn, conn:
            conn.execute("DELETE FROM feedback WHERE id = ?", (row_id,))

    def rows(self) -> list[dict]:
        """All rows, oldest first, with cited_entry_ids decoded."""
        if not self.path.exists():
            return []
        with closing(self._connect()) as conn:
            cur = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM feedback ORDER BY id")
            out = []
            for values in cur.fetchall():
                row = dict(zip(COLUMNS, values, strict=True))
                row["cited_entry_ids"] = json.loads(row["cited_entry_ids"])
                out.append(row)
            return out


def export(target: str | Path | IO[str] | None = None, *, db: str | Path | None = None) -> int:
    """Write every feedback row as one JSON object per line; returns the row count.

    `target` is a path, an open text stream, or None / "-" for stdout.
    """
    rows = FeedbackStore(db).rows()
    write_lines(rows, target)
    return len(rows)


def eval_items(rows: list[dict], locate: Callable[[str], tuple[str, str] | None],
               is_log: Callable[[str], bool]) -> tuple[list[dict], dict[str, int]]:
    """Voted answers as eval items (evaluate.load_eval_set's format), and what was left out.

    A thumbs-up on an answer: its cited entries are the expected sections. A thumbs-up on
    "no matching entry": the docs do not answer it (expected []). A thumbs-down says only
    that the answer was wrong, not which section is right, so it is left out. `locate(id)`
    gives a cited entry's (collection/doc, heading) in the current index, or None when the
    index no longer holds it (re-ingested docs). The split is a fixed hash of the row id,
    about half dev (tune on it) and half test (report on it).
    """
    items, left_out = [], {"thumbs down": 0, "cited entry no longer indexed": 0}
    for row in rows:
        if row["vote"] < 0:
            left_out["thumbs down"] += 1
            continue
        places = [locate(entry_id) for entry_id in row["cited_entry_ids"]]
        if any(place is None for place in places):
            left_out["cited entry no longer indexed"] += 1
            continue
        item_id = f"feedback-{row['id']}"
        query = row["query"]
        items.append({
            "id": item_id,
            "split": "dev" if hashlib.sha256(item_id.encode()).digest()[0] % 2 == 0 else "test",
            "query": query,
            "kind": ("traceback" if is_log(query) else "question") if places else "unanswerable",
            "lang": "zh" if lexical.has_han(query) else "en",
            "expected": [{"doc": doc, "heading": heading} for doc, heading in places],
        })
    return items, left_out


def write_lines(records: list[dict], target: str | Path | IO[str] | None) -> None:
    """JSON Lines to a path, an open text stream, or stdout (None or "-")."""
    lines = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    if target is None or str(target) == "-":
        sys.stdout.write(lines)
    elif hasattr(target, "write"):
        target.write(lines)
    else:
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(lines, encoding="utf-8")
