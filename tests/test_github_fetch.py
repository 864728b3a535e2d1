"""The GitHub source's fetching half against a fake API on 127.0.0.1 (tests/github_fake.py):
pagination, incremental sync, rate limits, 5xx retries, the token, saved exports."""

from __future__ import annotations

import json
import stat

import pytest
from github_fake import HTML, REPO, TOKEN, FakeGitHub

from rlhelper.errors import GitHubError
from rlhelper.ingest.github.client import GitHubClient
from rlhelper.ingest.github.export import read_exports
from rlhelper.ingest.github.fetch import sync
from rlhelper.ingest.github.source import update_threads
from rlhelper.ingest.github.threads import ThreadStore


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        yield server


def client_for(fake, token=TOKEN, **kwargs):
    messages, sleeps = [], []
    client = GitHubClient(fake.url, token, notify=messages.append, sleep=sleeps.append, **kwargs)
    return client, messages, sleeps


def test_first_sync_stores_closed_issues_with_their_comments_across_pages(fake, tmp_path):
    store = ThreadStore(REPO, tmp_path)
    client, _, _ = client_for(fake)
    report = sync(REPO, store, client)

    assert report.complete and report.pull_requests == 1
    threads = store.load()
    assert sorted(threads) == [1, 2, 4, 5, 6]  # the pull request (3) skipped
    # An open thread's comments are read too (its answer is indexed, shown as open); no events: nothing closed it.
    assert threads[6]["state"] == "open" and [c["body"] for c in threads[6]["comments"]] == ["Which storage backend do you upload to?"]
    assert fake.listed(f"/repos/{REPO}/issues/6/comments") and not fake.listed(f"/repos/{REPO}/issues/6/events")
    listed = fake.listed(f"/repos/{REPO}/issues?")
    assert len(listed) == 3 and "state=all" in listed[0] and "page=2" in listed[1]  # Link: rel="next"
    assert len(fake.listed(f"/repos/{REPO}/issues/1/comments")) == 2  # 3 comments, 2 a page
    first = threads[1]
    assert [c["association"] for c in first["comments"]] == ["NONE", "MEMBER", "COLLABORATOR"]
    assert first["comments"][1]["url"] == f"{HTML}/issues/1#issuecomment-102"
    assert first["closed_by"] == {"ref": "0123456", "sha": "0123456789abcdef0123456789abcdef01234567",
                                  "url": f"{HTML}/commit/0123456789abcdef0123456789abcdef01234567"}
    assert first["labels"] == ["bug"] and first["state_reason"] == "completed"
    for file in (store.issues_file, store.state_file):
        assert stat.S_IMODE(file.stat().st_mode) == 0o600


def test_a_second_sync_fetches_only_what_changed(fake, tmp_path):
    store = ThreadStore(REPO, tmp_path)
    sync(REPO, store, client_for(fake)[0])
    fake.requests.clear()

    again = sync(REPO, store, client_for(fake)[0])
    assert again.fetched == [] and not fake.listed(f"/repos/{REPO}/issues/")  # no comments, no events asked

    by_number = {i["number"]: i for i in fake.issues}
    by_number[4]["updated_at"] = "2025-04-01T00:00:00Z"
    by_number[4]["comments"] = 2
    fake.comments[4].append({**fake.comments[4][0], "id": 402, "body": "Fixed in the next release."})
    by_number[2].update(state="open", updated_at="2025-04-02T00:00:00Z", closed_at=None)
    fake.requests.clear()
    changed = sync(REPO, store, client_for(fake)[0])

    assert changed.fetched == [4, 2]  # a reopened issue is seen too
    threads = store.load()
    assert len(threads[4]["comments"]) == 2 and threads[2]["state"] == "open"
    assert store.issues_file.read_text().count("\n") == 5  # compacted: one line per thread


def test_a_short_rate_limit_is_waited_out_with_a_message(fake, tmp_path):
    fake.faults[1] = ("rate", 2)
    client, messages, sleeps = client_for(fake)
    report = sync(REPO, ThreadStore(REPO, tmp_path), client)
    assert report.complete and len(report.fetched) == 5
    assert sleeps and 0 < sleeps[0] <= 4
    assert any("rate limit" in m and "waiting" in m for m in messages)


def test_a_long_rate_limit_stops_cleanly_and_the_next_run_resumes(fake, tmp_path):
    store = ThreadStore(REPO, tmp_path)
    # Requests: list page 1, comments of 1 (x2), events of 1, the pulls of its closing commit, comments of 2,
    # list page 2 <- limited.
    fake.faults[7] = ("rate", 3600)
    client, _, sleeps = client_for(fake)
    report = sync(REPO, store, client)

    assert not report.complete and "run the same command again" in report.stopped
    assert not sleeps  # an hour is not waited in place
    assert sorted(store.load()) == [1, 2]  # the first page is kept
    assert store.state()["since"][""] == "2025-03-02T12:00:00Z"  # the resume point: the page's last change

    fake.requests.clear()
    resumed = sync(REPO, store, client_for(fake)[0])
    assert resumed.complete and sorted(store.load()) == [1, 2, 4, 5, 6]
    assert "since=2025-03-02T12%3A00%3A00Z" in fake.listed(f"/repos/{REPO}/issues?")[0]
    assert not fake.listed(f"/repos/{REPO}/issues/1/")  # issue 1 is not fetched again


def test_a_502_is_retried_with_backoff(fake, tmp_path):
    fake.faults[1] = ("status", 502)
    client, messages, sleeps = client_for(fake)
    report = sync(REPO, ThreadStore(REPO, tmp_path), client)
    assert report.complete and len(report.fetched) == 5
    assert sleeps == [1.0] and "502" in messages[0]


def test_a_502_that_persists_is_an_error_after_the_retries(fake, tmp_path):
    fake.faults.update({n: ("status", 502) for n in range(1, 5)})
    client, _, sleeps = client_for(fake)
    with pytest.raises(GitHubError, match="answered 502"):
        sync(REPO, ThreadStore(REPO, tmp_path), client)
    assert sleeps == [1.0, 2.0, 4.0]


@pytest.mark.parametrize("token", [None, "ghp_wrong_token_value_123"])
def test_the_server_refuses_a_missing_or_wrong_token_and_the_error_never_shows_it(fake, tmp_path, token):
    with pytest.raises(GitHubError, match="token was refused") as err:
        sync(REPO, ThreadStore(REPO, tmp_path), client_for(fake, token)[0])
    assert "ghp_" not in str(err.value)
    assert fake.auth_headers[0] == (f"Bearer {token}" if token else None)


def test_the_token_is_sent_to_the_api_and_stored_nowhere(fake, tmp_path):
    store = ThreadStore(REPO, tmp_path)
    sync(REPO, store, client_for(fake)[0])
    assert set(fake.auth_headers) == {f"Bearer {TOKEN}"}
    for file in tmp_path.rglob("*"):
        if file.is_file():
            assert TOKEN not in file.read_text()
    assert TOKEN not in repr(client_for(fake)[0])


def test_a_next_link_to_another_host_is_not_followed(fake):
    client, _, _ = client_for(fake)
    with pytest.raises(GitHubError, match="token is only sent there"):
        client._next('<https://evil.example/steal?page=2>; rel="next"')


def test_an_oversized_answer_is_not_read(fake, tmp_path):
    client, _, _ = client_for(fake, max_bytes=200)
    with pytest.raises(GitHubError, match="more than 200 bytes"):
        sync(REPO, ThreadStore(REPO, tmp_path), client)


def test_a_gh_api_export_round_trips_to_the_same_threads(fake, tmp_path):
    synced = ThreadStore(REPO, tmp_path / "api")
    sync(REPO, synced, client_for(fake)[0])
    # What `gh api --paginate` prints without --slurp: one array per page, one after another.
    issues = fake.issues
    (tmp_path / "issues.json").write_text(json.dumps(issues[:3]) + "\n" + json.dumps(issues[3:]))
    (tmp_path / "comments.json").write_text(json.dumps([c for cs in fake.comments.values() for c in cs]))
    threads, notes = read_exports([tmp_path / "issues.json", tmp_path / "comments.json"], REPO)

    assert "1 pull request(s) left out" in notes
    from_export = {t["number"]: t for t in threads if t["state"] == "closed"}
    for number, thread in synced.load().items():
        if thread["state"] == "closed":
            assert {**from_export[number], "closed_by": None} == {**thread, "closed_by": None}
    assert len(from_export) == 4


def test_a_gh_issue_list_export_is_read(tmp_path):
    exported = [{
        "number": 7, "title": "Spline solver diverges", "body": "It diverges.", "state": "CLOSED",
        "stateReason": "COMPLETED", "closedAt": "2025-05-01T00:00:00Z", "url": f"{HTML}/issues/7",
        "author": {"login": "reporter"}, "labels": [{"name": "bug", "color": "red"}],
        "closedByPullRequestsReferences": [{"number": 9, "url": f"{HTML}/pull/9"}],
        "comments": [{"id": "IC_1", "author": {"login": "maint"}, "authorAssociation": "MEMBER",
                      "body": "Lower the step size.", "createdAt": "2025-04-30T00:00:00Z",
                      "url": f"{HTML}/issues/7#issuecomment-1"}],
    }, {"number": 8, "title": "elsewhere", "url": "https://github.example/other/repo/issues/8"}]
    (tmp_path / "gh.json").write_text(json.dumps(exported))
    threads, notes = read_exports([tmp_path / "gh.json"], REPO)
    assert [t["number"] for t in threads] == [7] and any("another repository" in n for n in notes)
    assert any("1 issue(s) closed by a pull request whose title and description are in no export" in n for n in notes)
    thread = threads[0]
    assert thread["state"] == "closed" and thread["closed_by"] == {"ref": "#9", "url": f"{HTML}/pull/9"}
    assert thread["comments"][0]["association"] == "MEMBER" and thread["labels"] == ["bug"]


SHA = "0123456789abcdef0123456789abcdef01234567"
PULL = {"number": 8, "html_url": f"{HTML}/pull/8", "title": "Refresh stale manifests before verifying shards",
        "body": "Drops the cached manifest when its mtime is older than the shard's.", "merge_commit_sha": SHA}


def test_the_pull_request_a_closing_commit_came_from_gives_its_title_and_description(fake, tmp_path):
    fake.commit_pulls[SHA] = [{**PULL, "number": 5, "merge_commit_sha": "f" * 40}, PULL]  # the merged one wins
    store = ThreadStore(REPO, tmp_path)
    sync(REPO, store, client_for(fake)[0])
    assert store.load()[1]["closed_by"] == {"ref": "#8", "url": f"{HTML}/pull/8", "title": PULL["title"],
                                            "body": PULL["body"], "commit": "0123456"}
    assert fake.listed(f"/repos/{REPO}/commits/{SHA}/pulls")


def test_a_commit_no_pull_request_holds_stays_a_commit(fake, tmp_path):
    store = ThreadStore(REPO, tmp_path)
    sync(REPO, store, client_for(fake)[0])
    assert store.load()[1]["closed_by"]["ref"] == "0123456"


def test_a_renamed_repository_is_followed_and_stored_under_its_new_name(fake, tmp_path, monkeypatch):
    fake.old_names.add("oldacme/widgetrl")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    old_store = ThreadStore("oldacme/widgetrl", tmp_path)
    old_store.append([{"repo": "oldacme/widgetrl", "number": 1, "state": "closed", "title": "kept from before"}])
    messages = []
    update = update_threads("oldacme/widgetrl", api_url=fake.url, notify=messages.append, root=tmp_path)
    assert update.store.repo == REPO and update.renamed_from == ["oldacme/widgetrl"]
    assert any("oldacme/widgetrl is now acme/widgetrl" in m for m in messages)
    assert not old_store.folder.exists() and update.store.count() == 5  # its old store moved, then brought up to date
    assert fake.listed("/repos/oldacme/widgetrl") and fake.listed("/repositories/4242")  # the API's redirect
    assert fake.listed(f"/repos/{REPO}/issues?")  # then the new name's issues


def test_a_repository_renamed_after_its_first_sync_is_found_by_its_listing_redirect(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    old = "oldacme/widgetrl"
    fake.old_names.add(old)
    ThreadStore(old, tmp_path).save_state({"since": {"": "2025-03-01T00:00:00Z"}, "repo": old})  # synced before
    messages = []
    update = update_threads(old, api_url=fake.url, notify=messages.append, root=tmp_path)
    # Its name was not asked first (a no-change sync is one request); the listing's 301 made the run ask.
    assert fake.requests[0].startswith(f"/repos/{old}/issues?")
    assert update.store.repo == REPO and update.renamed_from == [old]
    assert any(f"{old} is now {REPO}" in m for m in messages) and update.store.count() == 5


def test_a_no_change_sync_of_a_repository_synced_before_is_one_request(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    update_threads(REPO, api_url=fake.url, root=tmp_path)
    fake.requests.clear()
    again = update_threads(REPO, api_url=fake.url, root=tmp_path)
    assert again.fetched == 0 and len(fake.requests) == 1 and fake.requests[0].startswith(f"/repos/{REPO}/issues?")


def test_an_export_saved_before_a_rename_is_read_with_an_alias(tmp_path):
    old = "https://github.example/oldacme/widgetrl"
    exported = [{"number": 7, "title": "Spline solver diverges", "body": "It diverges.", "state": "CLOSED",
                 "url": f"{old}/issues/7", "closedByPullRequestsReferences": [{"number": 9, "url": f"{old}/pull/9"}],
                 "comments": [{"id": "IC_1", "author": {"login": "maint"}, "authorAssociation": "MEMBER",
                               "body": "Lower `solver.step=0.1`.", "url": f"{old}/issues/7#issuecomment-1"}]}]
    (tmp_path / "gh.json").write_text(json.dumps(exported))
    threads, notes = read_exports([tmp_path / "gh.json"], REPO)
    assert threads == [] and "--github-alias oldacme/widgetrl=acme/widgetrl" in notes[0]
    threads, notes = read_exports([tmp_path / "gh.json"], REPO, {"oldacme/widgetrl": REPO})
    [thread] = threads
    assert thread["url"] == f"{HTML}/issues/7" and thread["comments"][0]["url"] == f"{HTML}/issues/7#issuecomment-1"
    assert thread["closed_by"]["url"] == f"{HTML}/pull/9" and "read as acme/widgetrl's" in notes[0]


def test_a_gh_pr_list_export_gives_the_closing_pull_requests_their_text(tmp_path):
    issues = [{"number": 7, "title": "Spline solver diverges", "state": "CLOSED", "url": f"{HTML}/issues/7",
               "closedByPullRequestsReferences": [{"number": 9, "url": f"{HTML}/pull/9"}], "comments": []},
              {"number": 8, "title": "Knot vector error", "state": "CLOSED", "url": f"{HTML}/issues/8", "comments": []}]
    pulls = [{"number": 9, "title": "Damp the spline solver", "body": "Halves the step after a divergence.",
              "url": f"{HTML}/pull/9"},
             {"number": 10, "title": "Check knot vectors", "body": "Sorted knots only.", "url": f"{HTML}/pull/10",
              "closingIssuesReferences": [{"number": 8, "url": f"{HTML}/issues/8"}]}]
    (tmp_path / "issues.json").write_text(json.dumps(issues))
    (tmp_path / "pulls.json").write_text(json.dumps(pulls))
    threads, _ = read_exports([tmp_path / "issues.json", tmp_path / "pulls.json"], REPO)
    by_number = {t["number"]: t for t in threads}
    assert sorted(by_number) == [7, 8]  # the pull requests are no issues
    assert by_number[7]["closed_by"] == {"ref": "#9", "url": f"{HTML}/pull/9", "title": "Damp the spline solver",
                                         "body": "Halves the step after a divergence."}
    assert by_number[8]["closed_by"]["title"] == "Check knot vectors"  # from the pull's own references


@pytest.mark.parametrize("text", ["", "{not json", "[1, 2]"])
def test_a_broken_export_is_a_clear_error(tmp_path, text):
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(GitHubError, match="docs/github.md"):
        read_exports([tmp_path / "bad.json"], REPO)


@pytest.mark.parametrize("repo", ["verl", "a/b/c", "../x", "a/..", "o/r; rm -rf /", ""])
def test_a_bad_repository_name_is_refused(tmp_path, repo):
    with pytest.raises(GitHubError, match="OWNER/REPO"):
        ThreadStore(repo, tmp_path)
