"""Where a synced collection comes from and how far behind upstream it is, as far as can be told offline
(`rlhelper info`): no network, only the manifest's record and what the last check left on disk.

    source_status(collection_record) -> {"kind", "url"/"repo", ..., "behind": "..."}   ({} for a folder)
    source_lines(status)             -> the lines `rlhelper info` prints under the collection

What can be known offline: the commit the index holds and its date; when upstream was last asked and
what its ref named then (the checkout's state.json, written by every sync and ingest, also one that
failed afterwards); for GitHub threads, when they were fetched and whether the thread store holds
more than the index (a sync stopped before indexing). How many commits upstream has made since the
last check cannot be known without asking it: `rlhelper sync` does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ..errors import ConfigError
from ..index.folders import GITHUB_SOURCE

SHOWN_KEYS = ("kind", "url", "ref", "paths", "commit", "committed_at", "synced_at", "web", "repo", "labels",
              "updated_at", "include_unresolved")


def ago(iso: str | None, now: datetime | None = None) -> str:
    """"5 min ago", "3 h ago", "2 days ago"; "" for no time."""
    if not iso:
        return ""
    try:
        then = datetime.strptime(str(iso)[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return ""
    seconds = max(0.0, ((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


def source_status(meta: dict) -> dict:
    record = meta.get("sync") if isinstance(meta.get("sync"), dict) else {}
    if not record.get("kind"):
        source = str(meta.get("source") or "")
        if not source.startswith(GITHUB_SOURCE):
            return {}  # a folder: status.py compares its files
        record = {"kind": "github", "repo": source[len(GITHUB_SOURCE):]}
    status = {k: record[k] for k in SHOWN_KEYS if k in record}
    status["behind"] = _git_behind(record) if record["kind"] == "git" else _github_behind(record)
    return status


def _git_behind(record: dict) -> str:
    from .git.remote import GitSpec

    try:
        spec = GitSpec.from_record(record)
    except ConfigError as exc:
        return f"its record is not usable ({exc})"
    if spec.pinned:
        return "pinned to a commit: a sync never moves it"
    from .git.checkout import STATE_FILE, Checkout, read_json_object

    folder = Path(record.get("checkout") or Checkout(spec).folder)
    state = read_json_object(folder / STATE_FILE)
    checked, seen = state.get("checked_at"), state.get("remote_id")
    if seen and record.get("remote_id") and seen != record["remote_id"]:
        return (f"behind: upstream had moved to {seen[:12]} when last checked ({ago(checked)}); `rlhelper sync` "
                "brings it in")
    if checked:
        return f"up to date when last checked ({ago(checked)})"
    return f"synced {ago(record.get('synced_at'))}".strip()


def _github_behind(record: dict) -> str:
    if record.get("kind") == "github-export":
        return "read from a saved export: `rlhelper ingest --github REPO --github-export FILE` reads a newer one"
    if not record.get("synced_at"):
        return "fetched by `rlhelper ingest --github`; `rlhelper sync` fetches what changed since"
    from .github.threads import ThreadStore
    from .sync import store_signature

    try:
        file = ThreadStore(str(record.get("repo") or "")).issues_file
    except Exception:  # noqa: BLE001 - a damaged record: say so rather than fail `info`
        return "its record is not usable"
    latest = f", threads updated up to {record['updated_at'][:10]}" if record.get("updated_at") else ""
    if record.get("store") and store_signature(file) != record["store"]:
        return (f"behind: the thread store changed since the index was written (synced {ago(record['synced_at'])}"
                f"{latest}); `rlhelper sync` indexes it")
    return f"synced {ago(record['synced_at'])}{latest}"


def source_lines(status: dict) -> list[str]:
    if status.get("kind") == "git":
        paths = f" ({', '.join(status['paths'])})" if status.get("paths") else ""
        lines = [f"from git {status.get('url')} @ {status.get('ref') or 'default branch'}{paths}"]
        commit = f"commit {str(status.get('commit') or '')[:12]} of {str(status.get('committed_at') or '')[:10]}"
        web = "" if status.get("web") else "; citations without a web link"
        lines.append(f"{commit}{web}; {status.get('behind')}")
        return lines
    labels = f" labelled {status['labels']}" if status.get("labels") else ""
    return [f"from GitHub issues of {status.get('repo')}{labels}", str(status.get("behind") or "")]
