"""The four frameworks' issue trackers, added to an index in one run: `rlhelper trackers`.

    report = add_trackers(index, notify=print)      # verl, slime, SkyRL, RLinf
    report.repos["verl-project/verl"].fetched, report.stopped, report.ingest

Each repository's threads are fetched into its thread store (fetch.py: a page at a time, its resume
point saved after each), then all four are indexed in one ingest, each as `github:OWNER/REPO` with
the sync record `rlhelper sync` follows. The token: GITHUB_TOKEN, else `gh auth token`.

Interrupted (^C, a network failure, the rate limit spent until an hour away), the threads fetched so
far stay stored; running the command again goes on from each store's resume point, and a tracker
already fetched costs one request. When the rate limit stops one tracker, the others are not asked
(they share the limit): what the stores hold is indexed, and the message says when to run it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ... import config
from ...errors import GitHubError
from .client import RateLimited
from .source import api_token, update_threads
from .threads import ThreadStore

TRACKERS = ("verl-project/verl", "THUDM/slime", "NovaSky-AI/SkyRL", "RLinf/RLinf")


@dataclass
class TrackerResult:
    repo: str
    fetched: int = 0
    requests: int = 0
    stored: int = 0
    status: str = "fetched"  # "fetched", "stopped" (resumable), "not asked" (the limit was spent), "failed"
    message: str = ""
    counts: dict = field(default_factory=dict)  # what the index holds of it (entries.THREAD_COUNTS)


@dataclass
class TrackersReport:
    repos: dict[str, TrackerResult] = field(default_factory=dict)
    stopped: str | None = None  # why the run stopped early: run it again to go on
    ingest: object | None = None  # the pipeline's IngestReport
    token: bool = False  # a token was found (never its value)


def add_trackers(index: Path | str | None = None, *, repos: tuple[str, ...] = TRACKERS, since: str | None = None,
                 api_url: str | None = None, embedder: str | None = None, progress=None,
                 notify: Callable[[str], None] = lambda message: None, root: Path | None = None) -> TrackersReport:
    """Fetch each tracker into its store (resuming where a previous run stopped), then index them all."""
    from ..pipeline import ingest
    from ..sync import github_record, merged
    from .entries import thread_sources

    report = TrackersReport(token=api_token(None) is not None)
    if not report.token:
        notify("no GITHUB_TOKEN and no `gh auth token`: GitHub allows 60 requests an hour without one, which "
               "fetches a few dozen threads; set GITHUB_TOKEN (or `gh auth login`) and run this again")
    found = []
    for repo in repos:
        result = report.repos.setdefault(repo, TrackerResult(repo))
        if report.stopped:
            result.status, result.message = "not asked", "the rate limit is spent: run the same command again"
        else:
            _fetch(repo, result, report, since, api_url, notify, root)
        store = ThreadStore(result.repo, root)
        result.stored = store.count()
        if not result.stored:
            continue
        sources = thread_sources(store, store.repo)
        for info in sources.collections.values():
            result.counts = dict(info.get("threads") or {})
            info["sync"] = github_record(store.repo, labels=None, include_unresolved=False, api_url=api_url,
                                         token_env=None, store=store)
        found.append(sources)
    if found:
        report.ingest = ingest(index=config.resolve_index(index), documents=merged(found), embedder=embedder,
                               progress=progress)
    return report


def _fetch(repo: str, result: TrackerResult, report: TrackersReport, since, api_url, notify, root) -> None:
    def page(fetched: int) -> None:
        notify(f"{repo}: {fetched:,} thread(s) fetched")

    try:
        update = update_threads(repo, since=since, api_url=api_url, notify=notify, root=root, on_page=page)
    except RateLimited as exc:
        result.status, result.message, report.stopped = "stopped", str(exc), str(exc)
        return
    except GitHubError as exc:
        result.status, result.message = "failed", str(exc)
        return
    result.repo = update.store.repo  # a renamed repository: its name today
    result.fetched, result.requests = update.fetched, update.requests
    if update.stopped:
        result.status, result.message = "stopped", update.stopped
        if "rate limit" in update.stopped:
            report.stopped = update.stopped
