"""A git source as ingest's documents: fetch what changed upstream, read the docs under the paths.

    read = read_git(spec, "verl", recorded=record, previous_docs=records)
    read.sources     # ingest.Sources of the collection (None: upstream has not moved since `record`)
    read.record      # the collection's new sync record for the manifest

The documents keep the parsers and incremental rules of a local folder: each is a SourceDoc with its
text, so the pipeline hashes it and re-parses only what changed. A document whose text did not change
keeps the commit it was read at before (its `meta`), so its hash, entries and vectors stay as they
are, and its citations still point at lines that hold its text; a changed or new one is cited at the
new commit. The collection's record holds the commit read (`commit`), what the ref named upstream
(`remote_id`, compared by the next sync in one round trip) and when.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ...errors import DocumentError, GitSourceError
from ..changes import content_sha256
from ..entries import read_document
from ..sources import DOC_SUFFIXES, SourceDoc, Sources, files_below, link_problem
from .checkout import Checkout, now_iso
from .remote import GitSpec, blob_base, framework_of, no_link_reason, repo_name, web_kind

KIND = "git"


@dataclass
class GitRead:
    spec: GitSpec
    collection: str
    record: dict
    sources: Sources | None = None  # None: nothing to read, the index holds this commit already
    notes: list[str] = field(default_factory=list)

    @property
    def unchanged(self) -> bool:
        return self.sources is None


def same_source(record: dict | None, spec: GitSpec) -> bool:
    """Whether a collection's sync record is of this URL, ref and paths."""
    return bool(record) and record.get("kind") == KIND and record.get("url") == spec.url \
        and record.get("ref") == spec.ref and list(record.get("paths") or []) == list(spec.paths)


def read_git(spec: GitSpec, collection: str, *, recorded: dict | None = None, previous_docs: dict | None = None,
             reread: bool = False, root: Path | None = None, retry: str = "`rlhelper sync`") -> GitRead:
    """Bring the checkout of `spec` up to date and read its docs for `collection`.

    `recorded`: the collection's sync record in the index (None: read it afresh, as `ingest --git`
    does). When it is this source's, a ref that names what it named then returns unchanged after one
    round trip (unless `reread`), and a new commit that does not descend from the recorded one raises
    GitSourceError (a rewritten history). `previous_docs`: doc -> the manifest's record of the
    collection's documents, whose metadata an unchanged document keeps.
    """
    checkout = Checkout(spec, root, retry=retry)
    follow = same_source(recorded, spec)
    with checkout.locked():
        head = checkout.resolve()
        checkout.save_state(checked_at=now_iso(), remote_id=head.remote_id)
        if follow and not reread and recorded.get("remote_id") == head.remote_id and recorded.get("commit"):
            return GitRead(spec, collection, recorded)
        commit = checkout.fetch(head, since=recorded if follow else None)
        checkout.check_paths(commit)
        checkout.check_out(commit)
        committed_at = checkout.commit_time(commit)
        store = checkout.store_bytes()
        record = {"kind": KIND, **spec.to_record(), "commit": commit, "committed_at": committed_at,
                  "remote_id": head.remote_id, "synced_at": now_iso(), "web": web_kind(spec.url),
                  "fetched_bytes": checkout.fetched_bytes, "store_bytes": store, "checkout": str(checkout.folder)}
        sources = _documents(checkout, collection, commit, record, previous_docs or {})
        checkout.save_state(commit=commit, store_bytes=store)
    read = GitRead(spec, collection, record, sources, checkout.notes)
    if blob_base(spec.url, commit) is None:
        read.notes.append(f"no web link for citations: {no_link_reason(spec.url)}; answers cite the "
                          "file and its lines")
    return read


def _meta(spec: GitSpec, doc: str, commit: str) -> dict:
    meta = {"framework": framework_of(spec.url), "repo_path": doc, "commit": commit, "git": spec.url}
    web = blob_base(spec.url, commit)
    if web:
        meta["web"] = web
    return meta


def _documents(checkout: Checkout, collection: str, commit: str, record: dict, previous: dict) -> Sources:
    spec, root = checkout.spec, checkout.repo
    found = Sources()
    found.replaced.add(collection)
    found.collections[collection] = {"title": f"{repo_name(spec.url)} docs from git", "source": spec.url,
                                     "whole_folder": True, "sync": record}
    top = root.resolve()
    seen: set[str] = set()
    for path in spec.paths or ("",):
        target = root / path if path else root
        if target.is_symlink():
            found.not_followed.append((f"{collection}/{path}", link_problem(target, top) or
                                       "a link to a folder: not followed"))
            continue
        files = [target] if target.is_file() else sorted(files_below(target, found, top)) if target.is_dir() else []
        docs = [f for f in files if f.suffix.lower() in DOC_SUFFIXES]
        if not docs:
            found.notes.append(f"{collection}: no .md, .mdx, .rst or .txt document under {path or 'the repository'} "
                               f"at {commit[:12]}")
        for file in docs:
            doc = file.relative_to(root).as_posix()
            if doc in seen:
                continue
            seen.add(doc)
            found.docs.append(_document(spec, collection, doc, file, commit, previous.get(doc)))
    if not found.docs:
        # Read as it is, the collection would leave the index, and its record with it: refuse instead.
        where = ", ".join(spec.paths) or "the repository"
        raise GitSourceError(f"no .md, .mdx, .rst or .txt document under {where} at {commit[:12]} of {spec.url}: "
                             f"nothing changed in the index. Give the paths the docs are under: "
                             f"{checkout.reingest_command(paths=['NEW/PATH'])}")
    return found


def _document(spec: GitSpec, collection: str, doc: str, file: Path, commit: str, before: dict | None) -> SourceDoc:
    meta = _meta(spec, doc, commit)
    try:
        text = read_document(file)
    except DocumentError:
        # The pipeline reads it again and reports why; the document keeps the entries it had.
        return SourceDoc(collection, doc, file, meta)
    if before and before.get("content_sha256") == content_sha256(text) and isinstance(before.get("meta"), dict):
        kept = before["meta"]
        unchanged_keys = ("framework", "repo_path", "git")
        if all(kept.get(k) == meta.get(k) for k in unchanged_keys) and bool(kept.get("web")) == bool(meta.get("web")):
            meta = kept  # same text: keep the commit it was read at, and so its hash and entries
    return SourceDoc(collection, doc, file, meta, text=text)
