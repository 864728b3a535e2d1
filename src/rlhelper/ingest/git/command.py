"""Running the git command line, bounded: no prompt, a deadline, a size cap, and failures in words.

    listed = run_git(["ls-remote", "--", url, "HEAD"], timeout=60).stdout
    run_git(["fetch", ...], cwd=repo, watch=repo / ".git" / "objects", max_bytes=512 * 2**20)

Why the command line and not a library: it is what every machine with docs in git already has, it
speaks every transport (https with the user's credential helper, ssh with their keys), and partial
clone with sparse checkout, which keeps a fetch to the docs' own files, is git's own feature.

What every run gets:
- GIT_TERMINAL_PROMPT=0, and ssh in batch mode (unless GIT_SSH_COMMAND or GIT_SSH is set): a cron job or a
  server never waits on a password prompt; a repository that needs credentials fails, saying so.
- GIT_ALLOW_PROTOCOL: only the transports a URL may name (remote.SCHEMES); `ext::` runs commands.
- LC_ALL=C: git's messages are read to tell "cannot reach", "needs credentials" and "no such ref" apart.
- a deadline (setting git_timeout, default 300 s) and, for fetches, a cap on what lands in the object
  store (setting git_max_mb, default 512): a server that ignores the blob filter cannot fill the disk.
- on Linux, git dies with the rlhelper process that started it (a killed sync leaves no git running).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ... import config
from ..parse.inline import drop_controls

DEFAULT_TIMEOUT = 300.0
DEFAULT_MAX_MB = 512
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"
STDERR_LINES = 3  # of git's message kept in an error


class GitFailed(Exception):
    """A git command failed; `reason` is git's own last lines, cleaned for a terminal."""

    def __init__(self, args: list[str], reason: str, *, timed_out: bool = False, too_big: bool = False):
        super().__init__(reason)
        self.args_run = args
        self.reason = reason
        self.timed_out = timed_out
        self.too_big = too_big


def timeout_setting() -> float:
    return float(config.setting("git_timeout", default=DEFAULT_TIMEOUT))


def max_bytes_setting() -> int:
    return int(float(config.setting("git_max_mb", default=DEFAULT_MAX_MB)) * 2**20)


def git_env() -> dict:
    env = dict(os.environ)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ALLOW_PROTOCOL=ALLOWED_PROTOCOLS, LC_ALL="C", LANGUAGE="",
               GIT_OPTIONAL_LOCKS="0")
    if not env.get("GIT_SSH_COMMAND") and not env.get("GIT_SSH"):
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    return env


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def folder_bytes(folder: Path) -> int:
    """Bytes of the files below `folder` (an object store), 0 when it is missing."""
    total = 0
    for here, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(here, name)).st_size
            except OSError:
                continue
    return total


def run_git(args: list[str], *, cwd: Path | None = None, timeout: float | None = None, stdin: str | None = None,
            watch: Path | None = None, max_bytes: int | None = None) -> subprocess.CompletedProcess:
    """git's output (stdout, stderr); GitFailed with its message when it fails, passes the deadline, or (with `watch`)
    grows that folder past `max_bytes`."""
    argv = ["git", *args]
    deadline = time.monotonic() + (timeout if timeout is not None else timeout_setting())
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=git_env(), stdin=subprocess.PIPE if stdin is not None else
                                subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace", start_new_session=True,
                                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    except FileNotFoundError:
        raise GitFailed(argv, "the git command is not installed: install git (apt install git)") from None
    base = folder_bytes(watch) if watch is not None else 0
    timed_out = too_big = False
    out = err = ""
    pending = stdin
    while True:
        try:
            out, err = proc.communicate(input=pending, timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            pending = None  # communicate() sent it already
            if time.monotonic() > deadline:
                timed_out = True
            elif watch is not None and max_bytes and folder_bytes(watch) - base > max_bytes:
                too_big = True
            if timed_out or too_big:
                _kill(proc)
                out, err = proc.communicate()
                break
    if watch is not None and max_bytes and not timed_out and folder_bytes(watch) - base > max_bytes:
        too_big = True  # finished between two looks: what it brought still counts
    if timed_out:
        raise GitFailed(argv, f"git {args[0]} took longer than {timeout or timeout_setting():g} s (setting "
                              "git_timeout)", timed_out=True)
    if too_big:
        raise GitFailed(argv, f"git {args[0]} brought more than {max_bytes / 2**20:.0f} MB (setting git_max_mb)",
                        too_big=True)
    if proc.returncode != 0:
        raise GitFailed(argv, last_lines(err) or f"git {args[0]} exited with status {proc.returncode}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def last_lines(stderr: str) -> str:
    """git's error in a line or three: its `fatal:`/`error:` lines first, hints and progress left out."""
    lines = [drop_controls(line).strip() for line in (stderr or "").splitlines()]
    lines = [line for line in lines if line and not line.startswith(("hint:", "From ", " * ", "remote: Counting",
                                                                       "remote: Compressing", "remote: Total"))]
    serious = [line for line in lines if line.startswith(("fatal:", "error:", "ERROR", "remote: "))]
    return " ".join((serious or lines)[-STDERR_LINES:])[:600]
