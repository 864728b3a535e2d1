"""GET requests to GitHub's REST API: pagination, rate limits, retries, bounds.

Standard library only (urllib), so `pip install .` pulls no HTTP client for it.

* Pagination follows the `Link: <...>; rel="next"` header, and only to the API's own
  origin: the token is never sent to another host (a redirect elsewhere is refused too).
* A rate-limit answer (403 or 429 with `x-ratelimit-remaining: 0`, or `retry-after`)
  is waited out when the reset is near (`max_wait` seconds, with a message), else
  `RateLimited` is raised with the reset time: the caller saves its resume point.
* 5xx answers and connection failures are retried with exponential backoff.
* Each answer is read up to `max_bytes`; every request has a timeout.
* The token goes in the Authorization header only. Error messages name the URL's
  path and the status, never a header, and are passed through `redact` anyway.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ...errors import GitHubError
from ...version import __version__

DEFAULT_API_URL = "https://api.github.com"
TIMEOUT = 30.0
MAX_BYTES = 20_000_000  # one page of 100 issues with long bodies stays far below
MAX_WAIT = 90.0  # seconds of rate-limit wait done in place; longer stops with a resume point
RETRIES = 3
BACKOFF = 1.0  # seconds before the first retry, doubled each time
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


class RateLimited(GitHubError):
    """The API's rate limit is spent until `reset_at` (epoch seconds)."""

    def __init__(self, message: str, reset_at: float):
        super().__init__(message)
        self.reset_at = reset_at


@dataclass
class Page:
    data: object
    next_url: str | None


@dataclass
class GitHubClient:
    base_url: str = DEFAULT_API_URL
    token: str | None = field(default=None, repr=False)
    timeout: float = TIMEOUT
    max_bytes: int = MAX_BYTES
    max_wait: float = MAX_WAIT
    retries: int = RETRIES
    backoff: float = BACKOFF
    notify: Callable[[str], None] = lambda message: None
    sleep: Callable[[float], None] = time.sleep
    requests: int = 0  # made so far, for reports and tests

    def __post_init__(self):
        self.base_url = self.base_url.rstrip("/")
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise GitHubError(f"The GitHub API URL {self.base_url!r} is not an http(s) URL: set GITHUB_API_URL or "
                              "--github-api-url to e.g. https://api.github.com or https://HOST/api/v3.")
        self._origin = (parts.scheme, parts.netloc)
        self._opener = urllib.request.build_opener(_SameOriginRedirects(self._origin))

    def redact(self, text: str) -> str:
        return text.replace(self.token, "[token]") if self.token else text

    def url(self, path: str, params: dict | None = None) -> str:
        query = urllib.parse.urlencode({k: v for k, v in (params or {}).items() if v not in (None, "")})
        return f"{self.base_url}/{path.lstrip('/')}" + (f"?{query}" if query else "")

    def pages(self, path: str, params: dict | None = None) -> Iterator[Page]:
        """Every page of a list endpoint, following its Link headers."""
        url: str | None = self.url(path, params)
        while url:
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
                status, headers, body = self._request(url)
            except OSError as exc:  # refused, reset, timed out, DNS
                if attempt > self.retries:
                    raise GitHubError(self.redact(f"cannot reach {_shown(url)}: {exc}; check the network or "
                                                  "GITHUB_API_URL, then run the same command again")) from None
                self._back_off(attempt, f"cannot reach {_shown(url)} ({type(exc).__name__})")
                continue
            if status < 300:
                try:
                    data = json.loads(body)
                except ValueError:
                    raise GitHubError(f"{_shown(url)} answered something that is not JSON") from None
                return Page(data, self._next(headers.get("link")))
            wait = _rate_limit_wait(status, headers)
            if wait is not None:
                self._wait_out(wait, url)
                continue
            if status >= 500 and attempt <= self.retries:
                self._back_off(attempt, f"{_shown(url)} answered {status}")
                continue
            raise GitHubError(self.redact(_failure(status, url, body)))

    def _request(self, url: str) -> tuple[int, dict, bytes]:
        self.requests += 1
        request = urllib.request.Request(url, headers={
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"rlhelper/{__version__}",
        })
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return response.status, _lower(response.headers), _read_bounded(response, self.max_bytes, url)
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, _lower(exc.headers), _read_bounded(exc, 65_536, url, cut=True)

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
    except (ValueError, AttributeError):
        message = ""
    shown = f"{_shown(url)} answered {status}" + (f" ({message})" if message else "")
    if status == 401:
        return f"{shown}: the token was refused; check the variable --github-token-env names (GITHUB_TOKEN by default)"
    if status == 404:
        return f"{shown}: no such repository, or it is private and needs a token (GITHUB_TOKEN)"
    return shown


def _shown(url: str) -> str:
    """The URL's path and query, for messages (no credentials are ever in it)."""
    parts = urllib.parse.urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")
