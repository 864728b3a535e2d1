"""The user's own question bank: questions learned from accepted and rejected answers.

The shipped bank (ingest/questions, questions.py) is written by the project; this one grows from
what a user says about answers. A thumbs-up in the web chat, `rlhelper feedback accept` or
`/accept` in `rlhelper chat` adds the asked question for the answer's lead entry (+1); a
thumbs-down records that the entry does not answer it (-1). It is a local file beside the
feedback store, never the shipped bank:

    <data_dir>/questions.jsonl           one change a line, created 0600
    {"id": "3f9c0a1b2d", "text": "rewards are stuck at zero", "entry_id": "seeds/...#...",
     "collection": "seeds", "doc": "...", "heading": "...", "vote": 1,
     "time": "2026-11-25T11:40:00+00:00", "source": "web"}
    {"id": "3f9c0a1b2d", "text": "...", "collection": "seeds", "doc": "...", "heading": "...",
     "removed": true, "time": "..."}                                   a record taken away

A record is keyed like the shipped bank (collection, doc, heading), so it survives re-ingest; the
entry id is kept as a fallback and for display. There is one record per (normalized question,
entry): a later line for the same pair replaces it, and importing a file twice changes nothing.
`id` is a hash of that key, the same on every machine, so a team sharing exports names records
alike.

The file is a journal: every change is appended (a vote writes one line, not the whole bank), so
a search can follow it change by change (BankFollower, learned.py) instead of reading it again.
When superseded lines outnumber the live records it is compacted: written anew with a first line
{"rlhelper_bank": 2, "generation": ..., "compacted_from": {"generation": ..., "bytes": N}, ...}
naming the file and length it replaces, so a follower that had read that far goes on from the
end of the compacted records without reading them.

At most MAX_RECORDS records are kept. A vote on a full bank takes the place of the oldest imported
record (else the oldest record); an import never takes the place of the user's own records: it
may replace older imported ones, and what does not fit is skipped and counted (ImportReport).

Standard library only: `rlhelper questions list` reads it without numpy.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import threading
import unicodedata
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

from .. import config
from ..errors import UserBankError

log = logging.getLogger(__name__)

FILE_NAME = "questions.jsonl"
CACHE_SUFFIX = ".learned"  # a folder beside the file: the questions' vectors and tokens (learned_store.py)
LAST_ANSWER_FILE = "last_answer.json"
SOURCES = ("web", "cli", "chat", "import", "review")  # review: a visitor's suggestion the operator approved
MAX_QUESTION_CHARS = 2_000  # as the shipped bank: a longer text is a log, not a question
MAX_NAME_CHARS = 1_000  # a heading, document path, collection or entry id longer than this is not one
MAX_TIME_CHARS = 64
MAX_RECORDS = 20_000  # records kept; see the module docstring for who gives way when it is full
MAX_LINE_BYTES = 65_536  # a record at its longest is far below (2,000 characters of text as \u escapes)
COMPACT_MIN_DEAD = 1_000  # superseded lines tolerated before the file is compacted
HEADER_KEY = "rlhelper_bank"
FORMAT = 2


def default_path() -> Path:
    return config.data_dir() / FILE_NAME


TRAILING = " ?？!！.。,，;；:："  # dropped from the end of a question, with spaces


def normalize(text: str) -> str:
    """The form two questions are compared in: Unicode-folded, case-folded, spaces collapsed,
    trailing punctuation dropped ("Rewards stuck at 0?" == "rewards stuck at 0")."""
    text = text or ""
    text = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()  # the same, faster
    return " ".join(text.split()).rstrip(TRAILING)


def record_id(text: str, collection: str, doc: str, heading: str) -> str:
    return _id_of((normalize(text), collection, doc, heading))


def _id_of(key: tuple[str, str, str, str]) -> str:
    return hashlib.sha256(json.dumps(list(key), ensure_ascii=False).encode()).hexdigest()[:10]


class TooLong(ValueError):
    """A field over its length limit (counted apart from malformed lines by an import)."""


@dataclass(frozen=True)
class LearnedQuestion:
    """One learned (question, entry) pair: +1 accepted, -1 demoted."""

    text: str
    entry_id: str
    collection: str
    doc: str
    heading: str
    vote: int
    time: str
    source: str

    @cached_property
    def key(self) -> tuple[str, str, str, str]:
        return normalize(self.text), self.collection, self.doc, self.heading

    @cached_property
    def id(self) -> str:
        return _id_of(self.key)

    def to_dict(self) -> dict:
        return {"id": self.id, **asdict(self)}

    def removal(self) -> dict:
        """The journal line that takes this record away."""
        return {"id": self.id, "text": self.text, "collection": self.collection, "doc": self.doc,
                "heading": self.heading, "removed": True, "time": _now()}

    @classmethod
    def from_dict(cls, row: dict, *, source: str | None = None, removal: bool = False) -> LearnedQuestion:
        """A record from a JSON object; ValueError (TooLong for a field over its limit) says what
        is wrong with it. `removal`: a removal line, which has no vote."""
        if not isinstance(row, dict):
            raise ValueError("not a JSON object")
        needed = ("text", "collection", "doc", "heading") + (() if removal else ("vote",))
        missing = [name for name in needed if name not in row]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        text = _clean_text(row["text"])
        vote = 1 if removal else row["vote"]
        if vote not in (1, -1) or isinstance(vote, bool):
            raise ValueError(f"vote must be 1 or -1, not {_shown(vote)}")
        where = [row["collection"], row["doc"], row["heading"]]
        if not all(isinstance(v, str) and v for v in where[:2]) or not isinstance(where[2], str):
            raise ValueError("collection, doc and heading must be text")
        entry_id, stamp = row.get("entry_id") or "", row.get("time") or ""
        if not isinstance(entry_id, str) or not isinstance(stamp, str):
            raise ValueError("entry_id and time must be text")
        for name, value in (("collection", where[0]), ("doc", where[1]), ("heading", where[2]),
                            ("entry_id", entry_id)):
            if len(value) > MAX_NAME_CHARS:
                raise TooLong(f"the {name} is {len(value):,} characters long (at most {MAX_NAME_CHARS:,})")
        if len(stamp) > MAX_TIME_CHARS:
            raise TooLong(f"the time is {len(stamp):,} characters long (at most {MAX_TIME_CHARS})")
        origin = source or row.get("source") or "import"
        if origin not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {_shown(origin)}")
        return cls(text, entry_id, *where, vote, stamp or _now(), origin)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _clean_text(text) -> str:
    if not isinstance(text, str):
        raise ValueError("text must be a string")
    if len(text) > 4 * MAX_QUESTION_CHARS:  # not worth cleaning: surely too long
        raise TooLong(f"the question is {len(text):,} characters long (at most {MAX_QUESTION_CHARS:,})")
    text = " ".join(text.split()) if "\n" not in text else text.strip()
    if not text:
        raise ValueError("the question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise TooLong(f"the question is {len(text):,} characters long (at most {MAX_QUESTION_CHARS:,})")
    return text


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# -- reading the journal --------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One line of the journal: a record added (or replacing the one of its key), or taken away."""

    record: LearnedQuestion
    removed: bool = False


def parse_line(line: bytes) -> Change | dict | None:
    """A journal line: a Change, the header of a compacted file (a dict), or None for a blank
    line. ValueError (TooLong) says what is wrong with anything else."""
    if not line.strip():
        return None
    row = json_of(line)
    if isinstance(row, dict) and HEADER_KEY in row:
        return row
    removed = isinstance(row, dict) and row.get("removed") is True
    return Change(LearnedQuestion.from_dict(row, removal=removed), removed)


def json_of(line: bytes):
    """The JSON value of one line; ValueError says why there is none."""
    try:
        return json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def complete_lines(f, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[bytes | None, int]]:
    """(line, offset after it) for each whole line from `f`'s position (a binary file); a line
    over `limit` bytes comes as None. A last line without its newline (being written, or cut by a
    crash) is left unread: `f` is put back at its start."""
    while True:
        start = f.tell()
        line = f.readline(limit + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line, f.tell()
            continue
        if len(line) <= limit:
            f.seek(start)
            return
        while True:  # too long: skip it without holding it
            more = f.readline(1 << 20)
            if not more:
                f.seek(start)
                return
            if more.endswith(b"\n"):
                break
        yield None, f.tell()


@dataclass
class Delta:
    """What a BankFollower found since its last poll: `changes` in file order; `reset`: they are
    the whole bank (start again from nothing)."""

    changes: list[Change] = field(default_factory=list)
    reset: bool = False

    def __bool__(self) -> bool:
        return self.reset or bool(self.changes)


class BankFollower:
    """Follows a bank file change by change: each `poll()` costs one stat when nothing changed and
    reads only the lines written since the last one. A compaction is followed without reading the
    compacted records again (the header names what it replaced); any other replacement, or a file
    cut shorter, is read whole (Delta.reset)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._file = None
        self._ident: tuple[int, int] | None = None  # (st_dev, st_ino) of the open file
        self._generation: str | None = None
        self._offset = 0
        self._line = 0  # lines read in the open file, for problem messages
        self.lines = 0  # change lines in the open file (live or superseded), for compaction
        self.problems: list[str] = []  # lines of the open file that are not changes

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._ident = None, None

    def poll(self) -> Delta:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            had = self._file is not None
            self.close()
            self._generation, self._offset, self._line, self.lines, self.problems = None, 0, 0, 0, []
            return Delta([], reset=had)
        except OSError as exc:
            raise UserBankError(f"cannot read your question bank {self.path} ({exc.strerror or exc}).") from exc
        if self._file is not None and (st.st_dev, st.st_ino) == self._ident:
            if st.st_size == self._offset:
                return Delta()
            if st.st_size > self._offset:
                return Delta(self._read_on())
            return self._reopen(continuing=False)  # cut shorter: start again
        return self._reopen(continuing=self._file is not None)

    def position(self) -> dict | None:
        """Where this follower stands in the file it has open (None when it has none), for `resume`."""
        if self._file is None:
            return None
        return {"ident": list(self._ident), "generation": self._generation, "offset": self._offset,
                "line": self._line, "lines": self.lines}

    def resume(self, position: dict, check) -> bool:
        """Continue from a `position` saved by another process (a learned bank's snapshot), when the
        file is still the one it was saved in: the same device and inode, at least that long, and
        `check(file)` equal to position["hash"]. False (and nothing changed) otherwise."""
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - kept open to read what is appended, as _reopen does
        except OSError:
            return False
        st = os.fstat(f.fileno())
        offset = position.get("offset")
        if ([st.st_dev, st.st_ino] != list(position.get("ident") or ()) or not isinstance(offset, int)
                or st.st_size < offset or check(f) != position.get("hash")):
            f.close()
            return False
        self.close()
        f.seek(offset)
        self._file, self._ident = f, (st.st_dev, st.st_ino)
        self._generation, self._offset = position.get("generation"), offset
        self._line, self.lines, self.problems = int(position.get("line", 0)), int(position.get("lines", 0)), []
        return True

    def _reopen(self, continuing: bool) -> Delta:
        tail = self._read_on() if continuing else []  # what the old file got before it was replaced
        old = (self._generation, self._offset)
        self.close()
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - kept open to read what is appended
        except FileNotFoundError:
            self._generation, self._offset, self._line, self.lines, self.problems = None, 0, 0, 0, []
            return Delta([], reset=True)
        except OSError as exc:
            raise UserBankError(f"cannot read your question bank {self.path} ({exc.strerror or exc}).") from exc
        st = os.fstat(f.fileno())
        self._file, self._ident = f, (st.st_dev, st.st_ino)
        self._generation, self._offset, self._line, self.lines, self.problems = f"{st.st_dev}:{st.st_ino}", 0, 0, 0, []
        header = self._header()
        if header is not None:
            self._generation = str(header.get("generation") or self._generation)
            since = header.get("compacted_from") or {}
            body = header.get("body_bytes")
            if continuing and [since.get("generation"), since.get("bytes")] == list(old) and isinstance(body, int):
                self._offset = f.tell() + body  # the records compacted are the ones already read
                self.lines = int(header.get("records") or 0)
                self._line = 1 + self.lines
                f.seek(self._offset)
                return Delta(tail + self._read_on())
        return Delta(self._read_on(), reset=True)

    def _header(self) -> dict | None:
        """The first line, when it is a compacted file's header (the file is left after it)."""
        f = self._file
        line = f.readline(MAX_LINE_BYTES + 1)
        try:
            parsed = parse_line(line) if line.endswith(b"\n") else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            self._offset, self._line = f.tell(), 1
            return parsed
        f.seek(0)
        return None

    def _read_on(self) -> list[Change]:
        f = self._file
        f.seek(self._offset)
        changes = []
        for line, end in complete_lines(f):
            self._line += 1
            self._offset = end
            if line is None:
                self._problem(f"longer than {MAX_LINE_BYTES:,} bytes")
                continue
            try:
                parsed = parse_line(line)
            except ValueError as exc:
                self._problem(str(exc))
                continue
            if isinstance(parsed, Change):
                changes.append(parsed)
                self.lines += 1
        return changes

    def _problem(self, what: str) -> None:
        if len(self.problems) < 1_000:
            self.problems.append(f"{self.path}:{self._line}: {what}; skipped")


def replay(changes: Iterable[Change], held: dict | None = None) -> dict:
    """{key: record} after `changes`, oldest first (a replaced record moves to the end)."""
    held = {} if held is None else held
    for change in changes:
        key = change.record.key
        held.pop(key, None)
        if not change.removed:
            held[key] = change.record
    return held


# -- the bank -------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What `questions import` did: added, changed (a newer vote), unchanged (already held), evicted
    (older imported records given way), and skipped lines by why."""

    added: int = 0
    changed: int = 0
    unchanged: int = 0
    evicted: int = 0
    over_cap: int = 0
    too_long: int = 0
    malformed: int = 0
    first_problems: list[str] = field(default_factory=list)  # a few of the skipped lines, named

    @property
    def skipped(self) -> int:
        return self.over_cap + self.too_long + self.malformed

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in ("added", "changed", "unchanged", "evicted", "over_cap",
                                                       "too_long", "malformed")}

    def summary(self) -> str:
        line = (f"{self.added:,} added, {self.changed:,} changed (a newer vote), {self.unchanged:,} already held; "
                f"{self.skipped:,} skipped")
        why = [f"{n:,} {what}" for n, what in ((self.over_cap, f"over the cap of {MAX_RECORDS:,} records"),
                                               (self.too_long, "too long"), (self.malformed, "malformed")) if n]
        line += f" ({', '.join(why)})" if why else ""
        line += f"; {self.evicted:,} older imported question{'s' if self.evicted != 1 else ''} evicted to make room"
        return line


class UserBank:
    """The learned questions in one journal file (created 0600 on first write).

    Writers append under a lock file, so a reader (a web server's next search) never sees half a
    record and two writers (a CLI beside a server) do not lose each other's records; a compaction
    writes a temporary file and renames it over the old. The records are kept in memory and
    brought up to date from the file before each use (BankFollower), so a long-lived bank reads
    only what others appended.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()
        self._follower = BankFollower(self.path)
        self._held: dict = {}
        self._thread_lock = threading.RLock()

    @property
    def cache_dir(self) -> Path:
        return self.path.with_name(self.path.name + CACHE_SUFFIX)

    def signature(self) -> tuple[int, int] | None:
        """(mtime_ns, size) of the file, None when there is none: a cheap "has it changed?"."""
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def follower(self) -> BankFollower:
        """A follower of this bank's file, for a search that keeps its own structures (learned.py)."""
        return BankFollower(self.path)

    def _refresh(self) -> dict:
        with self._thread_lock:
            delta = self._follower.poll()
            if delta.reset:
                self._held = {}
            if delta.changes:
                replay(delta.changes, self._held)
            return self._held

    def records(self) -> list[LearnedQuestion]:
        """Every record, oldest first. A damaged line is skipped (the rest is still used)."""
        with self._thread_lock:
            return list(self._refresh().values())

    def problems(self) -> list[str]:
        """Lines of the file that are not records (shown by `rlhelper questions list`)."""
        with self._thread_lock:
            self._refresh()
            return list(self._follower.problems)

    # -- changing it --------------------------------------------------------------------

    def add(self, text: str, entry: dict, vote: int, source: str, *, keep: Iterable[str] = ()) -> LearnedQuestion:
        """Record that `entry` ({entry_id, collection, doc, heading}) does (+1) or does not (-1)
        answer `text`; replaces an earlier vote on the same pair, unless that one's source is in
        `keep` (a visitor's vote never replaces the operator's record): then returns the held one. On
        a full bank the oldest imported record (else the oldest) gives way."""
        try:
            record = LearnedQuestion.from_dict({**entry, "text": text, "vote": vote, "time": _now()}, source=source)
        except ValueError as exc:
            raise UserBankError(f"cannot learn this question: {exc}.") from exc
        with self._locked():
            held = self._refresh()
            existing = held.get(record.key)
            if existing is not None and existing.source in set(keep):
                return existing
            lines = []
            if record.key not in held and len(held) >= MAX_RECORDS:
                evicted = next((r for r in held.values() if r.source == "import"), None) or next(iter(held.values()))
                log.warning("the question bank holds %s records: %r (%s) gives way", f"{MAX_RECORDS:,}",
                            evicted.text[:60], evicted.source)
                lines.append(evicted.removal())
            self._append([*lines, record.to_dict()])
        return record

    def remove(self, ids: Iterable[str] = (), entry: str | None = None) -> list[LearnedQuestion]:
        """Remove records by id (a unique prefix of at least 4 characters will do) and/or every
        record of an entry (its entry id, or collection/doc#heading); returns what was removed."""
        ids = [i.strip() for i in ids if i.strip()]
        with self._locked():
            records = list(self._refresh().values())
            gone = set()
            for wanted in ids:
                found = [r for r in records if r.id.startswith(wanted)] if len(wanted) >= 4 else []
                if len(found) != 1:
                    raise UserBankError(f"no learned question has the id {wanted!r}" if not found else
                                        f"the id {wanted!r} names {len(found)} questions: give more characters")
                gone.add(found[0].key)
            if entry is not None:
                matching = {r.key for r in records if entry in (r.entry_id, f"{r.collection}/{r.doc}#{r.heading}")}
                if not matching:
                    raise UserBankError(f"no learned question is for the entry {entry!r} (see `rlhelper questions "
                                        "list` for entry ids)")
                gone |= matching
            removed = [r for r in records if r.key in gone]
            if removed:
                self._append([r.removal() for r in removed])
        return removed

    def forget(self, text: str, entry: dict, *, source: str | None = None, vote: int | None = None) -> bool:
        """Remove the record of this (question, entry), if any (a vote taken back); with `source`
        and `vote`, only a record of that source and vote (a visitor's, not the operator's)."""
        key = (normalize(text), entry.get("collection"), entry.get("doc"), entry.get("heading"))
        with self._locked():
            held = self._refresh().get(key)
            if held is None or (source is not None and held.source != source) or (vote is not None and held.vote != vote):
                return False
            self._append([held.removal()])
        return True

    def export(self, target: str | Path) -> int:
        """Write every record as JSON Lines to `target` (a path, or "-" for stdout); returns how many."""
        records = self.records()
        lines = (json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in records)
        if str(target) == "-":
            import sys

            sys.stdout.writelines(lines)
        else:
            try:
                with open(target, "w", encoding="utf-8") as out:
                    out.writelines(lines)
            except OSError as exc:
                raise UserBankError(f"cannot write {target} ({exc.strerror or exc}).") from exc
        return len(records)

    def import_file(self, source: str | Path) -> ImportReport:
        """Merge a file written by `export` (or by hand: one JSON object a line with text, collection,
        doc, heading and vote), read line by line. A pair already held with the same vote is left as
        it is, so importing a file twice changes nothing; a different vote is taken when it is newer.
        New records fill the room under MAX_RECORDS, then take the place of records imported before
        (oldest first), never of the user's own; the rest is skipped. A line that is not a record,
        or too long, is skipped and counted."""
        try:
            f = open(source, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError as exc:
            raise UserBankError(f"{source}: no such file to import.") from exc
        except OSError as exc:
            raise UserBankError(f"cannot read {source} ({exc.strerror or exc}).") from exc
        report = ImportReport()
        with f, self._locked():
            held = self._refresh()
            evictable = deque(key for key, r in held.items() if r.source == "import")
            mine: set = set()  # keys this import added or changed: never evicted by it
            pending: list[dict] = []
            number = 0
            for number, (line, _) in enumerate(complete_lines(f), start=1):
                record = self._import_line(line, f"{source}:{number}", report)
                if record is not None:
                    pending += self._merge(record, held, evictable, mine, report)
                if len(pending) >= 1_000:
                    self._append(pending, compact=False)
                    pending = []
            tail = f.read(MAX_LINE_BYTES + 1)
            if tail.strip():  # a last line without its newline
                record = self._import_line(tail if len(tail) <= MAX_LINE_BYTES else None, f"{source}:{number + 1}",
                                           report)
                if record is not None:
                    pending += self._merge(record, held, evictable, mine, report)
            self._append(pending)
        return report

    def _import_line(self, line: bytes | None, where: str, report: ImportReport) -> LearnedQuestion | None:
        """The record of one line of an import (its own `source` is not kept: it is "import"), or
        None: a blank line, a bank file's header, or a line skipped and counted in `report`."""
        if line is None:
            self._skipped(report, "too_long", f"{where}: longer than {MAX_LINE_BYTES:,} bytes")
            return None
        if not line.strip():
            return None
        try:
            row = json_of(line)
            if isinstance(row, dict) and HEADER_KEY in row:
                return None
            if isinstance(row, dict) and "removed" in row:
                raise ValueError("a removal, not a learned question")
            return LearnedQuestion.from_dict(row, source="import")
        except TooLong as exc:
            self._skipped(report, "too_long", f"{where}: {exc}")
        except ValueError as exc:
            self._skipped(report, "malformed", f"{where}: {exc}")
        return None

    def _merge(self, record: LearnedQuestion, held: dict, evictable: deque, mine: set,
               report: ImportReport) -> list[dict]:
        """The journal lines that take `record` in (an import), counting what happened in `report`.
        `held` is brought up to date here, so the next record of the same import sees this one."""
        old = held.get(record.key)
        if old is not None:
            if old.vote == record.vote or old.time >= record.time:
                report.unchanged += 1
                return []
            report.changed += 1
            del held[record.key]
            held[record.key] = record
            mine.add(record.key)
            return [record.to_dict()]
        lines = []
        if len(held) >= MAX_RECORDS:
            while evictable:
                key = evictable.popleft()
                victim = held.get(key)
                if victim is not None and victim.source == "import" and key not in mine:
                    break
            else:
                self._skipped(report, "over_cap", None)
                return []
            del held[key]
            lines.append(victim.removal())
            report.evicted += 1
        held[record.key] = record
        mine.add(record.key)
        report.added += 1
        return [*lines, record.to_dict()]

    @staticmethod
    def _skipped(report: ImportReport, why: str, where: str | None) -> None:
        setattr(report, why, getattr(report, why) + 1)
        if where and len(report.first_problems) < 5:
            report.first_problems.append(where)

    # -- the file -------------------------------------------------------------------------

    def _append(self, rows: list[dict], compact: bool = True) -> None:
        """Append `rows` as journal lines (under the lock), then read them back into memory, and
        compact the file when superseded lines outnumber the records."""
        if rows:
            text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows)
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with open(fd, "ab") as out:
                    if os.fstat(fd).st_size and not self._ends_with_newline():
                        out.write(b"\n")  # a line cut by a crash stays one (skipped) line
                    out.write(text.encode("utf-8"))
                    out.flush()
                    os.fsync(out.fileno())
            except OSError as exc:
                raise UserBankError(f"cannot write your question bank {self.path} ({exc.strerror or exc}).") from exc
            self._refresh()
        dead = self._follower.lines - len(self._held)
        if compact and dead > max(COMPACT_MIN_DEAD, len(self._held)):
            self._compact()

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def _compact(self) -> None:
        """Write the live records anew, led by a header naming the file and length they replace."""
        follower = self._follower
        old = {"generation": follower._generation, "bytes": follower._offset}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        width = 300
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "wb") as out:
                out.write(b" " * (width - 1) + b"\n")  # the header's place, written once the body's size is known
                for record in self._held.values():
                    out.write((json.dumps(record.to_dict(), ensure_ascii=False, separators=(",", ":"))
                               + "\n").encode("utf-8"))
                body = out.tell() - width
                fields = {HEADER_KEY: FORMAT, "generation": secrets.token_hex(8), "compacted_from": old,
                          "body_bytes": body, "records": len(self._held)}
                header = json.dumps(fields).encode()
                if len(header) >= width:  # a hand-made generation too long to name: followers read it whole
                    header = json.dumps({**fields, "compacted_from": None}).encode()
                out.seek(0)
                out.write(header + b" " * (width - 1 - len(header)))
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            with suppress(OSError):
                tmp.unlink()
            log.warning("the question bank %s was not compacted (%s)", self.path, exc.strerror or exc)
            return
        self._refresh()

    @contextmanager
    def _locked(self):
        with self._thread_lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path.with_name(f".{self.path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise UserBankError(f"cannot write your question bank in {self.path.parent} "
                                    f"({exc.strerror or exc}).") from exc
            try:
                try:
                    import fcntl

                    fcntl.flock(fd, fcntl.LOCK_EX)
                except ImportError:  # no flock (Windows): one writer at a time is the user's to keep
                    pass
                yield
            finally:
                os.close(fd)  # closing releases the lock


# -- the last answer, for `rlhelper feedback accept` -----------------------------------------


def last_answer_path() -> Path:
    return config.data_dir() / LAST_ANSWER_FILE


def entry_key(entry) -> dict:
    """The fields a record keys an entry by (an Entry or a hit's dict)."""
    get = entry.get if isinstance(entry, dict) else lambda name: getattr(entry, name)
    return {"entry_id": get("id") if not isinstance(entry, dict) else entry.get("entry_id") or entry.get("id"),
            "collection": get("collection"), "doc": get("doc"), "heading": get("heading")}


def remember_answer(answer, index: str | Path, path: Path | None = None) -> None:
    """Keep what `answer` searched and the entries it found (0600), for `rlhelper feedback accept`.
    Best effort: a read-only home must not break `rlhelper ask`."""
    path = path or last_answer_path()
    record = {"question": answer.normalized_query, "abstained": answer.abstained, "index": str(index),
              "time": _now(), "hits": [entry_key(hit.entry) for hit in answer.hits]}
    if answer.citations and not answer.abstained:
        lead = answer.citations[0].entry_id
        record["hits"].sort(key=lambda hit: hit["entry_id"] != lead)  # the cited lead first
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8") as out:
            json.dump(record, out, ensure_ascii=False)
        os.replace(tmp, path)
    except OSError:
        pass


def last_answer(path: Path | None = None) -> dict:
    """What the last `rlhelper ask` remembered; UserBankError when there is nothing to vote on."""
    path = path or last_answer_path()
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        record["question"], record["hits"]  # noqa: B018 - both must be there
    except FileNotFoundError as exc:
        raise UserBankError("there is no answer to accept yet: run `rlhelper ask \"...\"` first.") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserBankError(f"the last answer kept in {path} cannot be read ({exc}); run `rlhelper ask` "
                            "again.") from exc
    return record
