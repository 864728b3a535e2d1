"""`rlhelper sync`: bring every source an index records up to date, and say what changed.

    report = sync_index(index)                 # docs from git, threads from GitHub
    report.sources                             # per collection: up to date, updated, or failed and why
    report.changes                             # per collection: sections added, changed, removed, renamed
    report.lines(), report.to_dict()           # in words, and for cron (--json)

    report, read = ingest_git(spec, "verl", index=index)      # `rlhelper ingest --git`: add or replace one

Where the sources are recorded: each collection's record in the index manifest carries a `sync`
record (git: URL, ref, paths, the commit read and what the ref named; GitHub: the repository and the
options it was fetched with). A sync reads them, asks each upstream what changed (a git source whose
ref names what it named last time costs one round trip; threads are fetched since the last
`updated_at`), and runs one ingest of the collections that moved: only their changed documents are
parsed, only their changed sections embedded.

What a failure leaves behind: the whole sync holds the index lock (a second sync waits for the first,
then finds nothing left to do), and a source that cannot be fetched (unreachable, credentials, a
rewritten history, a path gone) keeps its collection as it was while the others go on; its message
says what to run. The index is swapped in by one rename (index/build.py), so a sync killed at any
point leaves the previous index serving.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .. import config
from ..errors import ConfigError, GitHubError, GitSourceError, IndexMissingError
from ..index.folders import GITHUB_SOURCE, live_folder, read_manifest
from ..index.lock import index_lock
from .changes import DEFAULT_MAX_TOKENS, parser_fingerprint
from .git.checkout import now_iso
from .git.remote import GitSpec
from .git.source import KIND as GIT
from .git.source import GitRead, read_git
from .sections import SectionChanges, in_words
from .sources import Sources

GITHUB = "github"
GITHUB_EXPORT = "github-export"  # threads read from a saved `gh` export: nothing to fetch
SYNC_LOCK_TIMEOUT = 900.0  # a sync waits this long for another one (or an ingest) to finish
PARALLEL = 4  # sources asked at once: their round trips overlap


@dataclass
class SourceResult:
    collection: str
    kind: str  # "git" or "github"
    where: str  # the URL and ref, or the repository
    status: str = "up to date"  # "up to date", "updated", "failed"
    commit: str | None = None  # git: the commit the index holds afterwards
    previous: str | None = None  # git: the commit it held before
    message: str = ""  # a failure: what happened and what to run
    notes: list[str] = field(default_factory=list)
    fetched_bytes: int | None = None  # git: what the fetch brought into the checkout
    fetched_threads: int | None = None  # GitHub: threads fetched

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class SyncReport:
    index: Path
    sources: list[SourceResult] = field(default_factory=list)
    changes: dict[str, SectionChanges] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    embedded: int = 0  # sections embedded (the others kept their vectors)
    written: bool = False
    seconds: float = 0.0
    ingest: object | None = None  # the pipeline's IngestReport, when one ran

    @property
    def failed(self) -> list[SourceResult]:
        return [s for s in self.sources if s.status == "failed"]

    def to_dict(self) -> dict:
        return {"index": str(self.index), "ok": not self.failed, "written": self.written,
                "embedded": self.embedded, "seconds": round(self.seconds, 3),
                "sources": [s.to_dict() for s in self.sources],
                "changes": {name: c.to_dict() for name, c in self.changes.items()}, "notes": self.notes}

    def lines(self) -> list[str]:
        """What the sync did, a line per source, then per collection what changed."""
        out = []
        for s in self.sources:
            if s.status == "failed":
                out.append(f"{s.collection}: failed: {s.message}")
            elif s.status == "updated" and s.kind == GIT:
                moved = f"{(s.previous or '')[:12]} -> {(s.commit or '')[:12]}" if s.previous != s.commit \
                    else f"at {(s.commit or '')[:12]}"
                out.append(f"{s.collection}: {s.where}: {moved}")
            elif s.status == "updated":
                out.append(f"{s.collection}: {s.where}: {s.fetched_threads or 0} thread(s) fetched")
            else:
                at = f" at {s.commit[:12]}" if s.commit else ""
                out.append(f"{s.collection}: {s.where}: up to date{at}")
        for name, changes in self.changes.items():
            if changes:
                out.append(in_words(name, changes))
        updated = [s for s in self.sources if s.status == "updated"]
        if updated and not any(self.changes.get(s.collection) for s in updated):
            out.append("no section changed")
        return out


# --- what an index records ---------------------------------------------------------------------

def recorded_sources(manifest: dict) -> list[tuple[str, str, dict]]:
    """(collection, kind, sync record) of every collection with a source to sync, in manifest order.
    GitHub threads ingested before sync records existed are found by their `github:` source."""
    found = []
    for name, info in (manifest.get("collections") or {}).items():
        record = info.get("sync") if isinstance(info.get("sync"), dict) else {}
        if record.get("kind") == GIT:
            found.append((name, GIT, record))
        elif record.get("kind") == GITHUB or not record and str(info.get("source", "")).startswith(GITHUB_SOURCE):
            repo = record.get("repo") or str(info.get("source", ""))[len(GITHUB_SOURCE):]
            found.append((name, GITHUB, {**record, "kind": GITHUB, "repo": repo}))
    return found


def github_record(repo: str, *, labels: str | None, include_unresolved: bool, api_url: str | None,
                  token_env: str | None, store, exported: bool = False) -> dict:
    """The sync record of a collection of GitHub threads (the token's variable name, never its value),
    from its thread store (read one thread at a time). Threads read from a saved export are not
    fetched by a sync (kind "github-export")."""
    issues_file = store.issues_file
    latest = max((str(t.get("updated_at") or "") for _, t in store.threads()), default="") or None
    return {"kind": GITHUB_EXPORT if exported else GITHUB, "repo": repo, "labels": labels, "include_unresolved": bool(include_unresolved),
            "api_url": api_url, "token_env": token_env, "synced_at": now_iso(), "updated_at": latest,
            "store": store_signature(issues_file)}


def store_signature(file: Path) -> str | None:
    """The thread store's content hash: a sync rewrites (compacts) the file even when nothing changed."""
    digest = hashlib.sha256()
    try:
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _documents_of(manifest: dict | None, collection: str) -> dict[str, dict]:
    return {d["doc"]: d for d in (manifest or {}).get("documents", []) if d.get("collection") == collection}


def shaped_otherwise(manifest: dict) -> bool:
    """Whether this rlhelper would cut or tokenize the documents otherwise than the index's build did (another
    parser or tokenizer: the fingerprint covers both; another max_tokens): its git documents are then read
    again, even at the same commit."""
    settings = manifest.get("settings") or {}
    return (settings.get("parser"), settings.get("max_tokens")) != \
        (parser_fingerprint(), int(config.setting("max_tokens", default=DEFAULT_MAX_TOKENS)))


def current_manifest(path: Path) -> dict | None:
    """The live manifest (checked), or None when there is no index yet."""
    folder = live_folder(path)
    if folder is None:
        return None
    try:
        return read_manifest(path, folder)
    except IndexMissingError:
        return None


# --- one source --------------------------------------------------------------------------------

def _sync_git(name: str, record: dict, manifest: dict, reread: bool) -> tuple[Sources | None, SourceResult]:
    try:
        spec = GitSpec.from_record(record)
    except ConfigError as exc:
        return None, SourceResult(name, GIT, str(record.get("url")), "failed",
                                  message=f"its record in the manifest is not usable ({exc}); read it again with "
                                          "`rlhelper ingest --git URL --collection NAME`")
    result = SourceResult(name, GIT, spec.display(), previous=record.get("commit"), commit=record.get("commit"))
    try:
        read: GitRead = read_git(spec, name, recorded=record, previous_docs=_documents_of(manifest, name),
                                 reread=reread)
    except GitSourceError as exc:
        result.status, result.message = "failed", str(exc)
        return None, result
    result.notes += read.notes
    if read.unchanged:
        return None, result
    result.status, result.commit = "updated", read.record["commit"]
    result.fetched_bytes = read.record.get("fetched_bytes")
    return read.sources, result


def _sync_github(name: str, record: dict, notify) -> tuple[Sources | None, SourceResult]:
    from .github.entries import thread_sources
    from .github.source import update_threads

    repo = str(record.get("repo") or "")
    result = SourceResult(name, GITHUB, f"GitHub issues of {repo}")
    try:
        update = update_threads(repo, labels=record.get("labels"), api_url=record.get("api_url"),
                                token_env=record.get("token_env"), notify=notify)
    except GitHubError as exc:
        result.status = "failed"
        result.message = f"{exc}; nothing changed in the index: run `rlhelper sync` again when GitHub answers"
        return None, result
    result.fetched_threads, result.notes = update.fetched, list(update.notes)
    if update.stopped:
        result.notes.append(f"stopped early ({update.stopped}): what was fetched is indexed; `rlhelper sync` "
                            "resumes")
    if not update.fetched and record.get("store") == store_signature(update.store.issues_file):
        return None, result  # nothing new, and the index holds what the store holds
    sources = thread_sources(update.store, update.store.repo, collection=name,
                             include_unresolved=bool(record.get("include_unresolved")),
                             renamed_from=update.renamed_from)
    sources.collections[name]["sync"] = github_record(
        update.store.repo, labels=record.get("labels"), include_unresolved=bool(record.get("include_unresolved")),
        api_url=record.get("api_url"), token_env=record.get("token_env"), store=update.store)
    result.status = "updated"
    return sources, result


def merged(parts: list[Sources]) -> Sources:
    found = Sources()
    for part in parts:
        found.docs += part.docs
        found.replaced |= part.replaced
        found.collections.update(part.collections)
        found.notes += part.notes
        found.failed += part.failed
        found.not_followed += part.not_followed
    return found


# --- the whole index ---------------------------------------------------------------------------

def sync_index(index: Path | str | None = None, *, embedder: str | None = None, progress=None,
               lock_timeout: float | None = None, notify=lambda message: None) -> SyncReport:
    """Bring every recorded source of `index` up to date (see the module docstring)."""

    started = time.perf_counter()
    path = config.resolve_index(index)
    report = SyncReport(path)
    timeout = lock_timeout if lock_timeout is not None else \
        float(config.setting("lock_timeout", default=SYNC_LOCK_TIMEOUT))
    with index_lock(path, timeout=timeout):
        manifest = current_manifest(path)
        if manifest is None:
            raise IndexMissingError(f"No index at {path} to sync: build one first (`rlhelper ingest`, then "
                                    "`rlhelper ingest --git URL --collection NAME`).")
        sources = recorded_sources(manifest)
        if not sources:
            raise ConfigError(f"{path} records no source to sync: add one with `rlhelper ingest --git URL "
                              "[--ref REF] [--path DIR] --collection NAME` or `rlhelper ingest --github OWNER/REPO`.")
        reread = shaped_otherwise(manifest)

        def one(item):
            name, kind, record = item
            return _sync_git(name, record, manifest, reread) if kind == GIT else _sync_github(name, record, notify)

        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(sources))) as pool:
            outcomes = list(pool.map(one, sources))
        report.sources = [result for _, result in outcomes]
        found = [docs for docs, _ in outcomes if docs is not None]
        if found:
            from .pipeline import ingest  # numpy, FAISS and the embedder: only when something changed

            ingested = ingest(index=path, documents=merged(found), embedder=embedder, progress=progress, locked=True)
            report.ingest = ingested
            report.embedded, report.written = ingested.embedded, ingested.written
            report.changes = {name: ingested.section_changes[name] for docs in found for name in docs.collections
                              if name in ingested.section_changes}
            report.notes += ingested.notes
            report.notes += [f"skipped: {where}: {why}" for where, why in [*ingested.failed, *ingested.not_followed]]
            report.notes += learned_questions_gone(report.changes)
    for s in report.sources:
        report.notes += [f"{s.collection}: {note}" for note in s.notes]
    report.seconds = time.perf_counter() - started
    return report


def learned_questions_gone(changes: dict[str, SectionChanges]) -> list[str]:
    """The user's learned questions (votes) whose section upstream renamed or removed, a line per section."""
    from ..index.userbank import UserBank

    gone = {(name, ref.doc, ref.heading): ("renamed to “" + new.heading + "”" if new else "removed")
            for name, c in changes.items()
            for ref, new in [*((r, None) for r in c.removed), *c.renamed]}
    if not gone:
        return []
    try:
        records = UserBank().records()
    except Exception:  # noqa: BLE001 - the user's bank is read for a note; a damaged one is reported elsewhere
        return []
    counts = Counter((r.collection, r.doc, r.heading) for r in records if (r.collection, r.doc, r.heading) in gone)
    return [f"your question bank: {n} question(s) learned for “{heading}” in {collection}/{doc}, which upstream "
            f"{gone[(collection, doc, heading)]}: they no longer lead to an entry (`rlhelper questions list` shows "
            "them, `rlhelper questions remove ID` removes them)" for (collection, doc, heading), n in counts.items()]


def ingest_git(spec: GitSpec, collection: str, *, index: Path | str | None = None, embedder: str | None = None,
               rebuild: bool = False, progress=None, llm=None, lock_timeout: float | None = None):
    """`rlhelper ingest --git`: fetch `spec` and (re)place `collection` with its docs, under the index lock.
    Returns (IngestReport, GitRead). Raises GitSourceError, leaving the index as it was, when the fetch fails."""
    from .pipeline import ingest

    path = config.resolve_index(index)
    with index_lock(path, timeout=lock_timeout):
        try:
            manifest = None if rebuild else current_manifest(path)
        except Exception:  # noqa: BLE001 - a damaged index is rebuilt by the pipeline, which says so
            manifest = None
        read = read_git(spec, collection, previous_docs=_documents_of(manifest, collection), reread=True,
                        retry="this command again")
        report = ingest(index=path, documents=read.sources, embedder=embedder, rebuild=rebuild, progress=progress,
                        llm=llm, locked=True)
    return report, read
