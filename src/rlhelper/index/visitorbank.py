"""What web visitors taught: each visitor's own votes, and the suggestions they make to the operator.

A web server's visitors are strangers (issue 31): one anonymous thumbs-up must not change what
everyone else is shown, nor show them the words it was given with. So a visitor's vote is kept
here, for that visitor alone (web/visitors.py applies it to their next searches, keyed by an id
kept in their browser), and it reaches the operator's bank (userbank.py) only when the operator
approves it: `rlhelper questions review` lists the pending suggestions, each with how many distinct
visitors (and from how many addresses) made it, and approves or rejects them. A server whose
visitors are all trusted (`serve --learn-from-votes`) writes votes to the bank as they come.

One SQLite file beside the user's bank (`visitors.sqlite3`, 0600):

    votes     one row per (visitor, normalized question, entry): the latest vote, the filters it was
              given under and the address it came from. A take-back deletes the visitor's row and
              nothing else.
    reviewed  the operator's verdict on a suggestion (approved / rejected), by suggestion id.

A suggestion is every visitor's vote on one (question, entry, vote), grouped; its id is a hash of
that, the same on every machine. Everything is bounded: a question of at most MAX_QUESTION_CHARS
(as the bank), MAX_VOTES_PER_VISITOR per visitor and MAX_VOTES in all (the oldest go first), and a
file of at most MAX_BYTES (then new votes are refused). Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import UserBankError
from .bankrecord import LearnedQuestion, normalize
from .userbank import UserBank

FILE_NAME = "visitors.sqlite3"
MAX_VOTES_PER_VISITOR = 200
MAX_VOTES = 50_000
MAX_BYTES = 64 * 1024 * 1024  # ~50,000 votes of long questions; beyond it new votes are refused
MAX_FILTERS_CHARS = 200
REVIEW_SOURCE = "review"  # the bank's source of an approved suggestion

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS votes (
        visitor TEXT NOT NULL, address TEXT NOT NULL, norm TEXT NOT NULL, text TEXT NOT NULL,
        entry_id TEXT NOT NULL, collection TEXT NOT NULL, doc TEXT NOT NULL, heading TEXT NOT NULL,
        vote INTEGER NOT NULL CHECK (vote IN (-1, 1)), filters TEXT NOT NULL, time TEXT NOT NULL,
        PRIMARY KEY (visitor, norm, collection, doc, heading))""",
    "CREATE INDEX IF NOT EXISTS votes_by_pair ON votes (norm, collection, doc, heading, vote)",
    "CREATE INDEX IF NOT EXISTS votes_by_time ON votes (time)",
    """CREATE TABLE IF NOT EXISTS reviewed (
        id TEXT PRIMARY KEY, verdict TEXT NOT NULL CHECK (verdict IN ('approved', 'rejected')),
        time TEXT NOT NULL)""",
)


def default_path(bank: UserBank | None = None) -> Path:
    """Beside the user's bank (its data folder)."""
    return (bank or UserBank()).path.with_name(FILE_NAME)


def suggestion_id(norm: str, collection: str, doc: str, heading: str, vote: int) -> str:
    key = json.dumps([norm, collection, doc, heading, vote], ensure_ascii=False)
    return hashlib.sha256(key.encode()).hexdigest()[:10]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Suggestion:
    """Every visitor's vote on one (question, entry, vote): what `questions review` shows."""

    id: str
    text: str  # the latest wording a visitor gave
    entry: dict  # {entry_id, collection, doc, heading}
    vote: int
    visitors: int
    addresses: int
    filters: list[str]  # the filters the votes were given under ("" when none)
    last: str  # time of the latest vote
    verdict: str  # "pending", "approved" or "rejected"

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, **self.entry, "vote": self.vote, "visitors": self.visitors,
                "addresses": self.addresses, "filters": self.filters, "last": self.last, "verdict": self.verdict}


class VisitorBank:
    """The visitors' votes and the operator's verdicts, in one SQLite file (created on first write)."""

    def __init__(self, path: str | Path | None = None, *, max_bytes: int = MAX_BYTES,
                 per_visitor: int = MAX_VOTES_PER_VISITOR, max_votes: int = MAX_VOTES):
        self.path = Path(path) if path else default_path()
        self.max_bytes, self.per_visitor, self.max_votes = max_bytes, per_visitor, max_votes
        self._made = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        if not self.path.exists():
            with self._made:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                # Questions hold what visitors pasted (paths, hostnames): the operator's alone.
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        conn = sqlite3.connect(self.path, timeout=10)
        for statement in _SCHEMA:
            conn.execute(statement)
        return conn

    # -- a visitor's own votes ------------------------------------------------------------

    def record(self, visitor: str, address: str, question: str, entry: dict, vote: int,
               filters: str = "") -> LearnedQuestion:
        """Keep `visitor`'s vote that `entry` does (+1) or does not (-1) answer `question` (replacing
        their earlier vote on the pair). UserBankError when it cannot be kept (too long, full)."""
        try:
            record = LearnedQuestion.from_dict({**entry, "text": question, "vote": vote, "time": _now()},
                                               source="web")
        except ValueError as exc:
            raise UserBankError(f"cannot learn this question: {exc}.") from exc
        try:
            if self.path.stat().st_size >= self.max_bytes:
                raise UserBankError("the server's store of visitors' votes is full")
        except FileNotFoundError:
            pass
        row = (visitor, address[:100], normalize(record.text), record.text, record.entry_id, record.collection,
               record.doc, record.heading, record.vote, filters[:MAX_FILTERS_CHARS], record.time)
        with closing(self._connect()) as conn, conn:
            conn.execute("INSERT OR REPLACE INTO votes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            # The visitor's oldest beyond their share, then everyone's oldest beyond the whole.
            conn.execute("DELETE FROM votes WHERE rowid IN (SELECT rowid FROM votes WHERE visitor = ? "
                         "ORDER BY time DESC, rowid DESC LIMIT -1 OFFSET ?)", (visitor, self.per_visitor))
            conn.execute("DELETE FROM votes WHERE rowid IN (SELECT rowid FROM votes "
                         "ORDER BY time DESC, rowid DESC LIMIT -1 OFFSET ?)", (self.max_votes,))
        return record

    def take_back(self, visitor: str, question: str, entry: dict) -> bool:
        """Delete `visitor`'s own vote on this pair (never anyone else's, never the bank's)."""
        if not self.path.exists():
            return False
        key = (visitor, normalize(question), entry.get("collection"), entry.get("doc"), entry.get("heading"))
        with closing(self._connect()) as conn, conn:
            gone = conn.execute("DELETE FROM votes WHERE visitor = ? AND norm = ? AND collection = ? AND doc = ? "
                                "AND heading = ?", key).rowcount
        return bool(gone)

    def votes_of(self, visitor: str) -> list[LearnedQuestion]:
        """`visitor`'s votes, oldest first, as the bank's records (what their own searches apply)."""
        if not visitor or not self.path.exists():
            return []
        with closing(self._connect()) as conn:
            rows = conn.execute("SELECT text, entry_id, collection, doc, heading, vote, time FROM votes "
                                "WHERE visitor = ? ORDER BY time, rowid", (visitor,)).fetchall()
        return [LearnedQuestion(text, entry_id, collection, doc, heading, vote, time, "web")
                for text, entry_id, collection, doc, heading, vote, time in rows]

    def others_hold(self, visitor: str, question: str, entry: dict, vote: int) -> bool:
        """Whether another visitor still holds this very vote (a take-back leaves theirs alone)."""
        if not self.path.exists():
            return False
        key = (normalize(question), entry.get("collection"), entry.get("doc"), entry.get("heading"), vote, visitor)
        with closing(self._connect()) as conn:
            return conn.execute("SELECT 1 FROM votes WHERE norm = ? AND collection = ? AND doc = ? AND heading = ? "
                                "AND vote = ? AND visitor != ? LIMIT 1", key).fetchone() is not None

    # -- the operator's review --------------------------------------------------------------

    def suggestions(self, bank: UserBank | None = None, *, every: bool = False) -> list[Suggestion]:
        """The visitors' votes grouped into suggestions, most visitors first. Pending only, unless
        `every`: not yet reviewed, and not already in `bank` with the same vote (an operator's own
        record, an approved one, or one a --learn-from-votes server wrote)."""
        if not self.path.exists():
            return []
        with closing(self._connect()) as conn:
            verdicts = dict(conn.execute("SELECT id, verdict FROM reviewed").fetchall())
            groups = conn.execute(
                "SELECT norm, collection, doc, heading, vote, COUNT(DISTINCT visitor), COUNT(DISTINCT address), "
                "MAX(time) FROM votes GROUP BY norm, collection, doc, heading, vote").fetchall()
            held = {}
            if bank is not None:
                try:
                    held = {r.key: r.vote for r in bank.records()}
                except UserBankError:
                    held = {}
            found = []
            for norm, collection, doc, heading, vote, visitors, addresses, last in groups:
                sid = suggestion_id(norm, collection, doc, heading, vote)
                verdict = verdicts.get(sid) or ("approved" if held.get((norm, collection, doc, heading)) == vote
                                                else "pending")
                if verdict != "pending" and not every:
                    continue
                text, entry_id = conn.execute(
                    "SELECT text, entry_id FROM votes WHERE norm = ? AND collection = ? AND doc = ? AND heading = ? "
                    "AND vote = ? ORDER BY time DESC LIMIT 1", (norm, collection, doc, heading, vote)).fetchone()
                filters = [f for (f,) in conn.execute(
                    "SELECT DISTINCT filters FROM votes WHERE norm = ? AND collection = ? AND doc = ? AND heading = ? "
                    "AND vote = ? LIMIT 5", (norm, collection, doc, heading, vote))]
                entry = {"entry_id": entry_id, "collection": collection, "doc": doc, "heading": heading}
                found.append(Suggestion(sid, text, entry, vote, visitors, addresses, filters, last, verdict))
        return sorted(found, key=lambda s: (-s.visitors, -s.addresses, s.last))

    def review(self, bank: UserBank, approve: Iterable[str] = (), reject: Iterable[str] = (),
               *, approve_all: bool = False) -> dict[str, list[Suggestion]]:
        """Approve (write to `bank`, source "review") or reject suggestions by id (a unique prefix
        of at least 4 characters will do). Returns {"approved": [...], "rejected": [...]}; an
        unknown or ambiguous id is a UserBankError and nothing is changed."""
        pending = self.suggestions(bank)
        chosen = {"approved": list(pending) if approve_all else [], "rejected": []}
        for verdict, wanted in (("approved", approve), ("rejected", reject)):
            for prefix in (w.strip() for w in wanted if w.strip()):
                found = [s for s in pending if s.id.startswith(prefix)] if len(prefix) >= 4 else []
                if len(found) != 1:
                    raise UserBankError(f"no pending suggestion has the id {prefix!r} (see `rlhelper questions "
                                        "review`)" if not found else
                                        f"the id {prefix!r} names {len(found)} suggestions: give more characters")
                chosen[verdict].append(found[0])
        both = {s.id for s in chosen["approved"]} & {s.id for s in chosen["rejected"]}
        if both and not approve_all:
            raise UserBankError(f"{', '.join(sorted(both))}: approved and rejected at once; choose one")
        chosen["rejected"] = [s for s in chosen["rejected"] if s.id not in {a.id for a in chosen["approved"]}]
        for s in chosen["approved"]:
            bank.add(s.text, s.entry, s.vote, REVIEW_SOURCE)
        now = _now()
        with closing(self._connect()) as conn, conn:
            conn.executemany("INSERT OR REPLACE INTO reviewed VALUES (?, ?, ?)",
                             [(s.id, verdict, now) for verdict, group in chosen.items() for s in group])
        return chosen
