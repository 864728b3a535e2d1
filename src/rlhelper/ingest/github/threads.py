"""Fetched threads, stored locally as the raw source of ingest.

    <data_dir>/github/<owner>__<repo>/issues.jsonl   one thread a line; a later line of the
                                                      same number replaces an earlier one
    <data_dir>/github/<owner>__<repo>/state.json     where the next sync starts (see fetch.py)

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


class ThreadStore:
    """The stored threads of one repository."""

    def __init__(self, repo: str, root: Path | None = None):
        self.repo = check_repo(repo)
        owner, name = self.repo.split("/")
        self.folder = Path(root or config.data_dir() / FOLDER) / f"{owner}__{name}"
        self.issues_file = self.folder / ISSUES_FILE
        self.state_file = self.folder / STATE_FILE

    def load(self) -> dict[int, dict]:
        """Number -> thread, the last stored version of each; a damaged line is skipped."""
        threads: dict[int, dict] = {}
        try:
            with self.issues_file.open(encoding="utf-8") as f:
                for line in f:
                    try:
                        record = json.loads(line)
                        threads[int(record["number"])] = record
                    except (ValueError, KeyError, TypeError):
                        continue
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise GitHubError(f"cannot read {self.issues_file}: {exc.strerror or exc}") from None
        return threads

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
        """One line per thread, in number order; returns how many threads are stored."""
        threads = self.load()
        if threads:
            self._write_atomic(self.issues_file, "".join(
                json.dumps(threads[n], ensure_ascii=False, sort_keys=True) + "\n" for n in sorted(threads)))
        return len(threads)

    def state(self) -> dict:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def save_state(self, state: dict) -> None:
        self._make_folder()
        self._write_atomic(self.state_file, json.dumps(state, indent=2, sort_keys=True) + "\n")

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
