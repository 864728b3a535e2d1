"""`rlhelper trackers`: the four frameworks' trackers added in one run against a fake API on 127.0.0.1
(tests/github_fake.py), with progress, resumed after the rate limit stops it, then kept current by
`rlhelper sync` at one request per tracker; `rlhelper info` counts their threads by kind."""

from __future__ import annotations

import copy
import os
import stat

import pytest
from click.testing import CliRunner
from github_fake import HTML, TOKEN, FakeGitHub, default_threads

from rlhelper.cli.main import main
from rlhelper.ingest.github.trackers import TRACKERS


def served(repo: str) -> tuple[list[dict], dict, dict]:
    """The fake's default threads, as another repository's."""
    issues, comments, events = copy.deepcopy(default_threads())
    base = f"https://github.example/{repo}"
    for item in [*issues, *(c for cs in comments.values() for c in cs)]:
        item["html_url"] = item["html_url"].replace(HTML, base)
    return issues, comments, events


@pytest.fixture
def trackers_api(monkeypatch, fake_embedder, tmp_path):
    with FakeGitHub() as fake:
        fake.others = {repo: served(repo) for repo in TRACKERS}
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("RLHELPER_EMBEDDER", fake_embedder.id)
        monkeypatch.setenv("RLHELPER_DATA_DIR", str(tmp_path / "data"))
        yield fake


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_one_command_adds_the_four_trackers_and_a_no_change_sync_costs_a_request_each(trackers_api, tmp_path):
    index = tmp_path / "index"
    ran = run("trackers", "--index", str(index))
    assert ran.exit_code == 0, ran.output
    for repo in TRACKERS:  # progress, a page at a time (2 issues a page here), then what each holds
        assert f"github: {repo}: 2 thread(s) fetched" in ran.output
        assert f"{repo}: 5 fetched" in ran.output
        store = tmp_path / "data" / "github" / repo.replace("/", "__") / "issues.jsonl"
        assert stat.S_IMODE(store.stat().st_mode) == 0o600
    info = run("info", "--index", str(index))
    assert info.exit_code == 0, info.output
    for repo in TRACKERS:
        assert f"github:{repo}" in info.output
    assert info.output.count("threads: ") == 4 and "indexed; left out: " in info.output

    trackers_api.requests.clear()
    synced = run("sync", "--index", str(index))
    assert synced.exit_code == 0, synced.output
    assert sorted(r.split("?")[0] for r in trackers_api.requests) == sorted(f"/repos/{r}/issues" for r in TRACKERS)


def test_the_rate_limit_stops_the_run_and_the_same_command_goes_on_from_there(trackers_api, tmp_path):
    index = tmp_path / "index"
    # The first tracker takes 1 (its name) + 3 pages + comments and events; its 4th request hits the limit,
    # an hour away: nothing more is asked of any tracker.
    trackers_api.faults[4] = ("rate", 3600)
    stopped = run("trackers", "--index", str(index))
    assert stopped.exit_code == 1 and "stopped early" in stopped.output and "rate limit" in stopped.output
    assert stopped.output.count("not asked") == 3
    asked = {r.split("/")[2] + "/" + r.split("/")[3] for r in trackers_api.requests}
    assert asked == {TRACKERS[0]}

    trackers_api.requests.clear()
    again = run("trackers", "--index", str(index))
    assert again.exit_code == 0, again.output
    for repo in TRACKERS:
        assert f"github:{repo}" in run("info", "--index", str(index)).output


def test_the_token_comes_from_the_github_cli_when_github_token_is_not_set(trackers_api, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(f"#!/bin/sh\n[ \"$1 $2\" = \"auth token\" ] && echo {TOKEN}\n")
    gh.chmod(0o755)
    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    ran = run("trackers", "--index", str(tmp_path / "index"))
    assert ran.exit_code == 0, ran.output
    assert set(trackers_api.auth_headers) == {f"Bearer {TOKEN}"}
