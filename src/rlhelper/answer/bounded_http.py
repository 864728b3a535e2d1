"""An httpx client whose responses are bounded in time and size, for talking to a model server.

httpx's timeouts count silence only: a server that sends an SSE keep-alive comment every few
seconds, or 50 MB at full speed, is never stopped by them. Here every response body is read
through a guard that raises once the request's overall deadline has passed or the body has
grown past `max_bytes`, so the client stops reading at once (the openai client turns these into
its own errors; `reply_limit` finds which one was hit).
"""

from __future__ import annotations

import time

import httpx


class OutOfTime(httpx.ReadTimeout):
    """The reply did not end within the overall deadline, however lively the server was."""


class TooLarge(httpx.ReadError):
    """The reply's body grew past the size allowed."""


class _BoundedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, request: httpx.Request, deadline: float, seconds: float,
                 max_bytes: int):
        self._inner, self._request = inner, request
        self._deadline, self._seconds, self._max_bytes = deadline, seconds, max_bytes

    def __iter__(self):
        received = 0
        for chunk in self._inner:
            received += len(chunk)
            if received > self._max_bytes:
                raise TooLarge(f"reply over {self._max_bytes:,} bytes", request=self._request)
            if time.monotonic() > self._deadline:
                raise OutOfTime(f"reply not finished within {self._seconds:g} s", request=self._request)
            yield chunk

    def close(self) -> None:
        self._inner.close()


class BoundedTransport(httpx.BaseTransport):
    def __init__(self, seconds: float, max_bytes: int, inner: httpx.BaseTransport | None = None):
        self.seconds, self.max_bytes = seconds, max_bytes
        self._inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.seconds
        response = self._inner.handle_request(request)
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_BoundedStream(response.stream, request, deadline, self.seconds, self.max_bytes),
                              extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()


def bounded_client(seconds: float, max_bytes: int, timeout: float) -> httpx.Client:
    """A client for one model server: `timeout` s of silence, `seconds` in all, `max_bytes` per reply.
    Redirects are followed as the openai client's own does (httpx drops the key on another origin)."""
    return httpx.Client(transport=BoundedTransport(seconds, max_bytes), timeout=timeout, follow_redirects=True)


def reply_limit(exc: BaseException | None) -> OutOfTime | TooLarge | None:
    """The limit an error came from (it may be the cause of the openai client's own error), else None."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OutOfTime | TooLarge):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None
