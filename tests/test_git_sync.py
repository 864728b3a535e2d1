"""Docs from a git repository, kept current: `ingest_git` and `sync_index` against real upstreams made by
the tests (git_upstream.py: a bare repository reached by file://, `git daemon` and smart HTTP on
127.0.0.1), with commits that add, edit, rename and delete sections, a force-push, and a repository
too big to fetch whole. The embedder is the deterministic stand-in (conftest.FakeEmbedder), so the
counts of embedded texts are exact."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from git_upstream import GitDaemon, SmartHTTP, Upstream, isolate

from rlhelper.errors import GitSourceError, IndexLockedError
from rlhelper.index import build
from rlhelper.index.store import Index
from rlhelper.ingest.git.remote import GitSpec
from rlhelper.ingest.sync import ingest_git, sync_index

FAQ = """# Widget FAQ

## Rollout hangs at startup

The rollout workers wait for the zorble service. Start it with `zorble serve` first.

## Loss is NaN after a few steps

Lower the learning rate to 1e-6 and enable gradient clipping (`--clip-grad 1.0`).
"""

INSTALL = """# Installing widgets

## CUDA version mismatch

Install the wheel built for your CUDA version: `pip install widgetrl[cu121]`.
"""


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch):
    isolate(monkeypatch)


@pytest.fixture
def upstream(tmp_path):
    up = Upstream(tmp_path / "upstream", "widget-docs")
    up.commit("first docs", {"docs/faq.md": FAQ, "docs/install.md": INSTALL, "src/widget.py": "print('hi')\n",
                             "README.md": "# Widget\n\nNot under docs/.\n"})
    return up


def _ingest(up_url, index, **kw):
    spec = GitSpec.checked(up_url, kw.pop("ref", None), kw.pop("paths", ["docs"]))
    return ingest_git(spec, kw.pop("collection", "widget"), index=index, embedder="test:fake", **kw)


def _entries(index, collection="widget"):
    return [e for e in Index.load(index).entries if e.collection == collection]


def _collection(index, name="widget"):
    return Index.load(index).manifest["collections"][name]


def test_ingest_reads_only_the_paths_and_records_the_commit(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    report, read = _ingest(upstream.url, index)
    assert report.written and not report.failed
    entries = _entries(index)
    assert {e.doc for e in entries} == {"docs/faq.md", "docs/install.md"}  # not README.md, not src/
    assert {e.heading for e in entries} >= {"Rollout hangs at startup", "CUDA version mismatch"}
    record = _collection(index)["sync"]
    assert record["commit"] == upstream.head() and record["url"] == upstream.url and record["paths"] == ["docs"]
    assert {e.framework for e in entries} == {"widget-docs"}
    # file:// has no web page: no link, and the read says so plainly
    assert {e.url for e in entries} == {None}
    assert any("no web link for citations" in note for note in read.notes)


def test_a_sync_with_nothing_new_asks_once_and_writes_nothing(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    _ingest(upstream.url, index)
    before = os.path.realpath(index)
    report = sync_index(index, embedder="test:fake")
    assert [s.status for s in report.sources] == ["up to date"]
    assert report.ingest is None and not report.written
    assert os.path.realpath(index) == before


def test_sync_adds_edits_renames_and_removes_sections_and_says_so(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    _ingest(upstream.url, index)
    faq = FAQ.replace("Lower the learning rate to 1e-6", "Lower the learning rate to 5e-7")
    faq = faq.replace("## Rollout hangs at startup", "## Rollout hangs while starting")
    faq += "\n## EGL rendering picks the wrong GPU\n\nSet `EGL_DEVICE_ID` to the rank's GPU index.\n"
    new = upstream.commit("faq: new entry, edits", {"docs/faq.md": faq, "docs/install.md": None})
    report = sync_index(index, embedder="test:fake")
    (source,) = report.sources
    assert source.status == "updated" and source.commit == new
    changes = report.changes["widget"]
    assert [r.heading for r in changes.added] == ["EGL rendering picks the wrong GPU"]
    assert [r.heading for r in changes.changed] == ["Loss is NaN after a few steps"]
    assert [(a.heading, b.heading) for a, b in changes.renamed] == [("Rollout hangs at startup",
                                                                      "Rollout hangs while starting")]
    assert {r.heading for r in changes.removed} == {"Installing widgets", "CUDA version mismatch"}
    words = "\n".join(report.lines())
    assert "widget: 1 section added (“EGL rendering picks the wrong GPU”)" in words
    assert "renamed or moved (“Rollout hangs at startup” → “Rollout hangs while starting”)" in words
    # Only what changed is embedded: the new section, the edited one and the renamed one's heading.
    assert report.embedded == 3
    assert {e.doc for e in _entries(index)} == {"docs/faq.md"}
    assert _collection(index)["sync"]["commit"] == new


def test_a_changed_page_reembeds_only_its_changed_sections(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    _ingest(upstream.url, index)
    upstream.commit("install: one more line", {"docs/install.md": INSTALL + "Or build from source.\n"})
    report = sync_index(index, embedder="test:fake")
    assert report.embedded == 1  # the one section of install.md that changed; faq.md is not even parsed
    assert report.ingest.updated == 1 and report.ingest.skipped == 1


def test_unchanged_pages_keep_their_commit_and_changed_ones_are_cited_at_the_new_one(tmp_path, fake_embedder,
                                                                                     monkeypatch):
    up = Upstream(tmp_path / "gh", "verl")
    first = up.commit("docs", {"docs/faq.md": FAQ, "docs/install.md": INSTALL})
    index = tmp_path / "index"
    gh = "https://github.com/verl-project/verl"
    mirror(monkeypatch, gh, up.url)
    _ingest(gh, index, collection="verl")
    added = "\n## EGL rendering picks the wrong GPU\n\nSet `EGL_DEVICE_ID`.\n"
    second = up.commit("faq: EGL", {"docs/faq.md": FAQ + added})
    sync_index(index, embedder="test:fake")
    urls = {e.heading: e.url for e in _entries(index, "verl")}
    assert urls["EGL rendering picks the wrong GPU"] == \
        f"{gh}/blob/{second}/docs/faq.md#egl-rendering-picks-the-wrong-gpu"
    assert urls["Rollout hangs at startup"].startswith(f"{gh}/blob/{second}/docs/faq.md#")
    assert urls["CUDA version mismatch"] == f"{gh}/blob/{first}/docs/install.md#cuda-version-mismatch"


def mirror(mp, public: str, local: str) -> None:
    """git's url.<local>.insteadOf=<public> for this process's git runs: a GitHub-style URL (which makes web
    links) is fetched from the local upstream, as from a mirror."""
    mp.setenv("GIT_CONFIG_COUNT", "1")
    mp.setenv("GIT_CONFIG_KEY_0", f"url.{local}.insteadOf")
    mp.setenv("GIT_CONFIG_VALUE_0", public)


# --- what a fetch that fails leaves behind -------------------------------------------------------


def _live(index):
    return os.path.realpath(index), _collection(index)["sync"]["commit"]


def test_a_force_push_is_refused_and_the_index_kept(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    upstream.commit("faq: more", {"docs/faq.md": FAQ + "\n## Old entry\n\nSoon rewritten away.\n"})
    _ingest(upstream.url, index)
    before = _live(index)
    upstream.rewrite("faq: history rewritten", {"docs/faq.md": FAQ + "\n## New entry\n\nAfter the force-push.\n"})
    report = sync_index(index, embedder="test:fake")
    (source,) = report.sources
    assert source.status == "failed" and not report.written
    assert "was rewritten since the indexed commit" in source.message
    assert f"rlhelper ingest --git {upstream.url} --path docs --collection NAME" in source.message
    assert _live(index) == before
    # Reading it afresh, as the message says, follows the new history.
    _ingest(upstream.url, index)
    assert "New entry" in {e.heading for e in _entries(index)}
    assert sync_index(index, embedder="test:fake").sources[0].status == "up to date"


def test_a_path_gone_upstream_is_refused_and_the_index_kept(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    _ingest(upstream.url, index)
    before = _live(index)
    upstream.rename("docs", "documentation", "move the docs")
    (source,) = sync_index(index, embedder="test:fake").sources
    assert source.status == "failed" and "docs no longer exists at" in source.message
    assert "--path NEW/PATH" in source.message
    assert _live(index) == before


def test_an_unreachable_upstream_is_reported_and_the_other_sources_still_sync(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    other = Upstream(tmp_path / "other", "other-docs")
    other.commit("docs", {"guide.md": "# Guide\n\n## Ray actor died\n\nRaise the actor's memory.\n"})
    with SmartHTTP(upstream.root) as http:
        _ingest(http.url(upstream), index)
    _ingest(other.url, index, paths=[], collection="other")
    other.commit("guide: more", {"guide.md": "# Guide\n\n## Ray actor died\n\nRaise the actor's memory.\n\n"
                                             "## NCCL timeout\n\nSet NCCL_TIMEOUT higher.\n"})
    widget_before = _collection(index)["sync"]["commit"]
    report = sync_index(index, embedder="test:fake")  # the HTTP server is gone: connection refused
    by_name = {s.collection: s for s in report.sources}
    assert by_name["widget"].status == "failed"
    assert "cannot fetch http://127.0.0.1:" in by_name["widget"].message
    assert "When it can be reached again, run `rlhelper sync`" in by_name["widget"].message
    assert by_name["other"].status == "updated"
    assert [r.heading for r in report.changes["other"].added] == ["NCCL timeout"]
    assert _collection(index)["sync"]["commit"] == widget_before
    assert {e.doc for e in _entries(index)} == {"docs/faq.md", "docs/install.md"}


def test_credentials_asked_for_fail_at_once_without_a_prompt(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    with SmartHTTP(upstream.root, password="s3cret") as http:
        started = time.monotonic()
        with pytest.raises(GitSourceError) as caught:
            _ingest(http.url(upstream), index)
    assert time.monotonic() - started < 30
    assert "needs credentials that git could not find without asking" in str(caught.value)
    assert "nothing changed in the index" in str(caught.value)
    assert not index.exists()


def test_a_missing_branch_says_how_to_list_them(tmp_path, upstream, fake_embedder):
    with pytest.raises(GitSourceError, match=r"has no branch or tag 'nope'.*git ls-remote"):
        _ingest(upstream.url, tmp_path / "index", ref="nope")


def test_two_syncs_at_once_are_serialised(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    with SmartHTTP(upstream.root) as http:
        _ingest(http.url(upstream), index)
        upstream.commit("faq: new", {"docs/faq.md": FAQ + "\n## Checkpoint resume fails\n\nPass --resume.\n"})
        http.stall = 0.5  # the first sync holds the lock while it fetches
        results = []
        threads = [threading.Thread(target=lambda: results.append(sync_index(index, embedder="test:fake")))
                   for _ in range(2)]
        for t in threads:
            t.start()
            time.sleep(0.2)
        for t in threads:
            t.join(timeout=120)
    assert sorted(r.sources[0].status for r in results) == ["up to date", "updated"]
    assert sum(r.written for r in results) == 1


def test_a_sync_waits_for_the_lock_then_gives_up_saying_who_holds_it(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    _ingest(upstream.url, index)
    with build.index_lock(index), pytest.raises(IndexLockedError, match="another `rlhelper ingest`"):
        sync_index(index, embedder="test:fake", lock_timeout=0.3)


# --- transports, and how much a fetch brings -----------------------------------------------------


@pytest.mark.parametrize("transport", ["daemon", "http"])
def test_git_daemon_and_smart_http_fetch_and_sync(tmp_path, upstream, fake_embedder, transport):
    index = tmp_path / "index"
    server = GitDaemon(upstream.root) if transport == "daemon" else SmartHTTP(upstream.root)
    with server:
        report, read = _ingest(server.url(upstream), index)
        assert report.documents == 2 and read.record["url"].startswith(("git://", "http://"))
        upstream.commit("faq: new", {"docs/faq.md": FAQ + "\n## Checkpoint resume fails\n\nPass --resume.\n"})
        synced = sync_index(index, embedder="test:fake")
    assert synced.sources[0].status == "updated"
    assert [r.heading for r in synced.changes["widget"].added] == ["Checkpoint resume fails"]


def test_a_repository_too_big_to_fetch_whole_brings_only_the_docs(tmp_path, fake_embedder):
    up = Upstream(tmp_path / "big", "monorepo")
    data = {f"data/shard-{i}.bin": os.urandom(2 * 2**20) for i in range(6)}  # 12 MB that does not compress
    up.commit("docs and data", {"docs/faq.md": FAQ, **data, "src/big.py": "x = 1\n" * 50_000})
    repo_bytes = sum(f.stat().st_size for f in (up.bare / "objects").rglob("*") if f.is_file())
    assert repo_bytes > 12 * 2**20
    index = tmp_path / "index"
    with SmartHTTP(up.root) as http:
        _, read = _ingest(http.url(up), index, collection="mono")
    # Commits, trees and one document's blob: not the data, not the code.
    assert read.record["store_bytes"] < 64 * 1024 < repo_bytes / 100, (read.record, repo_bytes)
    assert read.record["fetched_bytes"] <= read.record["store_bytes"]
    assert not (Path(read.record["checkout"]) / "repo" / "data").exists()
    assert {e.doc for e in _entries(index, "mono")} == {"docs/faq.md"}


def test_a_server_that_ignores_the_filter_is_named_and_capped(tmp_path, fake_embedder, monkeypatch):
    up = Upstream(tmp_path / "big", "unfiltered", allow_filter=False)
    up.commit("docs and data", {"docs/faq.md": FAQ, "data/blob.bin": os.urandom(3 * 2**20)})
    _, read = _ingest(up.url, tmp_path / "index", collection="unf")
    assert any("does not filter what it sends" in note for note in read.notes)
    assert read.record["store_bytes"] > 3 * 2**20
    monkeypatch.setenv("RLHELPER_GIT_MAX_MB", "1")
    with pytest.raises(GitSourceError, match=r"brought more than 1 MB \(setting git_max_mb\)"):
        _ingest(up.url, tmp_path / "index2", collection="unf", paths=["docs", "data"])
    assert not (tmp_path / "index2").exists()
