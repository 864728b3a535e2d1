"""The GitHub client's bounds (issue 31, point 8) against misbehaving servers on 127.0.0.1: a total
deadline per request (a server dripping a byte at a time), a cap on pages and on threads per run
with a resume point, a next link that loops, deep JSON; and hostile `--github-export` files (point 7):
one line, never a traceback."""

from __future__ import annotations

import json
import time
import urllib.parse

import pytest
from clirun import cli_env, one_line_error, rlhelper
from github_fake import REPO, TOKEN, FakeGitHub

from rlhelper.errors import GitHubError
from rlhelper.ingest.github.client import GitHubClient, PageCapReached
from rlhelper.ingest.github.export import read_exports
from rlhelper.ingest.github.fetch import sync
from rlhelper.ingest.github.threads import ThreadStore
from rlhelper.measure.inputtrials import (
    GOOD_ISSUE,
    HOSTILE_EXPORTS,
    MisbehavingAPI,
    deep_json,
    drip_body,
    drip_headers,
    endless_pages,
    send_json,
)


@pytest.mark.parametrize("answer", [drip_body, drip_headers])
def test_a_server_dripping_bytes_is_cut_at_the_total_deadline(answer):
    """Each byte comes well within the per-read timeout; the request as a whole must still end."""
    with MisbehavingAPI(answer) as server:
        client = GitHubClient(server.url, None, timeout=1.5, retries=1, sleep=lambda s: None)
        started = time.monotonic()
        with pytest.raises(GitHubError, match="no whole answer within 1.5 s"):
            client.get(client.url("repos/acme/widgetrl/issues"))
        assert time.monotonic() - started < 10  # two attempts of 1.5 s, not the 50 s of the whole drip
        assert len(server.requests) == 2


def test_an_endless_next_link_stops_at_the_page_cap_and_says_how_to_go_on(tmp_path):
    with MisbehavingAPI(endless_pages) as server:
        client = GitHubClient(server.url, None, max_pages=25, sleep=lambda s: None)
        report = sync(REPO, ThreadStore(REPO, tmp_path), client)
        assert len(server.requests) == 25
    assert not report.complete and "past 25 pages" in report.stopped
    assert "run the same command again to continue" in report.stopped


def test_a_next_link_back_to_a_page_read_stops_the_listing():
    def looping(handler, url):
        send_json(handler, [], {"Link": f'<{url}/repos/{REPO}/issues?page=1>; rel="next"'})

    with MisbehavingAPI(looping) as server:
        client = GitHubClient(server.url, None, sleep=lambda s: None)
        with pytest.raises(PageCapReached, match="led back to a page already read"):
            list(client.pages(f"repos/{REPO}/issues", {"page": 1}))
        assert len(server.requests) == 1


def test_a_run_stores_at_most_max_threads_and_the_next_run_goes_on(tmp_path):
    with FakeGitHub() as fake:
        store = ThreadStore(REPO, tmp_path)
        first = sync(REPO, store, GitHubClient(fake.url, TOKEN, sleep=lambda s: None), max_threads=2)
        assert not first.complete and "2 threads fetched, the most one run stores" in first.stopped
        assert "run the same command again to continue from the issues updated since" in first.stopped
        assert sorted(store.load()) == [1, 2]
        second = sync(REPO, store, GitHubClient(fake.url, TOKEN, sleep=lambda s: None))
        assert second.complete and sorted(store.load()) == [1, 2, 4, 5, 6]


def test_comment_pages_that_come_empty_forever_end(tmp_path):
    with FakeGitHub() as fake:
        original = fake._page

        def endless_comments(path, query, items):
            if path.endswith("/comments"):
                page = int(query.get("page", 1))
                nxt = urllib.parse.urlencode({**query, "page": page + 1})
                return 200, {"link": f'<{fake.url}{path}?{nxt}>; rel="next"'}, []
            return original(path, query, items)

        fake._page = endless_comments
        report = sync(REPO, ThreadStore(REPO, tmp_path), GitHubClient(fake.url, TOKEN, sleep=lambda s: None))
        assert report.complete
        assert len(fake.listed(f"/repos/{REPO}/issues/1/comments")) <= 5


def test_deep_json_from_the_api_is_a_clear_error(tmp_path):
    with MisbehavingAPI(deep_json) as server:
        client = GitHubClient(server.url, None, sleep=lambda s: None)
        with pytest.raises(GitHubError, match="nested too deeply"):
            sync(REPO, ThreadStore(REPO, tmp_path), client)


# -- hostile exports ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(set(HOSTILE_EXPORTS) - {"nested-200000"}))
def test_a_hostile_export_item_is_left_out_or_read_as_empty(tmp_path, name):
    (tmp_path / "export.json").write_text(HOSTILE_EXPORTS[name])
    threads, notes = read_exports([tmp_path / "export.json"], REPO)
    assert 7 in [t["number"] for t in threads]
    if name.startswith(("number", "no-number")):
        assert any("without a valid issue number" in note for note in notes)


def test_hostile_exports_through_the_cli_are_one_line(tmp_path, usem3_cache_dir):
    env = cli_env(tmp_path / "home", usem3_cache_dir, GITHUB_TOKEN="")
    (tmp_path / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    message = one_line_error(rlhelper(["ingest", "--github", REPO, "--github-export", str(tmp_path / "deep.json"),
                                       "--index", str(tmp_path / "idx")], env))
    assert "nested too deeply" in message
    (tmp_path / "mixed.json").write_text(json.dumps([{**GOOD_ISSUE, "number": "x"},
                                                     {**GOOD_ISSUE, "labels": 7, "comments": 5},
                                                     {**GOOD_ISSUE, "number": 3, "closedByPullRequestsReferences":
                                                      [{"number": "x1"}]}]))
    proc = rlhelper(["ingest", "--github", REPO, "--github-export", str(tmp_path / "mixed.json"),
                     "--index", str(tmp_path / "idx")], env)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "without a valid issue number" in proc.stderr


def test_an_endless_api_through_the_cli_stops_and_says_so(tmp_path, usem3_cache_dir):
    with MisbehavingAPI(endless_pages) as server:
        env = cli_env(tmp_path / "home", usem3_cache_dir, GITHUB_TOKEN="")
        proc = rlhelper(["ingest", "--github", REPO, "--github-api-url", server.url, "--index", str(tmp_path / "idx")],
                        env)
        assert len(server.requests) <= 501
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "stopped early" in proc.stderr and "run the same command again to continue" in proc.stderr
