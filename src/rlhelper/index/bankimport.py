"""`rlhelper questions import`: merging a file of learned questions into the user's bank.

The file is one JSON object a line (what `questions export` writes, or a teammate's by hand), read
line by line under the bank's lock. A pair already held with the same vote is left as it is, so
importing a file twice changes nothing; a different vote is taken when it is newer. New records
fill the room under MAX_RECORDS, then take the place of records imported before (oldest first),
never of the user's own; the rest is skipped and counted, as is every line that is not a record.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserBankError
from . import userbank  # its MAX_RECORDS read at each use: the bank's cap, wherever it is set
from .bankrecord import LearnedQuestion, TooLong
from .userbank import HEADER_KEY, MAX_LINE_BYTES, UserBank, complete_lines, json_of


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
        why = [f"{n:,} {what}" for n, what in ((self.over_cap, f"over the cap of {userbank.MAX_RECORDS:,} records"),
                                               (self.too_long, "too long"), (self.malformed, "malformed")) if n]
        line += f" ({', '.join(why)})" if why else ""
        line += f"; {self.evicted:,} older imported question{'s' if self.evicted != 1 else ''} evicted to make room"
        return line


def import_file(bank: UserBank, source: str | Path) -> ImportReport:
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
    with f, bank.changing() as (held, append):
        evictable = deque(key for key, r in held.items() if r.source == "import")
        mine: set = set()  # keys this import added or changed: never evicted by it
        pending: list[dict] = []
        number = 0
        for number, (line, _) in enumerate(complete_lines(f), start=1):
            record = _import_line(line, f"{source}:{number}", report)
            if record is not None:
                pending += _merge(record, held, evictable, mine, report)
            if len(pending) >= 1_000:
                append(pending, compact=False)
                pending = []
        tail = f.read(MAX_LINE_BYTES + 1)
        if tail.strip():  # a last line without its newline
            record = _import_line(tail if len(tail) <= MAX_LINE_BYTES else None, f"{source}:{number + 1}",
                                  report)
            if record is not None:
                pending += _merge(record, held, evictable, mine, report)
        append(pending)
    return report


def _import_line(line: bytes | None, where: str, report: ImportReport) -> LearnedQuestion | None:
    """The record of one line of an import (its own `source` is not kept: it is "import"), or
    None: a blank line, a bank file's header, or a line skipped and counted in `report`."""
    if line is None:
        _skipped(report, "too_long", f"{where}: longer than {MAX_LINE_BYTES:,} bytes")
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
        _skipped(report, "too_long", f"{where}: {exc}")
    except ValueError as exc:
        _skipped(report, "malformed", f"{where}: {exc}")
    return None


def _merge(record: LearnedQuestion, held: dict, evictable: deque, mine: set,
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
    if len(held) >= userbank.MAX_RECORDS:
        while evictable:
            key = evictable.popleft()
            victim = held.get(key)
            if victim is not None and victim.source == "import" and key not in mine:
                break
        else:
            _skipped(report, "over_cap", None)
            return []
        del held[key]
        lines.append(victim.removal())
        report.evicted += 1
    held[record.key] = record
    mine.add(record.key)
    report.added += 1
    return [*lines, record.to_dict()]


def _skipped(report: ImportReport, why: str, where: str | None) -> None:
    setattr(report, why, getattr(report, why) + 1)
    if where and len(report.first_problems) < 5:
        report.first_problems.append(where)
