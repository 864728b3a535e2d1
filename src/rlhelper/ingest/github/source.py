"""Bring a repository's stored threads up to date: from the API, or from saved exports.

    update = update_threads("verl-project/verl", exports=[], since=None, labels=None,
                            api_url=None, token_env=None, notify=print, aliases={})
    update.store, update.fetched, update.notes, update.stopped, update.renamed_from

A renamed repository is read under its new name: the API says so (GET /repos/OLD answers
with the new `full_name`, through its redirect), an export saved before the rename is
named by `aliases` (`--github-alias OLD=NEW`). Threads stored under the old name move to
the new name's folder, and the old collection leaves the index (entries.thread_sources).

Where the API is: `api_url`, else GITHUB_API_URL, else https://api.github.com.
The token: the variable `token_env` names (an error when it is not set), else
GITHUB_TOKEN when set, else what `gh auth token` prints (the GitHub CLI's login, when `gh` is
installed and logged in), else none (GitHub allows 60 requests an hour without one).

A repository synced before is not asked for its name again (a no-change sync is one request):
its issues listing answering from another path (GitHub's 301 for a renamed repository) is what
makes the run ask.
The bounds of a run (client.py, fetch.py): RLHELPER_GITHUB_TIMEOUT (seconds, in all, per request;
30), RLHELPER_GITHUB_MAX_PAGES (of one listing; 500), RLHELPER_GITHUB_MAX_THREADS (stored; 5,000),
or the same names in the config file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ... import config
from ...errors import GitHubError
from .client import DEFAULT_API_URL, MAX_PAGES, TIMEOUT, GitHubClient
from .export import read_exports
from .fetch import MAX_THREADS, Renamed, iso_time, sync
from .threads import ThreadStore, check_repo

DEFAULT_TOKEN_ENV = "GITHUB_TOKEN"


@dataclass
class Update:
    store: ThreadStore
    fetched: int = 0  # threads fetched or read in this run
    requests: int = 0
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None  # the sync stopped early (rate limit): run again to resume
    renamed_from: list[str] = field(default_factory=list)  # old names of the repository read here


def api_token(token_env: str | None) -> str | None:
    """The token's value (never shown anywhere), from the variable named, or GITHUB_TOKEN, or `gh auth token`."""
    if token_env:
        value = os.environ.get(token_env, "")
        if not value:
            raise GitHubError(f"--github-token-env names {token_env}, which is not set: export it, or leave the "
                              "option out to use GITHUB_TOKEN (or no token)")
        return value
    return os.environ.get(DEFAULT_TOKEN_ENV) or gh_cli_token()


GH_TIMEOUT = 10.0  # seconds for `gh auth token`


def gh_cli_token() -> str | None:
    """The GitHub CLI's token (`gh auth token`), or None when gh is absent, logged out or slow."""
    gh = shutil.which("gh")
    if not gh:
        return None
    try:
        done = subprocess.run([gh, "auth", "token"], capture_output=True, text=True, timeout=GH_TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    token = done.stdout.strip() if done.returncode == 0 else ""
    return token if token and len(token) < 256 and token.isprintable() and " " not in token else None


def parse_aliases(pairs) -> dict[str, str]:
    """{"OLD/NAME": "NEW/NAME"} from `--github-alias OLD=NEW` values."""
    aliases = {}
    for pair in pairs or ():
        old, sep, new = str(pair).partition("=")
        if not sep:
            raise GitHubError(f"--github-alias {pair!r} is not OLD=NEW, e.g. volcengine/verl=verl-project/verl")
        aliases[check_repo(old)] = check_repo(new)
    return aliases


def update_threads(repo: str, *, exports: list[Path] | tuple = (), since: str | None = None,
                   labels: str | None = None, api_url: str | None = None, token_env: str | None = None,
                   notify: Callable[[str], None] = lambda message: None, root: Path | None = None,
                   aliases: dict[str, str] | None = None,
                   on_page: Callable[[int], None] = lambda fetched: None) -> Update:
    repo = check_repo(repo)
    if since:
        iso_time(since)  # a bad date is said before any request
    aliases = dict(aliases or {})
    repo = next((new for old, new in aliases.items() if old.lower() == repo.lower()), repo)
    if exports:
        update = Update(ThreadStore(repo, root))
        _adopt_old_stores(update, [old for old, new in aliases.items() if new.lower() == repo.lower()], root, notify)
        threads, update.notes = read_exports(list(exports), repo, aliases)
        threads = [t for t in threads if _wanted(t, since, labels)]
        update.store.append(threads)
        update.store.compact()
        update.fetched = len(threads)
        return update
    token = api_token(token_env)
    client = GitHubClient(api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL, token, notify=notify,
                          timeout=_bound("github_timeout", TIMEOUT, float),
                          max_pages=_bound("github_max_pages", MAX_PAGES, int))
    synced_before = bool(ThreadStore(repo, root).state().get("since"))
    current = repo if synced_before else current_name(repo, client)
    renamed = current.lower() != repo.lower()
    if renamed:
        notify(f"{repo} is now {current} (GitHub redirects the old name): its threads are stored and indexed as "
               f"{current}'s")
    update = Update(ThreadStore(current if renamed else repo, root))
    _adopt_old_stores(update, [repo] if renamed else [], root, notify)
    store = update.store
    if token is None:
        update.notes.append("no GITHUB_TOKEN: GitHub allows 60 requests an hour without one")
    try:
        report = sync(store.repo, store, client, since=since, labels=labels,
                      max_threads=_bound("github_max_threads", MAX_THREADS, int), on_page=on_page)
    except Renamed:  # synced before under a name GitHub now redirects: ask the new one, then start again
        if renamed:
            raise GitHubError(f"{repo}: GitHub keeps redirecting its issues; run the same command again") from None
        current = current_name(repo, client)
        if current.lower() == repo.lower():
            raise GitHubError(f"{repo}: its issues moved but the repository kept its name; run the same command "
                              "again") from None
        notify(f"{repo} is now {current} (GitHub redirects the old name): its threads are stored and indexed as "
               f"{current}'s")
        update = Update(ThreadStore(current, root))
        _adopt_old_stores(update, [repo], root, notify)
        store = update.store
        report = sync(store.repo, store, client, since=since, labels=labels,
                      max_threads=_bound("github_max_threads", MAX_THREADS, int), on_page=on_page)
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


def current_name(repo: str, client: GitHubClient) -> str:
    """The repository's name now: GET /repos/OWNER/REPO follows a rename's redirect to the new one."""
    data = client.get(client.url(f"repos/{repo}")).data
    name = data.get("full_name") if isinstance(data, dict) else None
    try:
        return check_repo(name) if isinstance(name, str) else repo
    except GitHubError:
        return repo


def _adopt_old_stores(update: Update, old_names: list[str], root: Path | None,
                      notify: Callable[[str], None]) -> None:
    """Threads stored under an old name of the repository move to the new name's folder (once)."""
    for old in old_names:
        previous = ThreadStore(old, root)
        if old.lower() == update.store.repo.lower():
            continue
        update.renamed_from.append(old)
        if previous.folder.is_dir() and not update.store.folder.exists():
            update.store.folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.replace(previous.folder, update.store.folder)
            notify(f"threads stored for {old} moved to {update.store.folder}")


def _wanted(thread: dict, since: str | None, labels: str | None) -> bool:
    """An exported thread within --since and --labels (all of them, as the API filters)."""
    if since and str(thread.get("updated_at") or thread.get("closed_at") or "") < iso_time(since):
        return False
    wanted = {label.strip() for label in (labels or "").split(",") if label.strip()}
    return wanted <= set(thread.get("labels") or [])
