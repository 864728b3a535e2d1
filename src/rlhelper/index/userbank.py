"""The user's own question bank: questions learned from accepted and rejected answers.

The shipped bank (ingest/questions, questions.py) is written by the project; this one grows from
what a user says about answers. A thumbs-up in the web chat, `rlhelper feedback accept` or
`/accept` in `rlhelper chat` adds the asked question for the answer's lead entry (+1); a
thumbs-down records that the entry does not answer it (-1). It is a local file beside the
feedback store, never the shipped bank:

    <data_dir>/questions.jsonl           one record a line, created 0600
    {"id": "3f9c0a1b2d", "text": "rewards are stuck at zero", "entry_id": "seeds/...#...",
     "collection": "seeds", "doc": "...", "heading": "...", "vote": 1,
     "time": "2026-11-25T11:40:00+00:00", "source": "web"}

A record is keyed like the shipped bank (collection, doc, heading), so it survives re-ingest; the
entry id is kept as a fallback and for display. There is one record per (normalized question,
entry): voting again replaces it, and importing a file twice changes nothing. `id` is a hash of
that key, the same on every machine, so a team sharing exports names records alike.

Searching with it (retrieve.py) embeds the questions once and caches their vectors by text and
embedder in `questions.vectors.npz` beside the file. Standard library only: `rlhelper questions
list` reads it without numpy.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Iterable
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from .. import config
from ..errors import UserBankError

FILE_NAME = "questions.jsonl"
VECTORS_SUFFIX = ".vectors.npz"
LAST_ANSWER_FILE = "last_answer.json"
SOURCES = ("web", "cli", "chat", "import", "review")  # review: a visitor's suggestion the operator approved
MAX_QUESTION_CHARS = 2_000  # as the shipped bank: a longer text is a log, not a question
MAX_RECORDS = 100_000


def default_path() -> Path:
    return config.data_dir() / FILE_NAME


def normalize(text: str) -> str:
    """The form two questions are compared in: Unicode-folded, case-folded, spaces collapsed,
    trailing punctuation dropped ("Rewards stuck at 0?" == "rewards stuck at 0")."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    return re.sub(r"[\s?？!！.。,，;；:：]+$", "", " ".join(text.split()))


def record_id(text: str, collection: str, doc: str, heading: str) -> str:
    key = json.dumps([normalize(text), collection, doc, heading], ensure_ascii=False)
    return hashlib.sha256(key.encode()).hexdigest()[:10]


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

    @property
    def id(self) -> str:
        return record_id(self.text, self.collection, self.doc, self.heading)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return normalize(self.text), self.collection, self.doc, self.heading

    def to_dict(self) -> dict:
        return {"id": self.id, **asdict(self)}

    @classmethod
    def from_dict(cls, row: dict, *, source: str | None = None) -> LearnedQuestion:
        """A record from a JSON object; ValueError says what is wrong with it."""
        if not isinstance(row, dict):
            raise ValueError("not a JSON object")
        missing = [name for name in ("text", "collection", "doc", "heading", "vote") if name not in row]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        text = _clean_text(row["text"])
        vote = row["vote"]
        if vote not in (1, -1) or isinstance(vote, bool):
            raise ValueError(f"vote must be 1 or -1, not {vote!r}")
        where = [row["collection"], row["doc"], row["heading"]]
        if not all(isinstance(v, str) and v for v in where[:2]) or not isinstance(where[2], str):
            raise ValueError("collection, doc and heading must be text")
        origin = source or str(row.get("source") or "import")
        if origin not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {origin!r}")
        return cls(text, str(row.get("entry_id") or ""), *where, vote, str(row.get("time") or _now()), origin)


def _clean_text(text) -> str:
    if not isinstance(text, str):
        raise ValueError("text must be a string")
    text = " ".join(text.split()) if "\n" not in text else text.strip()
    if not text:
        raise ValueError("the question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise ValueError(f"the question is {len(text):,} characters long (at most {MAX_QUESTION_CHARS:,})")
    return text


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class UserBank:
    """The learned questions in one JSON Lines file (created 0600 on first write).

    Every change rewrites the small file to a temporary one and renames it over the old, under
    a lock file, so a reader (a web server's next search) never sees half a file and two
    writers (a CLI beside a server) do not lose each other's records.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()

    @property
    def vectors_path(self) -> Path:
        return self.path.with_name(self.path.name + VECTORS_SUFFIX)

    def signature(self) -> tuple[int, int] | None:
        """(mtime_ns, size) of the file, None when there is none: a cheap "has it changed?"."""
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def records(self) -> list[LearnedQuestion]:
        """Every record, oldest first. A damaged line is skipped (the rest is still used)."""
        return self._read()[0]

    def problems(self) -> list[str]:
        """Lines of the file that are not records (shown by `rlhelper questions list`)."""
        return self._read()[1]

    def _read(self) -> tuple[list[LearnedQuestion], list[str]]:
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return [], []
        except OSError as exc:
            raise UserBankError(f"cannot read your question bank {self.path} ({exc.strerror or exc}).") from exc
        kept, problems = {}, []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = LearnedQuestion.from_dict(json.loads(line))
            except ValueError as exc:
                problems.append(f"{self.path}:{number}: {exc}; skipped")
                continue
            kept.pop(record.key, None)
            kept[record.key] = record  # a later line for the same pair wins
        return list(kept.values()), problems

    # -- changing it --------------------------------------------------------------------

    def add(self, text: str, entry: dict, vote: int, source: str, *, keep: Iterable[str] = ()) -> LearnedQuestion:
        """Record that `entry` ({entry_id, collection, doc, heading}) does (+1) or does not (-1)
        answer `text`; replaces an earlier vote on the same pair, unless that one's source is in
        `keep` (a visitor's vote never replaces the operator's record): then returns the held one."""
        try:
            record = LearnedQuestion.from_dict({**entry, "text": text, "vote": vote, "time": _now()}, source=source)
        except ValueError as exc:
            raise UserBankError(f"cannot learn this question: {exc}.") from exc
        with self._locked():
            records = {r.key: r for r in self.records()}
            held = records.get(record.key)
            if held is not None and held.source in set(keep):
                return held
            records.pop(record.key, None)
            records[record.key] = record
            self._write(records.values())
        return record

    def remove(self, ids: Iterable[str] = (), entry: str | None = None) -> list[LearnedQuestion]:
        """Remove records by id (a unique prefix of at least 4 characters will do) and/or every
        record of an entry (its entry id, or collection/doc#heading); returns what was removed."""
        ids = [i.strip() for i in ids if i.strip()]
        with self._locked():
            records = self.records()
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
                self._write(r for r in records if r.key not in gone)
        return removed

    def forget(self, text: str, entry: dict, *, source: str | None = None, vote: int | None = None) -> bool:
        """Remove the record of this (question, entry), if any (a vote taken back); with `source`
        and `vote`, only a record of that source and vote (a visitor's, not the operator's)."""
        key = (normalize(text), entry.get("collection"), entry.get("doc"), entry.get("heading"))
        with self._locked():
            records = self.records()
            kept = [r for r in records if r.key != key or (source is not None and r.source != source)
                    or (vote is not None and r.vote != vote)]
            if len(kept) != len(records):
                self._write(kept)
                return True
        return False

    def export(self, target: str | Path) -> int:
        """Write every record as JSON Lines to `target` (a path, or "-" for stdout); returns how many."""
        records = self.records()
        text = "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in records)
        if str(target) == "-":
            import sys

            sys.stdout.write(text)
        else:
            try:
                Path(target).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise UserBankError(f"cannot write {target} ({exc.strerror or exc}).") from exc
        return len(records)

    def import_file(self, source: str | Path) -> dict[str, int]:
        """Merge a file written by `export` (or by hand: one JSON object a line with text, collection,
        doc, heading and vote). A pair already held with the same vote is left as it is, so
        importing a file twice changes nothing; a different vote is taken when it is newer.
        Returns {"added", "changed", "unchanged"}. A bad line fails the whole import, naming it."""
        try:
            lines = Path(source).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError as exc:
            raise UserBankError(f"{source}: no such file to import.") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise UserBankError(f"cannot read {source} ({getattr(exc, 'strerror', None) or exc}).") from exc
        incoming = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                incoming.append(LearnedQuestion.from_dict(json.loads(line), source="import"))
            except ValueError as exc:
                raise UserBankError(f"{source}:{number} is not a learned question ({exc}); nothing was imported. "
                                    "Each line needs text, collection, doc, heading and vote (1 or -1), as "
                                    "`rlhelper questions export` writes them.") from exc
        counts = {"added": 0, "changed": 0, "unchanged": 0}
        with self._locked():
            records = {r.key: r for r in self.records()}
            for record in incoming:
                held = records.get(record.key)
                if held is None:
                    counts["added"] += 1
                elif held.vote == record.vote or held.time >= record.time:
                    counts["unchanged"] += 1
                    continue
                else:
                    counts["changed"] += 1
                    del records[record.key]
                records[record.key] = record
            if counts["added"] or counts["changed"]:
                self._write(records.values())
        return counts

    # -- the file -------------------------------------------------------------------------

    def _write(self, records: Iterable[LearnedQuestion]) -> None:
        records = list(records)[-MAX_RECORDS:]
        text = "".join(json.dumps(r.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            with suppress(OSError):
                tmp.unlink()
            raise UserBankError(f"cannot write your question bank {self.path} ({exc.strerror or exc}).") from exc

    @contextmanager
    def _locked(self):
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
