"""GET requests to GitHub's REST API: pagination, rate limits, retries, bounds.

Standard library only (urllib), so `pip install .` pulls no HTTP client for it.

* Pagination follows the `Link: <...>; rel="next"` header, and only to the API's own
  origin: the token is never sent to another host (a redirect elsewhere is refused too).
* A rate-limit answer (403 or 429 with `x-ratelimit-remaining: 0`, or `retry-after`)
  is waited out when the reset is near (`max_wait` seconds, with a message), else
  `RateLimited` is raised with the reset time: the caller saves its resume point.
* 5xx answers and connection failures are retried with exponential backoff.
* Each answer is read up to `max_bytes`. `timeout` is a total deadline per request (connecting,
  the headers and the body together): urllib's own timeout bounds each socket read only, so a
  server sending a byte every few seconds held a request for minutes. A watchdog shuts the
  socket down when the time is up; the request then counts as failed (and is retried).
* A listing follows at most `max_pages` pages, and never a page it already read: an endless
  `rel="next"` stops with PageCapReached (fetch.py saves its resume point and says so).
* The token goes in the Authorization header only. Error messages name the URL's
  path and the status, never a header, and are passed through `redact` anyway.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ...errors import GitHubError
from ...version import __version__

DEFAULT_API_URL = "https://api.github.com"
TIMEOUT = 30.0  # seconds, in all, for one request
MAX_PAGES = 500  # of one listing in one run: 50,000 issues at 100 a page
MAX_BYTES = 20_000_000  # one page of 100 issues with long bodies stays far below
MAX_WAIT = 90.0  # seconds of rate-limit wait done in place; longer stops with a resume point
RETRIES = 3
BACKOFF = 1.0  # seconds before the first retry, doubled each time
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


class PageCapReached(GitHubError):
    """A listing went on past `max_pages`, or its next link led back to a page already read."""


class DeadlineExceeded(OSError):
    """A request took longer than its total deadline."""


class RateLimited(GitHubError):
    """The API's rate limit is spent until `reset_at` (epoch seconds)."""

    def __init__(self, message: str, reset_at: float):
        super().__init__(message)
        self.reset_at = reset_at


@dataclass
class Page:
    data: object
    next_url: str | None
    redirected: bool = False  # the API answered from another path (a renamed repository's 301)


@dataclass
class GitHubClient:
    base_url: str = DEFAULT_API_URL
    token: str | None = field(default=None, repr=False)
    timeout: float = TIMEOUT
    max_pages: int = MAX_PAGES
    max_bytes: int = MAX_BYTES
    max_wait: float = MAX_WAIT
    retries: int = RETRIES
    backoff: float = BACKOFF
    notify: Callable[[str], None] = lambda message: None
    sleep: Callable[[float], None] = time.sleep
    requests: int = 0  # made so far, for reports and tests
    remaining: int | None = None  # the rate limit's requests left, as the last answer said

    def __post_init__(self):
        self.base_url = self.base_url.rstrip("/")
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise GitHubError(f"The GitHub API URL {self.base_url!r} is not an http(s) URL: set GITHUB_API_URL or "
                              "--github-api-url to e.g. https://api.github.com or https://HOST/api/v3.")
        self._origin = (parts.scheme, parts.netloc)
        self._sockets: list[socket.socket] = []  # of the request being made, for its watchdog
        self._opener = urllib.request.build_opener(_SameOriginRedirects(self._origin), _WatchedHTTP(self._sockets),
                                                   _WatchedHTTPS(self._sockets))

    def redact(self, text: str) -> str:
        return text.replace(self.token, "[token]") if self.token else text

    def url(self, path: str, params: dict | None = None) -> str:
        query = urllib.parse.urlencode({k: v for k, v in (params or {}).items() if v not in (None, "")})
        return f"{self.base_url}/{path.lstrip('/')}" + (f"?{query}" if query else "")

    def pages(self, path: str, params: dict | None = None, max_pages: int | None = None) -> Iterator[Page]:
        """Every page of a list endpoint, following its Link headers: at most `max_pages` (default
        self.max_pages), never one twice; PageCapReached when the list goes on past that."""
        url: str | None = self.url(path, params)
        limit = self.max_pages if max_pages is None else max_pages
        seen: set[str] = set()
        while url:
            if url in seen:
                raise PageCapReached(f"the next link of {_shown(url).split('?')[0]} led back to a page already "
                                     "read; the listing stops there")
            if len(seen) >= limit:
                raise PageCapReached(f"{_shown(url).split('?')[0]} goes on past {limit:,} pages, the most one "
                                     "run reads")
            seen.add(url)
            page = self.get(url)
            yield page
            url = page.next_url

    def get(self, url: str) -> Page:
        """One GET: JSON and the next page's URL, after waits and retries."""
        self._check_origin(url)
        attempt = 0
        while True:
            attempt += 1
            try:
                status, headers, body, final = self._request(url)
            except OSError as exc:  # refused, reset, timed out, DNS, past its deadline
                late = isinstance(exc, DeadlineExceeded)
                if attempt > self.retries:
                    why = f"no whole answer within {self.timeout:g} s" if late else str(exc)
                    raise GitHubError(self.redact(f"cannot reach {_shown(url)}: {why}; check the network or "
                                                  "GITHUB_API_URL, then run the same command again")) from None
                why = f"no whole answer within {self.timeout:g} s" if late else type(exc).__name__
                self._back_off(attempt, f"cannot reach {_shown(url)} ({why})")
                continue
            if status < 300:
                try:
                    data = json.loads(body)
                except ValueError:
                    raise GitHubError(f"{_shown(url)} answered something that is not JSON") from None
                except RecursionError:
                    raise GitHubError(f"{_shown(url)} answered JSON nested too deeply to be GitHub's") from None
                self.remaining = _int(headers.get("x-ratelimit-remaining"), self.remaining)
                return Page(data, self._next(headers.get("link")), _path(final) != _path(url))
            wait = _rate_limit_wait(status, headers)
            if wait is not None:
                self._wait_out(wait, url)
                continue
            if status >= 500 and attempt <= self.retries:
                self._back_off(attempt, f"{_shown(url)} answered {status}")
                continue
            raise GitHubError(self.redact(_failure(status, url, body)))

    def _request(self, url: str) -> tuple[int, dict, bytes, str]:
        self.requests += 1
        request = urllib.request.Request(url, headers={
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"rlhelper/{__version__}",
        })
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        expired = threading.Event()

        def expire() -> None:  # wakes a read blocked on the socket: it then ends at once
            expired.set()
            for sock in list(self._sockets):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        watchdog = threading.Timer(self.timeout, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                answer = (response.status, _lower(response.headers), _read_bounded(response, self.max_bytes, url),
                          response.geturl() or url)
        except urllib.error.HTTPError as exc:
            with exc:
                answer = exc.code, _lower(exc.headers), _read_bounded(exc, 65_536, url, cut=True), url
        except (OSError, http.client.HTTPException) as exc:
            if expired.is_set():
                raise DeadlineExceeded(f"no answer within {self.timeout:g} s") from None
            raise exc if isinstance(exc, OSError) else OSError(str(exc)) from None
        finally:
            watchdog.cancel()
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()
        if expired.is_set():  # the body may have been cut short without an error
            raise DeadlineExceeded(f"no answer within {self.timeout:g} s")
        return answer

    def _next(self, link: str | None) -> str | None:
        match = _NEXT.search(link or "")
        if not match:
            return None
        url = urllib.parse.urljoin(self.base_url + "/", match.group(1))
        self._check_origin(url)
        return url

    def _check_origin(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if (parts.scheme, parts.netloc) != self._origin:
            raise GitHubError(f"refusing to follow a link to {parts.scheme}://{parts.netloc}: the API is at "
                              f"{self._origin[0]}://{self._origin[1]}, and the token is only sent there")

    def _wait_out(self, seconds: float, url: str) -> None:
        reset_at = time.time() + seconds
        if seconds > self.max_wait:
            clock = time.strftime("%H:%M:%S", time.localtime(reset_at))
            raise RateLimited(f"GitHub's rate limit is spent until {clock} ({seconds:.0f} s); what was fetched is "
                              "saved: run the same command again after that to resume"
                              + ("" if self.token else ", or set GITHUB_TOKEN for a higher limit"), reset_at)
        self.notify(f"rate limit reached at {_shown(url)}: waiting {seconds:.0f} s for the reset")
        self.sleep(max(seconds, 0.0))

    def _back_off(self, attempt: int, why: str) -> None:
        delay = self.backoff * 2 ** (attempt - 1)
        self.notify(f"{why}: retrying in {delay:.0f} s ({attempt}/{self.retries})")
        self.sleep(delay)


class _Watched:
    """A connection whose socket the request's watchdog can shut down from the moment it is
    connected, TLS handshake included: it holds a duplicate of the socket's descriptor (shutting
    one down shuts the socket down), as the TLS wrapper takes the original over."""

    def __init__(self, *args, sockets: list, **kwargs):
        super().__init__(*args, **kwargs)
        self._sockets = sockets
        create = self._create_connection

        def watched(*args, **kwargs):
            sock = create(*args, **kwargs)
            self._sockets.append(socket.socket(fileno=os.dup(sock.fileno())))
            return sock

        self._create_connection = watched


class _WatchedConnection(_Watched, http.client.HTTPConnection):
    pass


class _WatchedSecureConnection(_Watched, http.client.HTTPSConnection):
    pass


class _WatchedHTTP(urllib.request.HTTPHandler):
    def __init__(self, sockets: list):
        super().__init__()
        self.sockets = sockets

    def http_open(self, req):
        return self.do_open(lambda *a, **kw: _WatchedConnection(*a, sockets=self.sockets, **kw), req)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, sockets: list):
        super().__init__()
        self.sockets = sockets

    def https_open(self, req):
        return self.do_open(lambda *a, **kw: _WatchedSecureConnection(*a, sockets=self.sockets, **kw), req,
                            context=self._context)


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect (a renamed repository's 301) only within the API's origin."""

    def __init__(self, origin: tuple[str, str]):
        self.origin = origin

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        parts = urllib.parse.urlsplit(newurl)
        if (parts.scheme, parts.netloc) != self.origin:
            raise GitHubError(f"the API redirected to {parts.scheme}://{parts.netloc}, another host: not followed, "
                              "so the token is not sent there")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _lower(headers) -> dict:
    return {k.lower(): v for k, v in (headers or {}).items()}


def _read_bounded(response, limit: int, url: str, cut: bool = False) -> bytes:
    body = response.read(limit + 1)
    if len(body) > limit:
        if cut:
            return body[:limit]
        raise GitHubError(f"{_shown(url)} answered more than {limit:,} bytes; not read")
    return body


def _rate_limit_wait(status: int, headers: dict) -> float | None:
    """Seconds until the API takes requests again, when this answer is a rate limit."""
    if status not in (403, 429):
        return None
    retry_after = headers.get("retry-after")
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            return 60.0
    if headers.get("x-ratelimit-remaining") == "0":
        try:
            return max(0.0, float(headers.get("x-ratelimit-reset", "")) - time.time()) + 1.0
        except ValueError:
            return 60.0
    return None


def _failure(status: int, url: str, body: bytes) -> str:
    try:
        message = str(json.loads(body).get("message", ""))[:200]
    except (ValueError, AttributeError, RecursionError):
        message = ""
    shown = f"{_shown(url)} answered {status}" + (f" ({message})" if message else "")
    if status == 401:
        return f"{shown}: the token was refused; check the variable --github-token-env names (GITHUB_TOKEN by default)"
    if status == 404:
        return f"{shown}: no such repository, or it is private and needs a token (GITHUB_TOKEN)"
    return shown


def _path(url: str) -> str:
    return urllib.parse.urlsplit(url).path.rstrip("/")


def _int(value, default):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _shown(url: str) -> str:
    """The URL's path and query, for messages (no credentials are ever in it)."""
    parts = urllib.parse.urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")
