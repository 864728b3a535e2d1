"""Thumbs up/down from the web chat, kept in a local SQLite file.

One row per voted answer: time (UTC, ISO 8601), query, answer (Markdown),
cited entry ids (JSON list), vote (+1/-1) and an optional comment. Re-voting
the same answer changes its row; un-voting deletes it. `export` writes the
rows as JSON Lines for `rlhelper feedback export`.

Each call opens its own connection: the web server calls in from many threads,
and SQLite connections must not be shared between threads.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from . import config

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
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if target is None or str(target) == "-":
        sys.stdout.write(lines)
    elif hasattr(target, "write"):
        target.write(lines)
    else:
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(lines, encoding="utf-8")
    return len(rows)
