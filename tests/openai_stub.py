"""A real HTTP server speaking the OpenAI chat-completions protocol, for tests.

Listens on 127.0.0.1 on a free port, in a thread. Each POST
/v1/chat/completions takes the next scripted `Reply` (the last one repeats),
or, given a `responder`, the Reply it returns for (request body, 1-based
request number), and answers it streamed (SSE `data: {...}` chunks, then `data: [DONE]`) when
the request says "stream": true, else as one JSON object. Every request body
is kept in `requests` so a test can assert what the client sent.

Waits are bounded and end at once when the server stops, so a test that gave
up on a slow reply never leaves a thread sleeping.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_WAIT = 5.0  # seconds: no scripted delay may exceed this


@dataclass
class Reply:
    text: str = ""
    status: int = 200
    delay: float = 0.0  # seconds of silence before the response starts
    stall_after: int | None = None  # streamed: go silent for `stall` s after this many chunks
    stall: float = 0.0
    chunk_chars: int = 6  # streamed: characters per SSE chunk
    body: bytes | None = None  # sent as it is instead of a completion or a stream (malformed replies)
    content_type: str = "application/json"  # of `body`
    keepalive: float = 0.0  # streamed: no content, an SSE comment every `keepalive` s until the client leaves


class OpenAIStub:
    def __init__(self, *replies: Reply, model: str = "stub-model",
                 responder: Callable[[dict, int], Reply] | None = None):
        self.replies = list(replies) or [Reply("ok [1]")]
        self.responder = responder
        self.model = model
        self.requests: list[dict] = []
        self.headers: list[dict] = []  # lower-cased names
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> OpenAIStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _next_reply(self, body: dict, headers: dict) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            number = len(self.requests)
            if self.responder is None:
                return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return self.responder(body, number)  # outside the lock: requests are answered concurrently

    def user_messages(self) -> list[str]:
        """The last user message of every request so far, in arrival order."""
        with self._lock:
            return [next(m["content"] for m in reversed(b.get("messages", [])) if m.get("role") == "user")
                    for b in self.requests]

    def wait(self, seconds: float) -> None:
        self._stop.wait(min(seconds, MAX_WAIT))

    # -- response bodies ------------------------------------------------------------

    def completion(self, text: str) -> dict:
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def chunk(self, delta: dict, finish: str | None = None) -> dict:
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }


def _handler_for(stub: OpenAIStub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": stub.model, "object": "model"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path != "/v1/chat/completions":
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            body = json.loads(raw or b"{}")
            reply = stub._next_reply(body, {k.lower(): v for k, v in self.headers.items()})
            try:
                if reply.delay:
                    stub.wait(reply.delay)
                    if stub._stop.is_set():
                        return
                if reply.body is not None:
                    self._raw(reply)
                elif reply.status != 200:
                    self._json(reply.status, {"error": {"message": "scripted failure", "type": "server_error"}})
                elif body.get("stream"):
                    self._sse(reply)
                else:
                    self._json(200, stub.completion(reply.text))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): expected in timeout tests

        def _json(self, status: int, payload: dict):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _raw(self, reply: Reply):
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def _sse(self, reply: Reply):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            pieces = (reply.text[i:i + reply.chunk_chars] for i in range(0, len(reply.text), reply.chunk_chars))
            self._event(stub.chunk({"role": "assistant", "content": ""}))
            while reply.keepalive and not stub._stop.is_set():  # a lively server that never answers
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
                stub.wait(reply.keepalive)
            if stub._stop.is_set():
                return
            for n, piece in enumerate(pieces):
                if reply.stall_after is not None and n == reply.stall_after:
                    stub.wait(reply.stall)
                    if stub._stop.is_set():
                        return
                self._event(stub.chunk({"content": piece}))
            self._event(stub.chunk({}, finish="stop"))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _event(self, payload: dict):
            self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
            self.wfile.flush()

    return Handler
