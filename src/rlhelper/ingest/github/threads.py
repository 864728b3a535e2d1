"""Fetched threads, stored locally as the raw source of ingest.

    <data_dir>/github/<owner>__<repo>/issues.jsonl   one thread a line; a later line of the
                                                      same number replaces an earlier one
    <data_dir>/github/<owner>__<repo>/state.json     where the next sync starts (see fetch.py)
    <data_dir>/github/<owner>__<repo>/analysis.json  what ingest found in each thread (entries.analyse):
                                                      read back while issues.jsonl is unchanged

Both files are created 0600 (threads may come from a private repository). Appending
keeps a sync that stops half-way (rate limit, ^C) from losing what it fetched; the
file is compacted to one line per thread when a sync ends.

A thread record, whatever it was read from (API or export):

    {"repo", "number", "title", "body", "url", "state", "state_reason", "labels": [str],
     "created_at", "updated_at", "closed_at", "author", "author_association",
     "comments": [{"id", "url", "author", "association", "created_at", "body"}],
     "closed_by": {"ref": "#540" | "<sha>", "url"} | None}
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ... import config
from ...errors import GitHubError

FOLDER = "github"
ISSUES_FILE = "issues.jsonl"
STATE_FILE = "state.json"
MAX_TEXT = 65_536  # characters kept of a body or a comment
MAX_COMMENTS = 300  # comments kept of one thread
_REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")


def check_repo(repo: str) -> str:
    """OWNER/REPO as GitHub spells it, or a GitHubError saying what is wrong."""
    repo = (repo or "").strip()
    if not _REPO.match(repo) or any(part in (".", "..") for part in repo.split("/")):
        raise GitHubError(f"{repo!r} is not a repository name: give it as OWNER/REPO, e.g. verl-project/verl")
    return repo


def clip(text, limit: int = MAX_TEXT) -> str:
    text = text if isinstance(text, str) else ""
    return text[:limit]


_NUMBER = re.compile(rb'"number":\s*(\d{1,12})[,}]')


def _number_of(line: bytes) -> int | None:
    """A stored line's issue number, without parsing the line: lines are written with sorted keys,
    so the top-level "number" follows the comments (whose keys hold none)."""
    found = None
    for m in _NUMBER.finditer(line):
        found = m
    if found is None:
        return None
    record = None if b'"comments"' in line[found.start():] else found
    if record is None:  # unusual order (a hand-edited line): parse it
        parsed = _record(line)
        return int(parsed["number"]) if parsed is not None else None
    return int(found.group(1))


def _record(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
        int(record["number"])
        return record
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


class ThreadStore:
    """The stored threads of one repository."""

    def __init__(self, repo: str, root: Path | None = None):
        self.repo = check_repo(repo)
        owner, name = self.repo.split("/")
        self.folder = Path(root or config.data_dir() / FOLDER) / f"{owner}__{name}"
        self.issues_file = self.folder / ISSUES_FILE
        self.state_file = self.folder / STATE_FILE

    def load(self) -> dict[int, dict]:
        """Number -> thread, the last stored version of each; a damaged line is skipped.
        Holds every thread in memory: ingest streams them instead (offsets, read_at)."""
        return {number: thread for number, thread in self.threads()}

    def offsets(self) -> dict[int, int]:
        """Number -> byte offset of its last stored line: one pass that keeps no thread."""
        found: dict[int, int] = {}
        try:
            with self.issues_file.open("rb") as f:
                at = 0
                for line in f:
                    number = _number_of(line)
                    if number is not None:
                        found[number] = at
                    at += len(line)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise GitHubError(f"cannot read {self.issues_file}: {exc.strerror or exc}") from None
        return found

    def read_at(self, offset: int) -> dict | None:
        """The thread stored at `offset` (from offsets()), or None when its line is damaged."""
        try:
            with self.issues_file.open("rb") as f:
                f.seek(offset)
                return _record(f.readline())
        except OSError as exc:
            raise GitHubError(f"cannot read {self.issues_file}: {exc.strerror or exc}") from None

    def threads(self, offsets: dict[int, int] | None = None):
        """(number, thread) of each stored thread, in number order, one at a time (`offsets`: from
        offsets(), when the caller has them)."""
        offsets = self.offsets() if offsets is None else offsets
        if not offsets:
            return
        try:
            with self.issues_file.open("rb") as f:
                for number in sorted(offsets):
                    f.seek(offsets[number])
                    record = _record(f.readline())
                    if record is not None:
                        yield number, record
        except OSError as exc:
            raise GitHubError(f"cannot read {self.issues_file}: {exc.strerror or exc}") from None

    def count(self) -> int:
        return len(self.offsets())

    def append(self, threads: list[dict]) -> None:
        if not threads:
            return
        self._make_folder()
        fd = os.open(self.issues_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(t, ensure_ascii=False, sort_keys=True) + "\n" for t in threads)
            f.flush()
            os.fsync(f.fileno())

    def compact(self) -> int:
        """One line per thread, in number order; returns how many threads are stored. Streams: the
        lines are copied as they are, one at a time, never all held."""
        offsets = self.offsets()
        if not offsets:
            return 0
        ordered = sorted(offsets)
        positions = [offsets[n] for n in ordered]
        if positions == sorted(positions) and len(positions) == self._lines():
            return len(ordered)  # already one line per thread, in order
        tmp = self.issues_file.with_name(f".{self.issues_file.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        kept = 0
        with os.fdopen(fd, "wb") as out, self.issues_file.open("rb") as f:
            for at in positions:
                f.seek(at)
                line = f.readline()
                if _record(line) is not None:
                    out.write(line if line.endswith(b"\n") else line + b"\n")
                    kept += 1
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.issues_file)
        return kept

    def _lines(self) -> int:
        with self.issues_file.open("rb") as f:
            return sum(1 for _ in f)

    def state(self) -> dict:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def save_state(self, state: dict) -> None:
        self._make_folder()
        self._write_atomic(self.state_file, json.dumps(state, indent=2, sort_keys=True) + "\n")

    def write_private(self, name: str, text: str) -> None:
        """A file of the store's folder (a cache beside the threads), 0600, written whole."""
        self._make_folder()
        self._write_atomic(self.folder / name, text)

    def _make_folder(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _write_atomic(self, file: Path, text: str) -> None:
        tmp = file.with_name(f".{file.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, file)
