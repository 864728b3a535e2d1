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
that, the same on every machine. `questions review` shows how its votes are spread: over how many
visitors, addresses and networks (IPv4 /24, IPv6 /48; the biggest one named) and over what time.

Room (issue 37): a stranger must not be able to fill the store so that no vote teaches anyone. A
question is at most MAX_QUESTION_CHARS (as the bank), and what one visitor, one address (IPv6: its
/64) and one network may hold is bounded (MAX_VOTES_PER_VISITOR, _PER_ADDRESS, _PER_NETWORK): past
its share, the one that voted gives up its own least recently used votes. The whole store is
bounded in votes (MAX_VOTES) and in bytes (MAX_BYTES, counted per vote as it lies on disk); when a
vote would pass either, room is made, never refused: the network holding the most bytes gives up
its least recently used votes (a flood's first), "used" being the last time the visitor who gave
a vote searched with it. A new visitor's vote always fits and teaches them at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable
from contextlib import closing, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..addresses import address_key, network_key
from ..errors import UserBankError
from .bankrecord import LearnedQuestion, normalize
from .userbank import UserBank

FILE_NAME = "visitors.sqlite3"
MAX_VOTES_PER_VISITOR = 200
MAX_VOTES_PER_ADDRESS = 1_000  # an office behind one address: 100 people's 10 votes each
MAX_VOTES_PER_NETWORK = 2_000
MAX_VOTES = 50_000
MAX_BYTES = 64 * 1024 * 1024  # the votes' bytes on disk: 4,500 of 2,000-character questions
MAX_FILTERS_CHARS = 200
USED_EVERY = 3600  # seconds: a visitor's votes are marked used at most this often (a write on a search)
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
# Issue 37: each vote's network, the last time it was used and its bytes on disk (added to older files).
_ROOM_COLUMNS = {"network": "TEXT NOT NULL DEFAULT ''", "used": "TEXT NOT NULL DEFAULT ''",
                 "bytes": "INTEGER NOT NULL DEFAULT 0"}
_ROOM_INDEXES = (
    "CREATE INDEX IF NOT EXISTS votes_by_address ON votes (address, used)",
    "CREATE INDEX IF NOT EXISTS votes_by_network ON votes (network, used)",
)
_COLUMNS = ("visitor, address, norm, text, entry_id, collection, doc, heading, vote, filters, time, network, used, "
            "bytes")


def default_path(bank: UserBank | None = None) -> Path:
    """Beside the user's bank (its data folder)."""
    return (bank or UserBank()).path.with_name(FILE_NAME)


def suggestion_id(norm: str, collection: str, doc: str, heading: str, vote: int) -> str:
    key = json.dumps([norm, collection, doc, heading, vote], ensure_ascii=False)
    return hashlib.sha256(key.encode()).hexdigest()[:10]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def vote_bytes(norm: str, text: str, names: Iterable[str], filters: str) -> int:
    """What a vote takes on disk, near enough: the normalized question lies in the row, its key and
    the pair index, the question in the row, each a long one spilling onto pages of its own (as
    measured: about seven times a 2,000-character question; eval/DECISIONS.md, issue 37)."""
    size = 5 * len(norm.encode()) + 2 * len(text.encode()) + len(filters.encode())
    return size + 2 * sum(len(n.encode()) for n in names) + 200


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
    votes: int = 0  # how the votes are spread (issue 37): how many,
    networks: int = 0  # from how many networks (IPv4 /24, IPv6 /48),
    top_network: str = ""  # the one most came from,
    top_votes: int = 0  # with how many,
    first: str = ""  # and the time of the first

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, **self.entry, "vote": self.vote, "visitors": self.visitors,
                "addresses": self.addresses, "filters": self.filters, "last": self.last, "verdict": self.verdict,
                "votes": self.votes, "networks": self.networks, "top_network": self.top_network,
                "top_votes": self.top_votes, "first": self.first}


class VisitorBank:
    """The visitors' votes and the operator's verdicts, in one SQLite file (created on first write)."""

    def __init__(self, path: str | Path | None = None, *, max_bytes: int = MAX_BYTES,
                 per_visitor: int = MAX_VOTES_PER_VISITOR, per_address: int = MAX_VOTES_PER_ADDRESS,
                 per_network: int = MAX_VOTES_PER_NETWORK, max_votes: int = MAX_VOTES):
        self.path = Path(path) if path else default_path()
        self.max_bytes, self.max_votes = max_bytes, max_votes
        self.per_visitor, self.per_address, self.per_network = per_visitor, per_address, per_network
        self._made = threading.Lock()
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        if not self.path.exists():
            with self._made:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                # Questions hold what visitors pasted (paths, hostnames): the operator's alone.
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
                self._ready = False
        conn = sqlite3.connect(self.path, timeout=10)
        if not self._ready:
            # One writer sets the schema up: threads racing to add the same column would fail
            # ("duplicate column name"), and so would two servers on one file without the write lock.
            with self._made, conn:
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:
                    conn.execute(statement)
                self._add_room_columns(conn)
            self._ready = True
        return conn

    @staticmethod
    def _add_room_columns(conn: sqlite3.Connection) -> None:
        """A file written before issue 37 gets its votes' networks, use times and sizes."""
        have = {row[1] for row in conn.execute("PRAGMA table_info(votes)")}
        missing = [name for name in _ROOM_COLUMNS if name not in have]
        for name in missing:
            conn.execute(f"ALTER TABLE votes ADD COLUMN {name} {_ROOM_COLUMNS[name]}")
        for statement in _ROOM_INDEXES:
            conn.execute(statement)
        if missing:
            rows = conn.execute("SELECT rowid, address, norm, text, collection, doc, heading, filters, time "
                                "FROM votes").fetchall()
            conn.executemany("UPDATE votes SET address = ?, network = ?, used = ?, bytes = ? WHERE rowid = ?", [
                (address_key(address), network_key(address), time, vote_bytes(norm, text, (c, d, h), filters), rowid)
                for rowid, address, norm, text, c, d, h, filters, time in rows])

    # -- a visitor's own votes ------------------------------------------------------------

    def record(self, visitor: str, address: str, question: str, entry: dict, vote: int,
               filters: str = "") -> LearnedQuestion:
        """Keep `visitor`'s vote that `entry` does (+1) or does not (-1) answer `question` (replacing
        their earlier vote on the pair), making room as the module docstring says. UserBankError
        when it cannot be kept (too long, or the file cannot be written)."""
        try:
            record = LearnedQuestion.from_dict({**entry, "text": question, "vote": vote, "time": _now()},
                                               source="web")
        except ValueError as exc:
            raise UserBankError(f"cannot learn this question: {exc}.") from exc
        norm, filters = normalize(record.text), filters[:MAX_FILTERS_CHARS]
        names = (record.entry_id, record.collection, record.doc, record.heading)
        row = (visitor, address_key(address), norm, record.text, *names, record.vote, filters, record.time,
               network_key(address), record.time, vote_bytes(norm, record.text, names[1:], filters))
        try:
            with closing(self._connect()) as conn, conn:
                conn.execute(f"INSERT OR REPLACE INTO votes ({_COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)
                for column, value, share in (("visitor", visitor, self.per_visitor), ("address", row[1],
                                             self.per_address), ("network", row[11], self.per_network)):
                    # Past its share, the one that voted gives up its own least recently used votes.
                    conn.execute(f"DELETE FROM votes WHERE rowid IN (SELECT rowid FROM votes WHERE {column} = ? "
                                 "ORDER BY used DESC, rowid DESC LIMIT -1 OFFSET ?)", (value, share))
                self._make_room(conn)
        except sqlite3.Error as exc:
            raise UserBankError(f"the server's store of visitors' votes cannot be written ({exc})") from exc
        return record

    def _make_room(self, conn: sqlite3.Connection) -> None:
        """While the store holds more than MAX_VOTES or MAX_BYTES, the network holding the most bytes
        gives up its least recently used votes."""
        count, size = conn.execute("SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM votes").fetchone()
        while count > self.max_votes or size > self.max_bytes:
            (network,) = conn.execute("SELECT network FROM votes GROUP BY network "
                                      "ORDER BY SUM(bytes) DESC, MIN(used) LIMIT 1").fetchone()
            gone = []
            for rowid, used_bytes in conn.execute("SELECT rowid, bytes FROM votes WHERE network = ? "
                                                  "ORDER BY used, rowid", (network,)):
                if count <= self.max_votes and size <= self.max_bytes:
                    break
                gone.append((rowid,))
                count, size = count - 1, size - used_bytes
            conn.executemany("DELETE FROM votes WHERE rowid = ?", gone)

    def room(self) -> dict[str, int]:
        """How full the store is: votes and bytes held, and their bounds."""
        if not self.path.exists():
            return {"votes": 0, "bytes": 0, "max_votes": self.max_votes, "max_bytes": self.max_bytes}
        with closing(self._connect()) as conn:
            count, size = conn.execute("SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM votes").fetchone()
        return {"votes": count, "bytes": size, "max_votes": self.max_votes, "max_bytes": self.max_bytes}

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
        now = datetime.now(UTC)
        stale = (now - timedelta(seconds=USED_EVERY)).isoformat(timespec="seconds")
        with closing(self._connect()) as conn:
            rows = conn.execute("SELECT text, entry_id, collection, doc, heading, vote, time FROM votes "
                                "WHERE visitor = ? ORDER BY time, rowid", (visitor,)).fetchall()
            # Searched with now: the last a full store gives up (at most one write an hour a visitor;
            # best effort, a busy file must not fail the search).
            with suppress(sqlite3.Error), conn:
                conn.execute("UPDATE votes SET used = ? WHERE visitor = ? AND used < ?",
                             (now.isoformat(timespec="seconds"), visitor, stale))
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
                "MAX(time), COUNT(*), COUNT(DISTINCT network), MIN(time) "
                "FROM votes GROUP BY norm, collection, doc, heading, vote").fetchall()
            held = {}
            if bank is not None:
                try:
                    held = {r.key: r.vote for r in bank.records()}
                except UserBankError:
                    held = {}
            found = []
            for norm, collection, doc, heading, vote, visitors, addresses, last, *spread in groups:
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
                top = conn.execute(
                    "SELECT network, COUNT(*) FROM votes WHERE norm = ? AND collection = ? AND doc = ? AND heading = ? "
                    "AND vote = ? GROUP BY network ORDER BY 2 DESC LIMIT 1",
                    (norm, collection, doc, heading, vote)).fetchone()
                entry = {"entry_id": entry_id, "collection": collection, "doc": doc, "heading": heading}
                found.append(Suggestion(sid, text, entry, vote, visitors, addresses, filters, last, verdict,
                                        votes=spread[0], networks=spread[1], top_network=top[0], top_votes=top[1],
                                        first=spread[2]))
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
