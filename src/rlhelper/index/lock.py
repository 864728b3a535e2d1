"""The index lock: one writer at a time (`index/<name>.lock`, flock), without importing FAISS or numpy, so a
command that only needs the lock (a `rlhelper sync` with nothing new) starts fast."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from .. import config
from ..errors import IndexLockedError
from .folders import lock_file, show

DEFAULT_LOCK_TIMEOUT = 30.0


@contextlib.contextmanager
def index_lock(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold `index/<name>.lock` (flock) for the duration; wait up to `timeout` seconds for it.

    flock is released by the kernel when its holder dies, so a killed ingest
    never leaves the index locked.
    """
    path = Path(path)
    if timeout is None:
        timeout = float(config.setting("lock_timeout", default=DEFAULT_LOCK_TIMEOUT))
    lock = lock_file(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not flock_within(fd, timeout):
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise IndexLockedError(
                f"another `rlhelper ingest` (pid {holder}) is updating {show(path)}; wait for it, "
                f"or remove {show(lock)} if no ingest is running."
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def flock_within(fd: int, timeout: float, pause: float = 0.05) -> bool:
    """Take an exclusive flock on `fd`, waiting up to `timeout` seconds; False when another holds it still."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
