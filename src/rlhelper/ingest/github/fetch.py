"""Sync a repository's issues, open and closed, with their comments, into the local thread store.

    report = sync("verl-project/verl", store, client, since="2025-01-01", labels="bug")

Incremental by `updated_at`: issues are listed oldest change first (sort=updated,
direction=asc) from the `since` the last complete sync saved, so a second run fetches
only the issues changed since (a new comment, a reopening, an edit). After each page the
store holds its threads and state.json the point to resume from, so a run stopped by
the rate limit (the client raises RateLimited) or ^C loses at most one page. A run stores at
most `max_threads` threads, and a listing is read for at most the client's `max_pages` pages:
past either, the run stops after the page in hand, with its resume point saved, and says so
(SyncReport.stopped).

Per issue: its comments (when it has any: an open thread with a maintainer's answer or a confirmed
workaround is indexed, shown as open), and, for one closed as completed, its events, for the commit
that closed it and the pull request that commit came from (closing.py). Pull requests are skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ...errors import GitHubError
from .client import GitHubClient, PageCapReached, RateLimited
from .closing import closing_change
from .shapes import from_api_issue, is_pull_request, issue_number
from .threads import MAX_COMMENTS, ThreadStore

PER_PAGE = 100
MAX_THREADS = 5_000  # stored in one run (each costs a request or two more: an hour of GitHub's rate limit)


class Renamed(GitHubError):
    """The issues listing answered from another path: the repository was renamed since the last sync."""


@dataclass
class SyncReport:
    fetched: list[int] = field(default_factory=list)  # issue numbers stored in this run
    pull_requests: int = 0  # listed by the issues endpoint, skipped
    requests: int = 0
    complete: bool = True
    stopped: str | None = None  # why the sync stopped early (the rate limit), resumable


def sync(repo: str, store: ThreadStore, client: GitHubClient, *, since: str | None = None,
         labels: str | None = None, max_threads: int = MAX_THREADS,
         on_page: Callable[[int], None] = lambda fetched: None) -> SyncReport:
    """Fetch what changed since the last sync (or since `since`, an ISO date) into `store`;
    `on_page(threads fetched so far)` after each page is stored. Raises Renamed, before storing
    anything, when the listing was redirected (a renamed repository: its new name is asked for)."""
    report = SyncReport()
    state = store.state()
    key = labels or ""
    resume = (state.get("since") or {}).get(key)
    start = iso_time(since) if since else resume
    params = {"state": "all", "sort": "updated", "direction": "asc",
              "per_page": PER_PAGE, "since": start, "labels": labels}
    last = None
    try:
        for page in client.pages(f"repos/{repo}/issues", params):
            if not isinstance(page.data, list):
                raise GitHubError(f"repos/{repo}/issues did not answer a list of issues")
            if page.redirected and last is None and not report.fetched:
                raise Renamed(f"{repo} answered from another path: renamed")
            batch = []
            for item in page.data:
                if not isinstance(item, dict) or issue_number(item.get("number")) is None:
                    continue
                if is_pull_request(item):
                    report.pull_requests += 1
                    continue
                batch.append(_thread(repo, item, client))
                last = item.get("updated_at") or last
            store.append(batch)
            report.fetched += [t["number"] for t in batch]
            on_page(len(report.fetched))
            if last:  # resume from here: `since` is inclusive, so nothing of this page is missed
                _save_since(store, key, last)
            if len(report.fetched) >= max_threads and page.next_url:
                raise PageCapReached(f"{len(report.fetched):,} threads fetched, the most one run stores")
    except PageCapReached as exc:
        report.complete = False
        report.stopped = (f"{exc}; what was fetched is saved: run the same command again to continue"
                          + (f" from the issues updated since {last}" if last else ""))
    except (RateLimited, KeyboardInterrupt) as exc:
        report.complete = False
        report.stopped = str(exc) or "interrupted"
        if isinstance(exc, KeyboardInterrupt):
            raise
    finally:
        report.requests = client.requests
        store.compact()
    if report.complete and last:
        # Done: the next run starts just after the newest change seen, so it refetches nothing.
        _save_since(store, key, _plus_one_second(last))
    return report


def _thread(repo: str, item: dict, client: GitHubClient) -> dict:
    number = issue_number(item["number"])
    closed = str(item.get("state")).lower() == "closed"
    comments: list = []
    if item.get("comments"):
        try:  # as many pages as MAX_COMMENTS fill, even if they come half empty
            for page in client.pages(f"repos/{repo}/issues/{number}/comments", {"per_page": PER_PAGE},
                                     max_pages=MAX_COMMENTS // PER_PAGE + 2):
                comments += page.data if isinstance(page.data, list) else []
                if len(comments) >= MAX_COMMENTS:
                    break
        except PageCapReached:
            pass  # the comments read so far are the thread's
    closed_by = closing_change(repo, item, client) if closed and item.get("state_reason") == "completed" else None
    return from_api_issue(repo, item, comments, closed_by)


def _save_since(store: ThreadStore, key: str, value: str) -> None:
    state = store.state()
    state.setdefault("since", {})[key] = value
    state["repo"] = store.repo
    state["synced_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    store.save_state(state)


def iso_time(date: str) -> str:
    """--since as the API wants it (ISO 8601): a bare date means its midnight UTC."""
    try:
        parsed = datetime.fromisoformat(date.replace("Z", "+00:00"))
    except ValueError:
        raise GitHubError(f"--since {date!r} is not a date: give it as YYYY-MM-DD or an ISO time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _plus_one_second(stamp: str) -> str:
    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    return (parsed + timedelta(seconds=1)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
