"""Docs from a git repository, kept current: `ingest_git` and `sync_index` against real upstreams made by
the tests (git_upstream.py: a bare repository reached by file://, `git daemon` and smart HTTP on
127.0.0.1), with commits that add, edit, rename and delete sections, a force-push, and a repository
too big to fetch whole. The embedder is the deterministic stand-in (conftest.FakeEmbedder), so the
counts of embedded texts are exact."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from git_upstream import GitDaemon, SmartHTTP, Upstream, git, isolate

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


# --- refs, links, and what the checkout holds ------------------------------------------------------


def test_a_tag_and_a_commit_id_are_read_and_a_pinned_commit_never_moves(tmp_path, upstream, fake_embedder):
    first = upstream.head()
    upstream.tag("v1.0")
    upstream.commit("faq: after the tag", {"docs/faq.md": FAQ + "\n## After the tag\n\nNot in v1.0.\n"})
    index = tmp_path / "index"
    _ingest(upstream.url, index, ref="v1.0", collection="tagged")
    assert _collection(index, "tagged")["sync"]["commit"] == first
    assert "After the tag" not in {e.heading for e in _entries(index, "tagged")}
    _ingest(upstream.url, index, ref=first, collection="pinned")
    upstream.commit("faq: later", {"docs/faq.md": FAQ + "\n## Later\n\nStill not pinned.\n"})
    report = sync_index(index, embedder="test:fake")
    assert {s.collection: s.status for s in report.sources} == {"tagged": "up to date", "pinned": "up to date"}


def test_links_leaving_the_checkout_are_skipped_and_named(tmp_path, fake_embedder):
    up = Upstream(tmp_path / "links", "links")
    (up.work / "docs").mkdir(parents=True)
    os.symlink("/etc/passwd", up.work / "docs" / "passwd.md")
    os.symlink("../README.md", up.work / "docs" / "readme-link.md")
    git("add", "docs/passwd.md", "docs/readme-link.md", cwd=up.work)
    up.commit("docs with links", {"docs/faq.md": FAQ, "README.md": "# Top\n\nText.\n"})
    report, _ = _ingest(up.url, tmp_path / "index", collection="links")
    skipped = dict(report.not_followed)
    assert any(path.endswith("docs/passwd.md") and "outside the folder" in why for path, why in skipped.items())
    # README.md is not under docs/: not checked out, so the link inside leads nowhere
    assert any(path.endswith("docs/readme-link.md") for path in skipped)
    assert {e.doc for e in _entries(tmp_path / "index", "links")} == {"docs/faq.md"}


def test_links_into_the_checkouts_git_folder_are_not_docs(tmp_path, fake_embedder):
    """Issue 37: links that stay inside the checkout but lead into .git (the operator's git identity,
    remotes, fetch log) are not indexed, on the first ingest and on a sync."""
    up = Upstream(tmp_path / "gitlinks", "gitlinks")
    (up.work / "docs").mkdir(parents=True)
    links = {"log.md": "../.git/logs/HEAD", "config.md": "../.git/config", "fetch.md": "../.git/FETCH_HEAD",
             "head.md": "../.git/HEAD"}
    for name, target in links.items():
        os.symlink(target, up.work / "docs" / name)
    git("add", *(f"docs/{name}" for name in links), cwd=up.work)
    up.commit("docs with links into .git", {"docs/faq.md": FAQ})
    index = tmp_path / "index"
    report, read = _ingest(up.url, index, collection="gitlinks")
    assert (Path(read.record["checkout"]) / "repo" / ".git" / "config").is_file()  # the target is there
    assert {e.doc for e in _entries(index, "gitlinks")} == {"docs/faq.md"}
    assert not any("[remote" in e.text or "ref: refs/" in e.text for e in _entries(index, "gitlinks"))
    skipped = dict(report.not_followed)
    for name in ("config.md", "head.md"):
        assert any(path.endswith(f"docs/{name}") and "hidden .git" in why for path, why in skipped.items())
    up.commit("faq: more", {"docs/faq.md": FAQ + "\n## More\n\nText.\n"})
    sync_index(index, embedder="test:fake")
    assert {e.doc for e in _entries(index, "gitlinks")} == {"docs/faq.md"}


def test_git_lock_files_left_by_a_killed_run_do_not_stop_the_next(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    _, read = _ingest(upstream.url, index)
    git_dir = Path(read.record["checkout"]) / "repo" / ".git"
    for name in ("index.lock", "shallow.lock", "config.lock"):
        (git_dir / name).write_text("")
    upstream.commit("faq: new", {"docs/faq.md": FAQ + "\n## Checkpoint resume fails\n\nPass --resume.\n"})
    assert sync_index(index, embedder="test:fake").sources[0].status == "updated"


def test_a_damaged_checkout_is_made_again(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    _, read = _ingest(upstream.url, index)
    shutil.rmtree(Path(read.record["checkout"]) / "repo" / ".git" / "objects")
    upstream.commit("faq: new", {"docs/faq.md": FAQ + "\n## Checkpoint resume fails\n\nPass --resume.\n"})
    report = sync_index(index, embedder="test:fake")
    assert report.sources[0].status == "updated", report.sources[0].message


# --- the question bank follows upstream ------------------------------------------------------------


def test_bank_questions_of_renamed_or_removed_sections_are_reported_and_new_sections_found_by_heading(
        tmp_path, upstream, fake_embedder, monkeypatch):
    from rlhelper.api import Helper
    from rlhelper.index.userbank import UserBank

    bank = tmp_path / "bank"
    (bank / "widget").mkdir(parents=True)
    (bank / "widget" / "faq.jsonl").write_text(json.dumps(
        {"collection": "widget", "doc": "docs/faq.md", "heading": "Rollout hangs at startup",
         "questions": ["workers stuck waiting at launch", "rollout never starts"]}) + "\n", encoding="utf-8")
    (bank / "widget" / "install.jsonl").write_text(json.dumps(
        {"collection": "widget", "doc": "docs/install.md", "heading": "CUDA version mismatch",
         "questions": ["wrong cuda wheel"]}) + "\n", encoding="utf-8")
    monkeypatch.setenv("RLHELPER_QUESTION_BANK_DIR", str(bank))
    index = tmp_path / "index"
    _ingest(upstream.url, index)
    nan = next(e for e in _entries(index) if e.heading == "Loss is NaN after a few steps")
    UserBank().add("loss goes nan", {"entry_id": nan.id, "collection": "widget", "doc": nan.doc,
                                     "heading": nan.heading}, 1, "cli")
    faq = FAQ.replace("## Rollout hangs at startup", "## Rollout hangs while starting")
    faq = faq[:faq.index("## Loss is NaN")] + "## EGL rendering picks the wrong GPU\n\nSet `EGL_DEVICE_ID`.\n"
    upstream.commit("faq: rename, remove, add", {"docs/faq.md": faq})
    report = sync_index(index, embedder="test:fake")
    notes = "\n".join(report.notes)
    assert ("question bank: 2 question(s) for “Rollout hangs at startup” in widget/docs/faq.md, which the index "
            "no longer holds") in notes
    assert ("your question bank: 1 question(s) learned for “Loss is NaN after a few steps” in widget/docs/faq.md, "
            "which upstream removed") in notes
    # The new section has no question yet: its own heading stands for one, so it is found by it.
    loaded = Index.load(index)
    new_row = next(i for i, e in enumerate(loaded.entries) if e.heading == "EGL rendering picks the wrong GPU")
    asked = [(t, s) for r, t, s in zip(loaded.questions.rows, loaded.questions.texts, loaded.questions.sources,
                                         strict=True) if r == new_row]
    assert asked == [("EGL rendering picks the wrong GPU", "heading")]
    hits = Helper.load(index, user_bank=False).search("EGL rendering picks the wrong GPU", k=1)
    assert hits[0].entry.heading == "EGL rendering picks the wrong GPU"


# --- what `rlhelper info` says about a source, offline ----------------------------------------------


def test_info_shows_each_source_its_commit_and_that_upstream_moved(tmp_path, upstream, fake_embedder):
    from rlhelper.ingest.status import index_info, render_info

    index = tmp_path / "index"
    _ingest(upstream.url, index)
    described = index_info(index)
    (widget,) = described.collections
    assert widget.sync["commit"] == upstream.head() and widget.sync["url"] == upstream.url
    assert widget.sync["behind"].startswith("up to date when last checked")
    upstream.rename("docs", "documentation", "move the docs")  # the sync fails: the index stays behind
    assert sync_index(index, embedder="test:fake").sources[0].status == "failed"
    described = index_info(index)
    assert described.collections[0].sync["behind"].startswith(f"behind: upstream had moved to {upstream.head()[:12]}")
    text = render_info(described)
    assert f"from git {upstream.url} @ default branch (docs)" in text
    assert "citations without a web link" in text and "`rlhelper sync` brings it in" in text
    assert not described.out_of_date  # a synced collection is not compared with a folder


# --- GitHub threads are synced beside the docs -------------------------------------------------------


def test_sync_brings_github_threads_up_to_date_beside_git_docs(tmp_path, upstream, fake_embedder, monkeypatch):
    from click.testing import CliRunner
    from github_fake import TOKEN, FakeGitHub, comment, issue

    from rlhelper.cli.main import main

    index = tmp_path / "index"
    _ingest(upstream.url, index)
    with FakeGitHub() as fake:
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        monkeypatch.setenv("MY_GH_TOKEN", TOKEN)
        ran = CliRunner().invoke(main, ["ingest", "--github", "acme/widgetrl", "--github-token-env", "MY_GH_TOKEN",
                                        "--index", str(index), "--quiet"])
        assert ran.exit_code == 0, ran.output
        fake.requests.clear()
        quiet = sync_index(index)
        assert {s.collection: s.status for s in quiet.sources} == {"widget": "up to date",
                                                                    "github:acme/widgetrl": "up to date"}
        # one page of changed issues: a rename would show as that listing's redirect
        assert [r.split("?")[0] for r in fake.requests] == ["/repos/acme/widgetrl/issues"]
        fake.issues.append(issue(7, "GizmoTimeout when the rollout starts", "It times out.", "2025-04-01T12:00:00Z",
                                 comments=1))
        fake.comments[7] = [comment(701, 7, "maint", "MEMBER", "Raise `gizmo.timeout` to 600.", "2025-04-01")]
        report = sync_index(index)
    threads = {s.collection: s for s in report.sources}["github:acme/widgetrl"]
    assert threads.status == "updated" and threads.fetched_threads == 1
    assert [r.heading for r in report.changes["github:acme/widgetrl"].added] == \
        ["GizmoTimeout when the rollout starts"]
    record = _collection(index, "github:acme/widgetrl")["sync"]
    assert record["token_env"] == "MY_GH_TOKEN" and TOKEN not in json.dumps(record)


def test_an_index_without_sources_says_how_to_add_one(tmp_path, fake_embedder):
    from rlhelper.errors import ConfigError
    from rlhelper.ingest.pipeline import ingest

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "faq.md").write_text(FAQ, encoding="utf-8")
    ingest([tmp_path / "docs"], index=tmp_path / "index", embedder="test:fake")
    with pytest.raises(ConfigError, match=r"records no source to sync: add one with `rlhelper ingest --git URL"):
        sync_index(tmp_path / "index")


def test_a_folder_ingest_keeps_the_git_collection_and_the_hints_name_sync(tmp_path, upstream, fake_embedder,
                                                                          monkeypatch):
    from rlhelper.index.folders import rebuild_hint
    from rlhelper.ingest.pipeline import ingest

    index = tmp_path / "index"
    _ingest(upstream.url, index)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.md").write_text("# Notes\n\n## Ray actor died\n\nRaise memory.\n", encoding="utf-8")
    ingest([tmp_path / "mine"], index=index, embedder="test:fake")
    assert {"widget", "mine"} <= {e.collection for e in Index.load(index).entries}
    assert _collection(index)["sync"]["url"] == upstream.url
    update = rebuild_hint(index, rebuild=False)
    assert update.endswith(f"then `rlhelper sync --index {index}`") and f"{tmp_path / 'mine'}" in update
    # A rebuild reads folders alone: the hint reads the repository again after it.
    rebuild = rebuild_hint(index)
    assert rebuild.startswith("`rlhelper ingest --rebuild --index")
    assert rebuild.endswith(f"then `rlhelper ingest --git {upstream.url} --path docs --collection widget --index "
                            f"{index}`")
    # Another max_tokens cuts sections otherwise: the next sync reads the documents again, at the same commit.
    monkeypatch.setenv("RLHELPER_MAX_TOKENS", "60")
    report = sync_index(index)
    assert report.sources[0].status == "updated" and report.sources[0].commit == upstream.head()
    assert _collection(index)["sync"]["commit"] == upstream.head()


def test_paths_left_without_documents_upstream_keep_the_collection(tmp_path, upstream, fake_embedder):
    index = tmp_path / "index"
    _ingest(upstream.url, index)
    before = _live(index)
    upstream.commit("docs become images", {"docs/faq.md": None, "docs/install.md": None,
                                           "docs/diagram.png": b"\x89PNG\r\n"})
    (source,) = sync_index(index).sources
    assert source.status == "failed" and "no .md, .mdx, .rst or .txt document under docs at" in source.message
    assert _live(index) == before and len(_entries(index)) > 0
