"""Who may use a team server: `rlhelper serve --auth-file FILE` (issue 31).

The file holds one user a line, a name and a salted scrypt hash of their password (never the
password), written by `rlhelper auth add FILE NAME`:

    # rlhelper users
    alice:scrypt:16384:8:1:3q2+7w...==:Yk9f...==

It is read once, at start, and refused with one line naming the problem when it is malformed or
when others than its owner may read it (chmod 600, as ssh asks of its keys). Gradio shows its
sign-in page and calls `checker(users)` with what was typed; the comparison takes constant time,
and an unknown name costs as much as a known one, so neither timing tells which names exist.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import re
import secrets
import stat
from pathlib import Path

from ..errors import ConfigError

SCHEME = "scrypt"
N, R, P = 2**14, 8, 1  # ~16 MB and a few tens of ms a check: slow for a guesser, quick for a sign-in
SALT_BYTES, HASH_BYTES = 16, 32
MAX_PASSWORD_CHARS = 1024
NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
MAX_FILE_BYTES = 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def hash_password(password: str, *, salt: bytes | None = None, n: int = N, r: int = R, p: int = P) -> str:
    salt = salt or secrets.token_bytes(SALT_BYTES)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=HASH_BYTES, maxmem=64 * 2**20)
    return f"{SCHEME}:{n}:{r}:{p}:{_b64(salt)}:{_b64(digest)}"


def _parse_hash(text: str) -> tuple[int, int, int, bytes, bytes]:
    scheme, n, r, p, salt, digest = text.split(":")
    if scheme != SCHEME:
        raise ValueError(f"unknown scheme {scheme!r}")
    n, r, p = int(n), int(r), int(p)
    if not (2 <= n <= 2**20 and n & (n - 1) == 0 and 1 <= r <= 32 and 1 <= p <= 16 and n * r * 128 <= 64 * 2**20):
        raise ValueError("scrypt parameters out of range")
    return n, r, p, base64.b64decode(salt, validate=True), base64.b64decode(digest, validate=True)


def verify(password: str, stored: str) -> bool:
    n, r, p, salt, digest = _parse_hash(stored)
    if not isinstance(password, str) or len(password) > MAX_PASSWORD_CHARS:
        return False
    tried = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=len(digest), maxmem=64 * 2**20)
    return hmac.compare_digest(tried, digest)


def read_users(path: str | Path) -> dict[str, str]:
    """name -> stored hash; ConfigError (one line) for a missing, unsafe or malformed file."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise ConfigError(f"--auth-file {path}: {exc.strerror or exc}; make one with `rlhelper auth add {path} "
                          "NAME`.") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"--auth-file {path} is not a file.")
    if info.st_mode & 0o077:
        raise ConfigError(f"--auth-file {path} can be read by others (mode {stat.S_IMODE(info.st_mode):o}): "
                          f"run `chmod 600 {path}`, then start again.")
    if info.st_size > MAX_FILE_BYTES:
        raise ConfigError(f"--auth-file {path} is {info.st_size:,} bytes: that is no user file.")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--auth-file {path} cannot be read ({getattr(exc, 'strerror', None) or exc}).") from None
    users: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, stored = line.strip().partition(":")
        try:
            if not NAME.match(name):
                raise ValueError("a name is 1-64 letters, digits or _.@-")
            _parse_hash(stored)
        except ValueError as exc:
            raise ConfigError(f"--auth-file {path}:{number} is not a user line ({exc}); lines are NAME:HASH as "
                              f"`rlhelper auth add {path} NAME` writes them.") from None
        users[name] = stored
    if not users:
        raise ConfigError(f"--auth-file {path} names no user: add one with `rlhelper auth add {path} NAME`.")
    return users


def checker(users: dict[str, str]):
    """Gradio's auth callable, run off the event loop (a check takes tens of milliseconds)."""
    decoy = hash_password(secrets.token_urlsafe(16))

    def check(name: str, password: str) -> bool:
        stored = users.get(name)
        matched = verify(password, stored or decoy)  # an unknown name costs the same
        return stored is not None and matched

    async def check_async(name: str, password: str) -> bool:
        return await asyncio.to_thread(check, name, password)

    return check_async


def add_user(path: str | Path, name: str, password: str) -> bool:
    """Add `name` (or give them a new password) in the file, created 0600; True when they were new."""
    if not NAME.match(name or ""):
        raise ConfigError(f"{name!r} is not a user name: 1-64 letters, digits or _.@-")
    if not password or len(password) > MAX_PASSWORD_CHARS:
        raise ConfigError(f"a password is 1 to {MAX_PASSWORD_CHARS} characters")
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else ["# rlhelper users: NAME:HASH"]
    entry = f"{name}:{hash_password(password)}"
    new = not any(line.split(":", 1)[0] == name for line in lines)
    lines = [entry if line.split(":", 1)[0] == name else line for line in lines] + ([entry] if new else [])
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return new
