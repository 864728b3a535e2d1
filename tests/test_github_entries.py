"""A thread becomes an entry (github/entries.py): what counts as resolved, what is quoted, how it is titled."""

from __future__ import annotations

import json

import pytest
from github_fake import QUUX_TRACEBACK, REPO

from rlhelper.answer.extractive import parts_for
from rlhelper.ingest.github.entries import (
    QUOTE_CHARS,
    framework_of,
    is_resolved,
    problem_lines,
    report_title,
    thread_sources,
)
from rlhelper.schema import Hit


def reply(n: int, association: str = "MEMBER", author: str = "maint", body: str | None = None) -> dict:
    return {"id": n, "url": f"https://github.example/{REPO}/issues/1#issuecomment-{n}", "author": author,
            "association": association, "created_at": f"2025-02-{n:02d}T00:00:00Z",
            "body": body or f"Set `io.retries={n}` in the config to work around it."}


def thread(number: int = 1, comments=(), **fields) -> dict:
    return {"repo": REPO, "number": number, "title": "ZorbleChecksumError on sync", "body": QUUX_TRACEBACK,
            "url": f"https://github.example/{REPO}/issues/{number}", "state": "closed", "state_reason": "completed",
            "labels": [], "closed_at": "2025-03-01T12:00:00Z", "author": "reporter", "comments": list(comments),
            "closed_by": None, **fields}


def entry_of(t: dict):
    [doc] = thread_sources({t["number"]: t}, REPO, include_unresolved=True).docs
    [entry], warnings = doc.build(doc.read(), collection=doc.collection, doc=doc.doc, meta=doc.meta)
    assert warnings == []
    return entry


@pytest.mark.parametrize(("repo", "framework"), [("verl-project/verl", "verl"), ("NovaSky-AI/SkyRL", "skyrl"),
                                                 ("THUDM/slime", "slime"), ("RLinf/RLinf", "rlinf"),
                                                 ("someone/OtherLib", "otherlib")])
def test_the_framework_is_the_repository_name(repo, framework):
    assert framework_of(repo) == framework


@pytest.mark.parametrize(("comments", "closed_by", "resolved"), [
    ([reply(1, "MEMBER")], None, True),
    ([reply(1, "OWNER")], None, True),
    ([reply(1, "COLLABORATOR")], None, True),
    ([reply(1, "MEMBER", body="Could you share the full log?")], None, False),  # a maintainer's word, but it only asks
    ([reply(1, "CONTRIBUTOR", body="Same here"), reply(2, "NONE", body="+1")], None, False),
    ([reply(1, "COLLABORATOR", author="stale[bot]")], None, False),  # a bot is no one's fix
    ([reply(1, "MEMBER", body="   ")], None, False),
    ([], {"ref": "abc1234", "url": None}, True),  # a closing commit is a resolution
    ([], {"ref": "#12", "url": None, "title": "Retry shard sync"}, True),  # so is a closing pull request
])
def test_a_thread_is_resolved_by_a_fix_in_it_or_what_closed_it(comments, closed_by, resolved):
    assert is_resolved(thread(comments=comments, closed_by=closed_by)) is resolved


def test_open_threads_with_an_answer_are_kept_and_the_unresolved_left_out_unless_asked_for():
    threads = {1: thread(1, [reply(1)]), 2: thread(2), 3: thread(3, [reply(3)], state="open", closed_at=None),
               4: thread(4, [reply(4, association="NONE", author="other", body="Any update on this?")], state="open",
                         closed_at=None)}
    found = thread_sources(threads, REPO)
    assert [d.doc for d in found.docs] == ["issues/1", "issues/3"] and "1 closed issue(s)" in found.notes[0]
    assert "1 open issue(s)" in found.notes[1]
    assert found.collections[f"github:{REPO}"]["threads"] == {
        "resolved": 1, "open with an answer": 1, "closed without a fix": 1, "open without an answer": 1}
    assert found.replaced == {f"github:{REPO}"}  # read whole: a thread gone since leaves the index
    everything = thread_sources(threads, REPO, include_unresolved=True, collection="mine")
    assert [d.doc for d in everything.docs] == ["issues/1", "issues/2", "issues/3"]
    assert everything.docs[0].collection == "mine"


def test_an_open_thread_is_titled_as_open_and_its_answer_says_whose_it_is_with_its_link():
    t = thread(3, [reply(3, association="CONTRIBUTOR", author="helper")], state="open", closed_at=None,
               created_at="2025-02-01T00:00:00Z")
    entry = entry_of(t)
    assert entry.doc_title == "Reported issue widgetrl#3, still open (opened 2025-02)"
    assert f"**Fix from another user:** [@helper, 2025-02-03](https://github.example/{REPO}/issues/1#issuecomment-3)" \
        " (a contributor to the project)" in entry.text


def test_an_old_name_of_the_repository_leaves_the_index():
    found = thread_sources({1: thread(1, [reply(1)])}, REPO, renamed_from=["oldacme/widgetrl"])
    assert found.replaced == {f"github:{REPO}", "github:oldacme/widgetrl"}


def test_the_problem_is_the_prose_and_the_error_signature_without_the_stack():
    lines = problem_lines(thread())
    text = "\n".join(lines)
    assert lines[0] == "When I start the rollout workers the run dies after the first step."
    assert "widgetrl.io.manifest.ZorbleChecksumError: shard 3 checksum mismatch in quux_loader" in text
    assert 'File "' not in text and "```" not in text and "Traceback" not in text


def test_template_comments_go_and_a_fence_in_the_signature_cannot_close_ours():
    body = "<!-- Describe the bug -->The run stops.\n\n```\nValueError: bad ~~~~ marker\n```"
    text = "\n".join(problem_lines(thread(body=body)))
    assert "Describe the bug" not in text and "The run stops." in text
    assert "\n~~~~~\nValueError: bad ~~~~ marker\n~~~~~" in text


def test_the_entry_is_titled_as_a_report_and_quotes_the_reply_with_its_link():
    t = thread(comments=[reply(1, "NONE", body="me too"), reply(2, body="Set `io.verify_shards=lazy`.")],
               closed_by={"ref": "#12", "url": f"https://github.example/{REPO}/pull/12", "title": "Lazy shard checks",
                          "body": "## What does this PR do?\nVerifies shards lazily, after the manifest is fresh.\n"
                                  "- [x] I ran the tests"})
    e = entry_of(t)
    assert e.kind == "issue" and e.framework == "widgetrl" and e.doc == "issues/1"
    assert e.doc_title == "Reported issue widgetrl#1, closed 2025-03 (fixed by #12)"
    assert e.heading == "ZorbleChecksumError on sync" and e.url == t["url"]
    assert "me too" not in e.text and e.line_end == len(e.text.split("\n"))
    assert f"**Maintainer's fix:** [@maint, 2025-02-02](https://github.example/{REPO}/issues/1#issuecomment-2)" in e.text
    assert "> Set `io.verify_shards=lazy`." in e.text
    assert f"**Fixed by pull request:** [#12: Lazy shard checks](https://github.example/{REPO}/pull/12)" in e.text
    assert "> Verifies shards lazily, after the manifest is fresh." in e.text
    assert "What does this PR do" not in e.text and "I ran the tests" not in e.text  # its template
    parts = parts_for(Hit(1, 1.0, e), 1)
    assert [p.kind for p in parts] == ["symptom", "pull", "maintainer_fix"]


def test_the_entry_id_stays_when_the_title_is_edited():
    assert entry_of(thread(comments=[reply(1)])).id == entry_of(thread(comments=[reply(1)], title="New title")).id


def test_a_long_thread_is_bounded_and_control_characters_go():
    long_reply = reply(1, body="\x1b[31mred\x1b[0m " + "word " * 5000)
    e = entry_of(thread(comments=[long_reply], body="x " * 50_000, title="a\x07b\nc"))
    assert len(e.text) < 5000 and "\x1b" not in e.text and "\x07" not in e.text
    assert e.heading == "ab c"
    quoted = [line for line in e.text.split("\n") if line.startswith(">")]
    assert sum(len(line) for line in quoted) <= QUOTE_CHARS + 10


def test_a_link_that_is_no_web_address_is_not_made_a_link():
    e = entry_of(thread(comments=[{**reply(1), "url": "javascript:alert(1)"}],
                        closed_by={"ref": "abc", "url": "javascript:alert(2)"}))
    assert "javascript:" not in e.text


def test_report_titles():
    assert report_title(REPO, {"number": 5, "state": "closed", "closed_at": None}) == "Reported issue widgetrl#5"
    assert report_title(REPO, {"number": 5, "state": "open", "closed_at": None}) == "Reported issue widgetrl#5, still open"
    assert report_title(REPO, {"number": 5, "state": "closed", "closed_at": "2024-12-31T00:00:00Z",
                               "closed_by": {"ref": "abc1234"}}) \
        == "Reported issue widgetrl#5, closed 2024-12 (fixed by abc1234)"


def test_the_document_text_is_the_thread_so_an_edit_changes_its_hash():
    a = thread_sources({1: thread(comments=[reply(1)])}, REPO).docs[0].read()
    b = thread_sources({1: thread(comments=[reply(1, body="Set `io.retries=9` now.")])}, REPO).docs[0].read()
    assert json.loads(a)["thread"]["comments"][0]["body"] == reply(1)["body"] and a != b
