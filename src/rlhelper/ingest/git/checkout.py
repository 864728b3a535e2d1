"""A git source's checkout in the data folder: the docs' files at one commit, fetched as little as git allows.

    checkout = Checkout(spec)                           # <data_dir>/git/<name>-<hash>/
    with checkout.locked():
        head = checkout.resolve()                       # one round trip: what the ref names upstream now
        commit = checkout.fetch(head, since=recorded)   # commits and trees; the history since `recorded`
        checkout.check_out(commit)                      # only the docs' blobs under the paths

How little: a partial clone (`--filter=blob:none`) brings commits and trees but no file contents; the
sparse checkout (remote.sparse_patterns: the document files under the paths) then asks for the blobs
of those files alone. The first fetch is shallow (`--depth=1`). A later one brings the history since
a day before the recorded commit (`--shallow-since`), commits and trees only, so that the recorded
commit can be looked for in it: when it is not an ancestor of the new one, upstream rewrote its
history (a force-push) and the sync stops there instead of following silently. What the object
store holds afterwards is measured (`store_bytes`), and a server that ignores the filter is named.

The folder is rlhelper's cache: one flock per checkout keeps two processes out of it at once, a git
lock file left by a killed run is removed under that flock, and a checkout that git cannot read is
made again from scratch. The docs are read from the working tree as a local folder is (sources.py:
files only inside the checkout; a link leaving it is skipped and named).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ... import config
from ...errors import GitSourceError
from ...index.lock import flock_within
from .command import GitFailed, folder_bytes, max_bytes_setting, run_git
from .remote import GitSpec, sparse_patterns

FOLDER = "git"
STATE_FILE = "state.json"
REWRITE_MARGIN = 86_400  # seconds of history fetched before the recorded commit's date
LOCK_TIMEOUT = 600.0
NOT_FILTERED = "filtering not recognized by server"


@dataclass
class Head:
    """What the ref names upstream: `remote_id` as ls-remote lists it (a tag's own id for an annotated
    tag), `commit` the commit it points at when known, and the name to fetch."""

    remote_id: str
    fetch_name: str
    commit: str | None = None


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Checkout:
    def __init__(self, spec: GitSpec, root: Path | None = None, *, retry: str = "`rlhelper sync`"):
        self.spec = spec
        self.folder = Path(root or config.data_dir() / FOLDER) / spec.key()
        self.repo = self.folder / "repo"
        self.objects = self.repo / ".git" / "objects"
        self.state_file = self.folder / STATE_FILE
        self.retry = retry  # the command that tries again, for error messages
        self.notes: list[str] = []
        self.fetched_bytes = 0

    # -- the folder ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        """Hold this checkout's flock (released by the kernel if the holder dies)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if not flock_within(fd, timeout):
                raise GitSourceError(f"another rlhelper is fetching {self.spec.url} into {self.folder}; "
                                     f"wait for it, then run {self.retry}")
            self._remove_stale_locks()
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def _remove_stale_locks(self) -> None:
        """git's own lock files left by a run killed midway: under our flock no git runs here."""
        git_dir = self.repo / ".git"
        if not git_dir.is_dir():
            return
        for lock in [*git_dir.glob("*.lock"), *git_dir.glob("objects/info/*.lock"), *git_dir.rglob("refs/**/*.lock")]:
            with contextlib.suppress(OSError):
                lock.unlink()

    def state(self) -> dict:
        return read_json_object(self.state_file)

    def save_state(self, **values) -> None:
        state = {**self.state(), "url": self.spec.url, **values}
        tmp = self.state_file.with_name(f".{STATE_FILE}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(state, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.state_file)

    def _git(self, *args: str, watch: bool = False, stdin: str | None = None):
        return run_git(list(args), cwd=self.repo, stdin=stdin, watch=self.objects if watch else None,
                       max_bytes=max_bytes_setting() if watch else None)

    def _prepare(self) -> None:
        """A repository for this URL with the sparse patterns of these paths, made again when unreadable."""
        usable = (self.repo / ".git").is_dir()
        if usable:
            try:
                url = self._git("config", "--get", "remote.origin.url").stdout.strip()
                usable = url == self.spec.url
            except GitFailed:
                usable = False
        if not usable:
            shutil.rmtree(self.repo, ignore_errors=True)
            self.repo.mkdir(parents=True)
            run_git(["init", "--quiet", "--", str(self.repo)])
            # A value, not an argument: a URL can never be read as an option here.
            self._git("config", "remote.origin.url", self.spec.url)
            self._git("config", "remote.origin.promisor", "true")
            self._git("config", "remote.origin.partialclonefilter", "blob:none")
            self._git("config", "core.symlinks", "true")
            self._git("config", "gc.auto", "0")  # no background repacking while the index reads the files
        self._git("sparse-checkout", "set", "--no-cone", "--stdin", stdin="\n".join(sparse_patterns(self.spec.paths)))

    # -- upstream -----------------------------------------------------------------------------

    def resolve(self) -> Head:
        """What the ref names upstream now (one round trip; none for a commit id)."""
        if self.spec.pinned:
            return Head(self.spec.ref, self.spec.ref, self.spec.ref)
        ref = self.spec.ref
        if ref is None:
            names = ["HEAD"]
        elif ref.startswith("refs/"):
            names = [ref, f"{ref}^{{}}"]
        else:
            names = [f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/tags/{ref}^{{}}"]
        try:
            listed = run_git(["ls-remote", "--", self.spec.url, *names]).stdout
        except GitFailed as exc:
            raise self.failure(exc) from None
        ids = {}
        for line in listed.splitlines():
            oid, _, name = line.partition("\t")
            ids.setdefault(name.strip(), oid.strip())
        for name in names:
            if name.endswith("^{}") or name not in ids:
                continue
            return Head(ids[name], name, ids.get(f"{name}^{{}}") or (ids[name] if not name.startswith("refs/tags/")
                                                                       else None))
        what = f"branch or tag {ref!r}" if ref else "default branch (HEAD)"
        raise GitSourceError(f"{self.spec.url} has no {what}: nothing was fetched and the index was left as it "
                             f"was; give an existing one with --ref (`git ls-remote {self.spec.url}` lists them)")

    def fetch(self, head: Head, since: dict | None = None) -> str:
        """Fetch `head` and return its commit. `since`: the recorded {"commit", "committed_at"}; its
        history is fetched too, and a `head` that does not descend from it raises (a rewritten history)."""
        self._prepare()
        before = folder_bytes(self.objects)
        shallow = ["--depth=1"]
        if since and since.get("commit") and since.get("committed_at") and not self.spec.pinned:
            start = int(_epoch(since["committed_at"])) - REWRITE_MARGIN
            shallow = [f"--shallow-since=@{max(start, 0)}"]
        try:
            ran = self._git("fetch", "--no-tags", "--filter=blob:none", *shallow, "--", "origin", head.fetch_name,
                            watch=True)
            commit = self._git("rev-parse", "--verify", "--end-of-options", "FETCH_HEAD^{commit}").stdout.strip()
        except GitFailed as exc:
            raise self.failure(exc) from None
        if NOT_FILTERED in ran.stderr:
            self.notes.append(f"{self.spec.url} does not filter what it sends (no partial clone): the whole tree of "
                              "the commit was fetched, not only the docs")
        if since and since.get("commit") and since["commit"] != commit and not self.spec.pinned \
                and not self._descends(commit, since["commit"]):
            raise GitSourceError(
                f"the history of {self.spec.ref or 'the default branch'} at {self.spec.url} was rewritten since "
                f"the indexed commit {since['commit'][:12]} (a force-push): the index was left as it was. To follow "
                "the new history, read it afresh: " + self.reingest_command())
        self.fetched_bytes = folder_bytes(self.objects) - before
        return commit

    def _descends(self, commit: str, ancestor: str) -> bool:
        try:
            self._git("merge-base", "--is-ancestor", "--end-of-options", ancestor, commit)
            return True
        except GitFailed:  # 1: not an ancestor; 128: the recorded commit is not in the history fetched
            return False

    def commit_time(self, commit: str) -> str:
        seconds = self._git("show", "-s", "--format=%ct", "--end-of-options", commit).stdout.strip()
        return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def check_paths(self, commit: str) -> None:
        """Every path asked for exists at `commit` (else the source's paths moved upstream)."""
        if not self.spec.paths:
            return
        listed = self._git("ls-tree", "-z", "--name-only", "--end-of-options", commit, "--", *self.spec.paths).stdout
        present = set(filter(None, listed.split("\0")))
        missing = [p for p in self.spec.paths if p not in present]
        if missing:
            raise GitSourceError(
                f"{', '.join(missing)} no longer exist{'s' if len(missing) == 1 else ''} at {commit[:12]} of "
                f"{self.spec.url}: the index was left as it was. Give the paths the docs have now: "
                + self.reingest_command(paths=["NEW/PATH"]))

    def check_out(self, commit: str) -> None:
        """The docs under the paths at `commit` in the working tree (their blobs fetched now)."""
        before = folder_bytes(self.objects)
        try:
            self._git("-c", "advice.detachedHead=false", "checkout", "--quiet", "--force", "--detach", commit,
                      watch=True)
        except GitFailed as exc:
            raise self.failure(exc) from None
        self.fetched_bytes += folder_bytes(self.objects) - before

    def store_bytes(self) -> int:
        return folder_bytes(self.objects)

    # -- messages -----------------------------------------------------------------------------

    def reingest_command(self, paths: list[str] | None = None) -> str:
        spec = self.spec
        parts = ["rlhelper", "ingest", "--git", spec.url]
        if spec.ref:
            parts += ["--ref", spec.ref]
        for path in paths if paths is not None else spec.paths:
            parts += ["--path", path]
        return "`" + " ".join(parts) + " --collection NAME`"

    def failure(self, exc: GitFailed) -> GitSourceError:
        """A git failure as a sentence: what went wrong, that nothing changed, what to run."""
        reason, url, low = exc.reason, self.spec.url, exc.reason.lower()
        kept = "nothing changed in the index"
        if exc.too_big:
            shutil.rmtree(self.repo, ignore_errors=True)  # a cache: not worth the disk it would take
        if exc.timed_out or exc.too_big:
            return GitSourceError(f"fetching {url} stopped: {reason}; {kept}. Narrow --path, or raise the setting, "
                                  f"then run {self.retry}")
        if any(s in low for s in ("could not read username", "could not read password", "terminal prompts disabled",
                                  "authentication failed", "permission denied", "access denied", "error: 401",
                                  "error: 403", "host key verification failed")):
            return GitSourceError(f"{url} needs credentials that git could not find without asking ({reason}); "
                                  f"{kept}. Give git a credential helper or an ssh key for it, then run {self.retry}")
        if any(s in low for s in ("couldn't find remote ref", "not our ref", "no such remote ref")):
            return GitSourceError(f"{url} has no {spec_ref(self.spec)} any more ({reason}); {kept}. Give an existing "
                                  f"one: {self.reingest_command()} with another --ref")
        if any(s in low for s in ("does not appear to be a git repository", "repository not found", "error: 404",
                                  "no such repository", "not found")):
            return GitSourceError(f"no git repository at {url} ({reason}); {kept}. Check the URL, then run "
                                  f"{self.retry}")
        return GitSourceError(f"cannot fetch {url} ({reason}); {kept}. When it can be reached again, run {self.retry}")


def read_json_object(file: Path) -> dict:
    """A JSON object from `file`; {} when it is missing, damaged or not an object."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def spec_ref(spec: GitSpec) -> str:
    return f"ref {spec.ref!r}" if spec.ref else "default branch"


def _epoch(iso: str) -> float:
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
