"""Closed GitHub issues as a source, end to end: `rlhelper ingest --github` against a fake API on
127.0.0.1 (tests/github_fake.py) into a real index beside the seeds, then `rlhelper ask` finds the
thread and cites it as a reported issue, with the maintainer's fix and its link."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from clirun import cli_env, rlhelper
from github_fake import HTML, REPO, TOKEN, FakeGitHub

from rlhelper.ingest.github.entries import thread_sources
from rlhelper.ingest.github.export import read_exports

pytestmark = pytest.mark.slow
COLLECTION = f"github:{REPO}"
ZORBLE = "widgetrl.io.manifest.ZorbleChecksumError: shard 3 checksum mismatch in quux_loader"


@pytest.fixture(scope="module")
def synced(tmp_path_factory, seeds_index, usem3_cache_dir):
    """The seeds index with the fake repository's threads ingested through the CLI."""
    root = tmp_path_factory.mktemp("github-e2e")
    index = root / "index"
    shutil.copytree(os.path.realpath(seeds_index), index)
    home = root / "home"
    with FakeGitHub() as fake:
        fake.comments[4][0]["body"] += " \x1b[2J\x1b[31mred\x1b[0m"  # a terminal escape in a reply
        env = cli_env(home, usem3_cache_dir, GITHUB_API_URL=fake.url, MY_GH_TOKEN=TOKEN)
        first = rlhelper(["ingest", "--github", REPO, "--github-token-env", "MY_GH_TOKEN", "--index", str(index)], env)
        fake.requests.clear()
        second = rlhelper(["ingest", "--github", REPO, "--github-token-env", "MY_GH_TOKEN", "--index", str(index)], env)
        second_requests = list(fake.requests)
    return {"index": index, "home": home, "env": env, "first": first, "second": second,
            "second_requests": second_requests}


def _ask(synced, *args):
    proc = rlhelper(["ask", *args, "--index", str(synced["index"])], synced["env"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_ingest_fetches_and_indexes_only_answered_closed_issues(synced):
    first = synced["first"]
    assert first.returncode == 0, first.stderr[-2000:]
    assert "fetched 5 changed since the last sync" in first.stderr
    assert "2 closed issue(s) of acme/widgetrl with no fix in the thread" in first.stderr
    assert "2 documents indexed (2 new or changed" in first.stdout

    from rlhelper.index.store import Index

    entries = [e for e in Index.load(synced["index"]).entries if e.collection == COLLECTION]
    assert sorted(e.doc for e in entries) == ["issues/1", "issues/4"]  # 2 unanswered, 3 a PR, 6 open
    assert {e.kind for e in entries} == {"issue"} and {e.framework for e in entries} == {"widgetrl"}

    store = synced["home"] / ".local" / "rlhelper" / "github" / "acme__widgetrl"
    for name in ("issues.jsonl", "state.json"):
        assert stat.S_IMODE((store / name).stat().st_mode) == 0o600


def test_a_second_ingest_fetches_only_the_issue_list(synced):
    second = synced["second"]
    assert second.returncode == 0, second.stderr[-2000:]
    assert "fetched 0 changed" in second.stderr and "0 new or changed" in second.stdout
    # One page of the issue list: a repository synced before is not asked for its name again (a rename
    # shows as the listing's redirect).
    assert [r.split("?")[0] for r in synced["second_requests"]] == [f"/repos/{REPO}/issues"]


def test_info_does_not_take_the_threads_for_a_missing_folder(synced):
    proc = rlhelper(["info", "--json", "--index", str(synced["index"])], synced["env"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = json.loads(proc.stdout)
    assert COLLECTION in {c["name"] for c in info["collections"]}
    assert not [line for line in info["out_of_date"] if "github" in line], info["out_of_date"]
    # The command that updates the index is the docs' (the threads are kept as they are); an index whose
    # threads' records have no file is not taken for one whose folders are unknown.
    assert "github:" not in info["update_command"] and "folders the index was built from" not in info["update_command"]


def test_the_token_is_in_no_output_and_no_file(synced):
    for proc in (synced["first"], synced["second"]):
        assert TOKEN not in proc.stdout + proc.stderr
    for folder in (synced["index"], synced["home"]):
        for file in Path(folder).rglob("*"):
            if file.is_file() and not file.is_symlink():
                assert TOKEN.encode() not in file.read_bytes(), file


def test_ask_cites_the_thread_as_a_reported_issue_with_the_reply_and_its_link(synced):
    shown = _ask(synced, ZORBLE).stdout
    assert "Reported issue widgetrl#1, closed 2025-03 (fixed by 0123456)" in shown
    assert "Maintainer's fix" in shown and f"{HTML}/issues/1#issuecomment-102" in shown
    assert "io.verify_shards=lazy" in shown
    assert "matched: ZorbleChecksumError" not in shown  # the title, found as a question, is the heading
    assert "This issue is stale" not in shown and "Same here" not in shown  # a bot's and a user's comments

    answer = json.loads(_ask(synced, ZORBLE, "--json").stdout)
    assert not answer["abstained"]
    assert answer["citations"][0]["kind"] == "issue" and answer["hits"][0]["kind"] == "issue"
    assert answer["citations"][0]["url"] == f"{HTML}/issues/1"
    assert [p["kind"] for p in answer["parts"]] == ["symptom", "maintainer_fix"]


def test_the_collection_filter_selects_the_threads(synced):
    within = json.loads(_ask(synced, ZORBLE, "--json", "--collection", COLLECTION).stdout)
    assert {h["collection"] for h in within["hits"]} == {COLLECTION}
    outside = json.loads(_ask(synced, ZORBLE, "--json", "--collection", "seeds").stdout)
    assert COLLECTION not in {h["collection"] for h in outside["hits"]}


@pytest.fixture
def usem3_cache(usem3_cache_dir, monkeypatch):
    monkeypatch.setenv("RLHELPER_CACHE_DIR", str(usem3_cache_dir))


def test_a_hostile_thread_is_escaped_on_the_page_and_in_the_terminal(synced, usem3_cache):
    from rlhelper.answer.html import answer_html
    from rlhelper.api import Helper

    query = "FlimflamOverflowError: gizmo buffer overflow in flimflam_kernel"
    terminal = _ask(synced, query).stdout
    assert "FLIMFLAM_SAFE=1" in terminal and "\x1b" not in terminal

    helper = Helper.load(synced["index"], user_bank=False)
    answer = helper.ask(query)
    assert answer.citations[0].kind == "issue"
    page = answer_html(answer, entry_for=helper.entry)  # with "Show the whole entry"
    assert "FLIMFLAM_SAFE=1" in page
    assert "<script" not in page and "pwned" not in page  # HTML is taken out of a thread's text at ingest (text.py)
    assert "<img" not in page and "<b>" not in page and 'href="javascript' not in page
    assert "[click](javascript:alert(2))" in page  # a link to a script stays text


def test_the_web_chat_filters_on_the_threads_and_escapes_them(synced, usem3_cache):
    from rlhelper.api import Helper
    from rlhelper.web.answering import respond
    from rlhelper.web.arguments import checked_ask

    helper = Helper.load(synced["index"], user_bank=False)
    assert COLLECTION in helper.collections  # a choice of the page's collection filter
    message, history, framework, collection, llm = checked_ask(
        helper, {}, "FlimflamOverflowError: gizmo buffer overflow in flimflam_kernel", [], "", COLLECTION, "")
    *_, (final, _session) = respond(helper, message, history, framework or None, collection, None, llm)
    page = final[-1]["content"]
    assert "Reported issue widgetrl#4, closed 2025-03" in page and "Maintainer&#x27;s fix" in page
    assert f"{HTML}/issues/4#issuecomment-401" in page
    assert "<script" not in page and "<img" not in page and 'href="javascript' not in page


def test_an_issue_saying_what_a_doc_entry_says_ranks_by_the_fitted_tradeoff_and_both_are_quoted(synced, tmp_path,
                                                                                                 usem3_cache):
    """A thread copying a seed entry word for word (title = its heading, body and fix = its text)
    scores as that entry does times the fitted trade-off (search/tradeoff.py), and the answer quotes
    both, the docs first, each introduced as what it is."""
    from rlhelper.api import Helper
    from rlhelper.ingest.pipeline import ingest
    from rlhelper.search.query import normalize_query
    from rlhelper.search.tradeoff import tradeoff_model

    index = tmp_path / "index"
    shutil.copytree(os.path.realpath(synced["index"]), index)
    helper = Helper.load(index, user_bank=False)
    doc = next(e for e in helper.entries if e.collection == "seeds" and e.answerable and len(e.text) > 300
               and "`" in e.text)
    thread = {"repo": REPO, "number": 99, "title": doc.heading, "body": doc.text, "url": f"{HTML}/issues/99",
              "state": "closed", "closed_at": "2025-06-01T00:00:00Z", "closed_by": None, "author": "reporter",
              "comments": [{"association": "MEMBER", "author": "maint", "body": doc.text, "url": ""}]}
    ingest(index=index, documents=thread_sources({99: thread}, REPO, collection="twin-issue"))
    helper = Helper.load(index, user_bank=False)
    hits = helper.search(doc.heading, k=5)
    factor = tradeoff_model().issue_factor(normalize_query(doc.heading))
    kinds = {(h.entry.collection, h.entry.kind) for h in hits[:2]}
    assert kinds == {("seeds", "doc"), ("twin-issue", "issue")}
    first, second = hits[:2]
    if factor < 1:
        assert first.entry.kind == "doc" and second.score == pytest.approx(first.score * factor)
    answer = helper.ask(doc.heading)
    assert [c.kind for c in answer.citations] == ["doc", "issue"]  # nearly tied: both, the docs first
    assert "### The docs: " in answer.text and "### A reported issue with the same error, and how it was fixed: " \
        in answer.text


def test_an_export_file_is_ingested_like_the_api(synced, tmp_path):
    fake = FakeGitHub()
    (tmp_path / "issues.json").write_text(json.dumps(fake.issues))
    (tmp_path / "comments.json").write_text(json.dumps([c for cs in fake.comments.values() for c in cs]))
    fake.server.server_close()
    assert len(read_exports([tmp_path / "issues.json"], REPO)[0]) == 5
    index = tmp_path / "index"
    shutil.copytree(os.path.realpath(synced["index"]), index)
    env = {**synced["env"], "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("GITHUB_API_URL")
    proc = rlhelper(["ingest", "--github", REPO, "--github-export", str(tmp_path / "issues.json"),
                     "--github-export", str(tmp_path / "comments.json"), "--collection", "offline",
                     "--index", str(index)], env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "read 5 from the export(s)" in proc.stderr and "1 pull request(s) left out" in proc.stderr
    answer = json.loads(rlhelper(["ask", ZORBLE, "--json", "--collection", "offline", "--index", str(index)],
                                 env).stdout)
    assert answer["citations"][0]["doc_title"] == "Reported issue widgetrl#1, closed 2025-03"


def test_a_rate_limit_stops_the_cli_cleanly_and_the_same_command_resumes(synced, tmp_path):
    index = tmp_path / "index"
    shutil.copytree(os.path.realpath(synced["index"]), index)
    env = {**synced["env"], "XDG_DATA_HOME": str(tmp_path / "data")}
    command = ["ingest", "--github", REPO, "--github-token-env", "MY_GH_TOKEN", "--index", str(index)]
    with FakeGitHub() as fake:
        env["GITHUB_API_URL"] = fake.url
        fake.faults[8] = ("rate", 3600)  # the second page of the issue list (after the repository, page 1, ...)
        stopped = rlhelper(command, env)
        assert stopped.returncode == 0, stopped.stderr[-2000:]
        assert "stopped early" in stopped.stderr and "run the same command again" in stopped.stderr
        assert "1 document indexed" in stopped.stdout  # issue 1 of the first page; 2 has no maintainer reply
        fake.requests.clear()
        resumed = rlhelper(command, env)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert not fake.listed(f"/repos/{REPO}/issues/1/")  # the first page is not fetched again
    assert "stopped" not in resumed.stderr and "1 new or changed, 1 unchanged" in resumed.stdout
    assert TOKEN not in stopped.stderr + resumed.stderr


def test_an_export_saved_before_a_rename_is_indexed_under_the_new_name_with_an_alias(synced, tmp_path):
    old = "https://github.example/oldacme/widgetrl"
    exported = [{"number": 8, "title": "SplineKnotError when resuming", "state": "CLOSED", "url": f"{old}/issues/8",
                 "body": "SplineKnotError: knot vector not sorted after resume",
                 "comments": [{"author": {"login": "maint"}, "authorAssociation": "MEMBER",
                               "body": "Sort the knots on load: set `spline.sort_on_load=true`.",
                               "url": f"{old}/issues/8#issuecomment-801", "createdAt": "2025-04-01T00:00:00Z"}]}]
    (tmp_path / "old.json").write_text(json.dumps(exported))
    index = tmp_path / "index"
    shutil.copytree(os.path.realpath(synced["index"]), index)
    env = {**synced["env"], "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("GITHUB_API_URL")
    command = ["ingest", "--github", REPO, "--github-export", str(tmp_path / "old.json"), "--index", str(index)]
    refused = rlhelper(command, env)
    assert refused.returncode == 0 and f"--github-alias oldacme/widgetrl={REPO}" in refused.stderr
    read = rlhelper([*command, "--github-alias", f"oldacme/widgetrl={REPO}"], env)
    assert read.returncode == 0, read.stderr[-2000:]
    answer = json.loads(rlhelper(["ask", "SplineKnotError: knot vector not sorted after resume", "--json",
                                  "--collection", COLLECTION, "--index", str(index)], env).stdout)
    assert answer["citations"][0]["url"] == f"{HTML}/issues/8"
    assert f"{HTML}/issues/8#issuecomment-801" in answer["answer"]
