"""The last answer `rlhelper ask` gave, kept so `rlhelper feedback accept` can vote on it.

    <data_dir>/last_answer.json     {"question", "abstained", "index", "time", "hits": [entry keys]}, 0600

Best effort on writing (a read-only home must not break `rlhelper ask`); reading it says what to
run when there is nothing to vote on.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import config
from ..errors import UserBankError
from .bankrecord import now

LAST_ANSWER_FILE = "last_answer.json"


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
              "time": now(), "hits": [entry_key(hit.entry) for hit in answer.hits]}
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
