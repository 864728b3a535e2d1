"""One learned question: a (question, entry) pair with its vote, as the user's bank keeps it.

The record's key is the normalized question and the entry's (collection, doc, heading), as the
shipped bank keys its questions, so a record survives re-ingest; `id` is a hash of that key, the
same on every machine. `LearnedQuestion.from_dict` is the one gate every record passes (a vote, a
journal line, an imported line, a visitor's vote): it checks every field and its length.

Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cached_property

SOURCES = ("web", "cli", "chat", "import", "review")  # review: a visitor's suggestion the operator approved
MAX_QUESTION_CHARS = 2_000  # as the shipped bank: a longer text is a log, not a question
MAX_NAME_CHARS = 1_000  # a heading, document path, collection or entry id longer than this is not one
MAX_TIME_CHARS = 64

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
                "heading": self.heading, "removed": True, "time": now()}

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
        return cls(text, entry_id, *where, vote, stamp or now(), origin)


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


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
