"""The web server's door (issue 31): what a request may bring before Gradio reads it.

VisitorGate is ASGI middleware in front of Gradio's routes:

- A request body is at most MAX_BODY_BYTES (HTTP 413): a question of 2M characters and its chat fit;
  a 200 MB chat history does not reach the JSON parser.
- Files are refused (HTTP 403): the page takes none, so Gradio's upload routes (and any multipart
  body but the login form) answer "this server takes no files"; nothing a visitor sends is written
  to disk.
- Sessions are bounded: Gradio keeps a session's state in memory under the session id the browser
  makes up, so one address could make any number of them. The gate counts the sessions each address
  uses and lets its least recently used one go past SESSIONS_PER_ADDRESS, and every session idle for
  IDLE_SECONDS (Gradio's own cap on all sessions is set at launch: server.py). A call without a
  session id (Gradio's /call API) gets one here, so it is counted too.
- Sign-in attempts (`serve --auth-file`): at most LOGINS_PER_MINUTE per address.

The address is the connection's, or the one a proxy named in X-Forwarded-For when that proxy's
address was named by the operator (`serve --trusted-proxy`): uvicorn applies that before this runs,
trusting nobody by default (server.py). An IPv6 client is counted by its /64 (addresses.py).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict

from ..addresses import address_key
from ..measure.feedback import WriteLimiter

MAX_BODY_BYTES = 16 * 1024 * 1024
SESSIONS_PER_ADDRESS = 16
IDLE_SECONDS = 3600.0
MAX_SESSIONS = 2000  # all addresses together (Gradio's state_session_capacity as well)
LOGINS_PER_MINUTE = 10
MAX_SESSION_ID_CHARS = 100
SWEEP_EVERY = 30.0
FILE_ROUTES = ("/upload", "/process_recording", "/upload_progress")
NO_FILES = "this server takes no files"


class Sessions:
    """Which sessions each address uses, least recently used first; says which to let go."""

    def __init__(self, per_address: int = SESSIONS_PER_ADDRESS, idle: float = IDLE_SECONDS,
                 total: int = MAX_SESSIONS, clock=time.monotonic):
        self.per_address, self.idle, self.total, self.clock = per_address, idle, total, clock
        self._used: OrderedDict[str, tuple[str, float]] = OrderedDict()  # session -> (address, last use)
        self._of: dict[str, OrderedDict[str, None]] = {}  # address -> its sessions, oldest first
        self._swept = clock()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._used)

    def of(self, address: str) -> int:
        return len(self._of.get(address, ()))

    def seen(self, address: str, session: str) -> list[str]:
        """Count a request of `session` from `address`; returns the sessions to let go."""
        now = self.clock()
        with self._lock:
            self._drop(session)
            self._used[session] = (address, now)
            mine = self._of.setdefault(address, OrderedDict())
            mine[session] = None
            gone = []
            while len(mine) > self.per_address:
                gone.append(next(iter(mine)))
                self._drop(gone[-1])
            while len(self._used) > self.total:
                gone.append(next(iter(self._used)))
                self._drop(gone[-1])
            if now - self._swept >= min(SWEEP_EVERY, self.idle):
                self._swept = now
                for old, (_, last) in list(self._used.items()):
                    if now - last < self.idle:
                        break  # oldest first: the rest are newer
                    gone.append(old)
                    self._drop(old)
            return gone

    def _drop(self, session: str) -> None:
        held = self._used.pop(session, None)
        if held is not None:
            mine = self._of.get(held[0])
            if mine is not None:
                mine.pop(session, None)
                if not mine:
                    del self._of[held[0]]


def client_address(scope) -> str:
    """The client as the limits count it: IPv6 by its /64 (addresses.py)."""
    client = scope.get("client")
    return address_key(str(client[0])) if client else "?"


async def _answer(send, status: int, message: str) -> None:
    body = json.dumps({"error": message, "detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _header(scope, name: bytes) -> str:
    for key, value in scope.get("headers") or ():
        if key == name:
            return value.decode("latin-1")
    return ""


class VisitorGate:
    """ASGI middleware: bodies bounded, files refused, sessions per address bounded (module docstring)."""

    def __init__(self, app, *, sessions: Sessions | None = None, max_body: int = MAX_BODY_BYTES,
                 logins: WriteLimiter | None = None):
        self.app = app
        self.sessions = sessions or Sessions()
        self.max_body = max_body
        self.logins = logins or WriteLimiter(LOGINS_PER_MINUTE)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        path, address = scope.get("path", ""), client_address(scope)
        kind = _header(scope, b"content-type").split(";")[0].strip().lower()
        is_login = path.rstrip("/").endswith("/login")
        if path.rstrip("/").endswith(FILE_ROUTES) or (kind.startswith("multipart/") and not is_login):
            await _answer(send, 403, NO_FILES)
            return
        if is_login and not self.logins.allow(address):
            await _answer(send, 429, "too many sign-in attempts from your address: wait a minute")
            return
        try:
            declared = int(_header(scope, b"content-length") or 0)
        except ValueError:
            declared = 0
        if declared > self.max_body:
            await _answer(send, 413, self._too_big(declared))
            return
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body:
                await _answer(send, 413, self._too_big(len(body)))
                return
        if kind == "application/json" and not is_login:
            body = self._counted(scope, bytes(body), address)
            if body is None:
                await _answer(send, 400, f"a session id is text of at most {MAX_SESSION_ID_CHARS} characters")
                return
        await self.app(scope, self._replay(bytes(body), receive), send)

    def _too_big(self, size: int) -> str:
        return (f"the request is {size / 2**20:.1f} MB; this server takes at most {self.max_body / 2**20:.0f} MB "
                "(start a new chat, or send a shorter log)")

    def _counted(self, scope, body: bytes, address: str) -> bytes | None:
        """The body, with a session id added to a call that has none; counts the session."""
        try:
            payload = json.loads(body)
        except ValueError:
            return body  # Gradio answers it
        if not isinstance(payload, dict):
            return body
        session = payload.get("session_hash")
        if session is None and "/call/" in scope.get("path", ""):
            session = payload["session_hash"] = "call-" + uuid.uuid4().hex
            body = json.dumps(payload).encode()
        if session is None:
            return body
        if not isinstance(session, str) or len(session) > MAX_SESSION_ID_CHARS:
            return None
        gone = self.sessions.seen(address, session)
        if gone:
            self._let_go(scope.get("app"), gone)
        return body

    @staticmethod
    def _let_go(app, sessions: list[str]) -> None:
        """Drop those sessions' state from Gradio's state holder (its next request starts afresh)."""
        holder = getattr(app, "state_holder", None)
        if holder is None:
            return
        with holder.lock:
            for session in sessions:
                holder.session_data.pop(session, None)
                holder.time_last_used.pop(session, None)

    @staticmethod
    def _replay(body: bytes, receive):
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay
