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

A record (bankrecord.py) is keyed like the shipped bank (collection, doc, heading), so it survives
re-ingest; the entry id is kept as a fallback and for display. There is one record per (normalized
question, entry): a later line for the same pair replaces it.

The file is a journal: every change is appended (a vote writes one line, not the whole bank), so
a search can follow it change by change (BankFollower, learned.py) instead of reading it again.
When superseded lines outnumber the live records it is compacted: written anew with a first line
{"rlhelper_bank": 2, "generation": ..., "compacted_from": {"generation": ..., "bytes": N}, ...}
naming the file and length it replaces, so a follower that had read that far goes on from the
end of the compacted records without reading them.

At most MAX_RECORDS records are kept. A vote on a full bank takes the place of the oldest imported
record (else the oldest record); an import never takes the place of the user's own records: it
may replace older imported ones, and what does not fit is skipped and counted (bankimport.py).

Standard library only: `rlhelper questions list` reads it without numpy.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from .. import config
from ..errors import UserBankError
from .bankrecord import LearnedQuestion, normalize, now

log = logging.getLogger(__name__)

FILE_NAME = "questions.jsonl"
CACHE_SUFFIX = ".learned"  # a folder beside the file: the questions' vectors and tokens (learned_store.py)
MAX_RECORDS = 20_000  # records kept; see the module docstring for who gives way when it is full
MAX_LINE_BYTES = 65_536  # a record at its longest is far below (2,000 characters of text as \u escapes)
COMPACT_MIN_DEAD = 1_000  # superseded lines tolerated before the file is compacted
HEADER_KEY = "rlhelper_bank"
FORMAT = 2


def default_path() -> Path:
    return config.data_dir() / FILE_NAME




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
            record = LearnedQuestion.from_dict({**entry, "text": text, "vote": vote, "time": now()}, source=source)
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

    @contextmanager
    def changing(self):
        """For a change made beside this class (bankimport.py): under the lock, the records held now
        ({key: record}, oldest first) and the function that appends journal lines (`_append`)."""
        with self._locked():
            yield self._refresh(), self._append

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

