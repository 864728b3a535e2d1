"""Thumbs up/down from the web chat, kept in a local SQLite file.

One row per voted answer: time (UTC, ISO 8601), query, answer (Markdown),
cited entry ids (JSON list), vote (+1/-1) and an optional comment. Re-voting
the same answer changes its row; un-voting deletes it. `export` writes the
rows as JSON Lines for `rlhelper feedback export`; `eval_items` turns them
into an eval set (`rlhelper feedback export --as-eval`), so the questions
users really ask can measure retrieval and refit abstention.

Each call opens its own connection: the web server calls in from many threads,
and SQLite connections must not be shared between threads.

The web server is its only writer and anyone who can open the page can vote, so
writes are bounded: the file (and a folder it creates) is the user's alone
(0600 / 0700, like chat history: questions hold paths and hostnames), a
comment longer than MAX_COMMENT_CHARS is refused, the file stops growing at
`max_bytes`, and `WriteLimiter` bounds the writes of one client per minute.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from .. import config
from ..errors import RlhelperError
from ..index import lexical

FILE_NAME = "feedback.sqlite3"
# A vote on a pasted 1 MB log should not make a 1 MB row.
MAX_QUERY_CHARS = 20_000
MAX_ANSWER_CHARS = 50_000
MAX_COMMENT_CHARS = 2_000  # a longer comment is refused, not cut: the writer should choose what to keep
MAX_BYTES = 50 * 1024 * 1024  # ~2,000 votes on pasted logs; beyond it new votes are refused
WRITES_PER_MINUTE = 20  # votes, changed votes and comments of one client (browser session, address)

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


class FeedbackRefused(RlhelperError):
    """A vote or comment that is not stored (a comment too long, ...)."""


class FeedbackFull(FeedbackRefused):
    """The feedback file reached its size limit: nothing new is stored until it is moved aside."""


def default_path() -> Path:
    return config.data_dir() / FILE_NAME


def _vote(value: int) -> int:
    if value not in (1, -1):
        raise ValueError(f"a vote is +1 or -1, not {value!r}")
    return value


class FeedbackStore:
    """The feedback table in one SQLite file (created on first write)."""

    def __init__(self, path: str | Path | None = None, *, max_bytes: int = MAX_BYTES):
        self.path = Path(path) if path else default_path()
        self.max_bytes = max_bytes

    def _connect(self) -> sqlite3.Connection:
        if not self.path.exists():
            self._create()
        elif self.path.stat().st_mode & 0o077:  # made world-readable by an older rlhelper
            try:
                self.path.chmod(0o600)
            except OSError:
                pass
        conn = sqlite3.connect(self.path, timeout=10)
        conn.execute(_SCHEMA)
        return conn

    def _create(self) -> None:
        """Make the file with its table beside it, then link it into place: a reader never finds the
        file without its table, and of two first writers one links and the other opens its file.
        Votes hold the questions asked (paths, hostnames): the user's alone, like chat history;
        SQLite gives its journal the database file's permissions."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        draft = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.new")
        os.close(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        try:
            with closing(sqlite3.connect(draft)) as conn:
                conn.execute(_SCHEMA)
                conn.commit()
            try:
                os.link(draft, self.path)
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links: no second writer to lose to there
                if not self.path.exists():
                    os.replace(draft, self.path)
        finally:
            draft.unlink(missing_ok=True)

    def _check_room(self) -> None:
        try:
            size = self.path.stat().st_size
        except OSError:
            return
        if size >= self.max_bytes:
            raise FeedbackFull(
                f"the feedback store {self.path} is full ({size / 2**20:.0f} MB): export it with "
                "`rlhelper feedback export -o FILE`, then move the file aside to start a new one")

    def record(self, query: str, answer: str, cited_entry_ids: list[str], vote: int,
               comment: str | None = None) -> int:
        """Store one vote; returns its row id."""
        self._check_room()
        row = (
            datetime.now(UTC).isoformat(timespec="seconds"),
            (query or "")[:MAX_QUERY_CHARS],
            (answer or "")[:MAX_ANSWER_CHARS],
            json.dumps(list(cited_entry_ids), ensure_ascii=False),
            _vote(vote),
            checked_comment(comment) or None,
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
        comment = checked_comment(comment)
        self._check_room()
        with closing(self._connect()) as conn, conn:
            conn.execute("UPDATE feedback SET comment = ? WHERE id = ?", (comment or None, row_id))

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


def checked_comment(comment: str | None) -> str:
    """The comment, stripped; FeedbackRefused when it is longer than MAX_COMMENT_CHARS."""
    comment = (comment or "").strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise FeedbackRefused(f"the comment is {len(comment):,} characters long and the limit is "
                              f"{MAX_COMMENT_CHARS:,}: shorten it, then save it again")
    return comment


class WriteLimiter:
    """At most `per_minute` writes for each key (a visitor, a client address) in any minute (or in any
    `window` seconds: the web server also counts sign-in attempts and new visitor ids with it).

    Thread-safe; keeps one deque of times per key seen in the last window."""

    def __init__(self, per_minute: int = WRITES_PER_MINUTE, *, clock: Callable[[], float] = time.monotonic,
                 window: float = 60.0):
        self.per_minute, self.clock, self.window = per_minute, clock, window
        self._times: dict[str, deque] = {}
        self._lock = threading.Lock()

    def at_limit(self, key: str) -> bool:
        """Whether `key` has had all its writes of the last window (counts nothing)."""
        now = self.clock()
        with self._lock:
            return sum(t > now - self.window for t in self._times.get(key, ())) >= self.per_minute

    def allow(self, *keys: str) -> bool:
        """Count one write for every key, or none when any key is at its limit."""
        now = self.clock()
        with self._lock:
            for stale in [k for k, times in self._times.items() if not times or times[-1] <= now - self.window]:
                del self._times[stale]
            queues = [self._times.setdefault(key, deque()) for key in keys]
            for times in queues:
                while times and times[0] <= now - self.window:
                    times.popleft()
            if any(len(times) >= self.per_minute for times in queues):
                return False
            for times in queues:
                times.append(now)
            return True


def export(target: str | Path | IO[str] | None = None, *, db: str | Path | None = None) -> int:
    """Write every feedback row as one JSON object per line; returns the row count.

    `target` is a path, an open text stream, or None / "-" for stdout.
    """
    rows = FeedbackStore(db).rows()
    write_lines(rows, target)
    return len(rows)


def eval_items(rows: list[dict], locate: Callable[[str], tuple[str, str] | None],
               is_log: Callable[[str], bool]) -> tuple[list[dict], dict[str, int]]:
    """Voted answers as eval items (sets.load_eval_set's format), and what was left out.

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


def eval_items_for_index(rows: list[dict], entries: list) -> tuple[list[dict], dict[str, int]]:
    """`eval_items` against an index's entries (`Helper.entries`): a cited entry is found by its
    id, and a query is a traceback when the query normaliser reads it as a log."""
    from ..search.query import normalize_query

    by_id = {e.id: e for e in entries}

    def locate(entry_id: str) -> tuple[str, str] | None:
        e = by_id.get(entry_id)
        return (f"{e.collection}/{e.doc}", e.heading) if e else None

    return eval_items(rows, locate, lambda query: normalize_query(query).is_log)


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
