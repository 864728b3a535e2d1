"""Bring a repository's stored threads up to date: from the API, or from saved exports.

    update = update_threads("verl-project/verl", exports=[], since=None, labels=None,
                            api_url=None, token_env=None, notify=print)
    update.store, update.fetched, update.notes, update.stopped

Where the API is: `api_url`, else GITHUB_API_URL, else https://api.github.com.
The token: the variable `token_env` names (an error when it is not set), else
GITHUB_TOKEN when set, else none (GitHub allows 60 requests an hour without one).
The bounds of a run (client.py, fetch.py): RLHELPER_GITHUB_TIMEOUT (seconds, in all, per request;
30), RLHELPER_GITHUB_MAX_PAGES (of one listing; 500), RLHELPER_GITHUB_MAX_THREADS (stored; 5,000),
or the same names in the config file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ... import config
from ...errors import GitHubError
from .client import DEFAULT_API_URL, MAX_PAGES, TIMEOUT, GitHubClient
from .export import read_exports
from .fetch import MAX_THREADS, iso_time, sync
from .threads import ThreadStore, check_repo

DEFAULT_TOKEN_ENV = "GITHUB_TOKEN"


@dataclass
class Update:
    store: ThreadStore
    fetched: int = 0  # threads fetched or read in this run
    requests: int = 0
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None  # the sync stopped early (rate limit): run again to resume


def api_token(token_env: str | None) -> str | None:
    """The token's value (never shown anywhere), from the variable named, or GITHUB_TOKEN."""
    if token_env:
        value = os.environ.get(token_env, "")
        if not value:
            raise GitHubError(f"--github-token-env names {token_env}, which is not set: export it, or leave the "
                              "option out to use GITHUB_TOKEN (or no token)")
        return value
    return os.environ.get(DEFAULT_TOKEN_ENV) or None


def update_threads(repo: str, *, exports: list[Path] | tuple = (), since: str | None = None,
                   labels: str | None = None, api_url: str | None = None, token_env: str | None = None,
                   notify: Callable[[str], None] = lambda message: None, root: Path | None = None) -> Update:
    store = ThreadStore(check_repo(repo), root)
    update = Update(store)
    if exports:
        threads, update.notes = read_exports(list(exports), store.repo)
        threads = [t for t in threads if _wanted(t, since, labels)]
        store.append(threads)
        store.compact()
        update.fetched = len(threads)
        return update
    token = api_token(token_env)
    if token is None:
        update.notes.append("no GITHUB_TOKEN: GitHub allows 60 requests an hour without one")
    client = GitHubClient(api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL, token, notify=notify,
                          timeout=_bound("github_timeout", TIMEOUT, float),
                          max_pages=_bound("github_max_pages", MAX_PAGES, int))
    report = sync(store.repo, store, client, since=since, labels=labels,
                  max_threads=_bound("github_max_threads", MAX_THREADS, int))
    update.fetched, update.requests, update.stopped = len(report.fetched), report.requests, report.stopped
    if report.pull_requests:
        update.notes.append(f"{report.pull_requests} pull request(s) listed by the issues endpoint skipped")
    return update


def _bound(name: str, default, kind):
    """A positive number from RLHELPER_<NAME> or the config file, else `default`."""
    value = config.setting(name, default=default)
    try:
        number = kind(value)
        if not 0 < number < 1e9:
            raise ValueError
    except (TypeError, ValueError):
        raise GitHubError(f"RLHELPER_{name.upper()}={value!r} is not a positive {'whole ' if kind is int else ''}"
                          f"number (the default is {default:g})") from None
    return number


def _wanted(thread: dict, since: str | None, labels: str | None) -> bool:
    """An exported thread within --since and --labels (all of them, as the API filters)."""
    if since and str(thread.get("updated_at") or thread.get("closed_at") or "") < iso_time(since):
        return False
    wanted = {label.strip() for label in (labels or "").split(",") if label.strip()}
    return wanted <= set(thread.get("labels") or [])
