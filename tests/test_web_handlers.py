"""The web chat's handlers as plain functions, on real indexes (the seeds, and a hostile document)."""

from __future__ import annotations

import html as html_lib
import re
import sqlite3
import sys
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from rlhelper.answer.llm import NOT_ASKED_NOTICE, LLMSettings
from rlhelper.answer.model import RELATED_SHOWN
from rlhelper.api import Helper
from rlhelper.errors import IndexCorruptError
from rlhelper.measure.feedback import FeedbackStore
from rlhelper.web import answering, arguments, votes
from rlhelper.web import app as web_app
from rlhelper.web import session as web_session

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openai_stub import OpenAIStub, Reply  # noqa: E402

HOSTILE = Path(__file__).resolve().parent / "hostile"
WEIGHT_SYNC = "Weight sync timed out between the trainer and SGLang"
OFF_TOPIC = "What is the best recipe for sourdough bread with rye flour?"


@pytest.fixture(scope="module")
def helper(seeds_index) -> Helper:
    return Helper.load(index=seeds_index)


@pytest.fixture(scope="module")
def hostile_helper(tmp_path_factory) -> Helper:
    from rlhelper.ingest.pipeline import ingest

    index = tmp_path_factory.mktemp("hostile") / "idx"
    ingest([HOSTILE], collection="hostile", index=index)
    return Helper.load(index=index)


@pytest.fixture(autouse=True)
def no_stream_pause(monkeypatch):
    monkeypatch.setattr(answering, "STREAM_PAUSE", 0)


def run(helper, query, framework="", collection="", session=None, llm=None, history=None):
    """All yields of one respond() call, and the session it filled."""
    session = session if session is not None else web_session.new_session()
    steps = [[dict(m) for m in h] for h, _ in answering.respond(helper, query, history or [], framework, collection,
                                                           session, llm)]
    return steps, session


def final_html(steps) -> str:
    return steps[-1][-1]["content"]


def hrefs(html: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', html)


# -- answers --------------------------------------------------------------------------------


def test_a_follow_up_in_the_same_chat_is_read_with_the_last_question(helper):
    steps, session = run(helper, WEIGHT_SYNC)
    assert session["previous"] is not None and not session["previous"].abstained
    steps, session = run(helper, "thanks!", session=session, history=steps[-1])  # small talk keeps the topic
    steps, session = run(helper, "what about slime?", session=session, history=steps[-1])
    html = final_html(steps)
    assert "Read as a follow-up to your previous question" in html and "in slime&#x27;s docs" in html
    assert "Issue: Weight Sync Timeout" in html
    voted = session["answers"][len(steps[-1]) - 1]["query"]  # what a vote records: what was searched
    # A follow-up that only names a framework searches the question before in that framework's docs (issue 36)
    assert voted == WEIGHT_SYNC
    assert web_session.new_session()["previous"] is None  # the bin icon clears it with the chat
    steps, _ = run(helper, "what about slime?")  # a new chat: searched on its own
    assert "Read as a follow-up" not in final_html(steps)


def test_a_follow_up_after_no_match_is_read_with_that_question(helper):
    """Issue 29, point 8: the chat keeps a no-match answer as what a follow-up reads with; "what about
    slime?" then says slime's docs have nothing rather than quoting slime's Installation section."""
    steps, session = run(helper, WEIGHT_SYNC)
    steps, session = run(helper, "how do i bake bread", session=session, history=steps[-1])  # abstains
    steps, session = run(helper, "what about slime?", session=session, history=steps[-1])
    html = final_html(steps)
    assert "Read as a follow-up to your previous question (“how do i bake bread”)" in html
    assert "slime&#x27;s docs have no entry on it" in html and 'class="rl-abstain"' in html


def test_answer_streams_in_then_shows_numbered_citations(helper):
    expected = helper.ask(WEIGHT_SYNC, k=answering.TOP_K)
    assert not expected.abstained
    steps, session = run(helper, WEIGHT_SYNC)
    history = steps[-1]
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert "Weight sync timed out" in history[0]["content"]
    assert len(steps) >= 3  # user message, partial answer(s), final answer
    assert all("rl-sources" not in s[-1]["content"] for s in steps[:-1])
    html = final_html(steps)
    assert 'class="rl-sources"' in html and '<span class="rl-num">1</span>' in html
    for c in expected.citations:
        assert render_location(c) in html
        if c.url:
            assert f'href="{c.url}"' in html.replace("&amp;", "&")
    runners_up = min(RELATED_SHOWN, len(expected.hits) - len(expected.citations))
    assert html.count("Show the whole entry") == len(expected.citations) + runners_up
    assert html.count('<span class="rl-num">') == len(expected.citations)  # runners-up are not numbered
    assert '<sup class="rl-ref">' in html
    turn = session["answers"][1]
    assert turn["query"] == WEIGHT_SYNC and turn["answer"] == expected.text
    assert turn["entry_ids"] == [c.entry_id for c in expected.citations]


def render_location(c) -> str:
    return f"Lines {c.line_start}–{c.line_end} of “{c.doc_title}”"  # seeds: named by title, not storage name


def test_a_pasted_log_shows_the_lines_that_were_searched(helper):
    # The echo of a long paste shows its head (INFO noise); the answer says which line drove it.
    log = "".join(f"2025-03-01 12:00:{i % 60:02d} INFO step {i} reward=0.1\n" for i in range(300))
    log += "2025-03-01 12:05:00 ERROR RuntimeError: wake_up timed out after 60s\n"
    steps = run(helper, log)[0]
    user, answer = steps[-1][-2]["content"], final_html(steps)
    assert "Searched for: <code>RuntimeError: wake_up timed out after 60s</code>" in user
    assert "Searched for" not in answer  # the answer holds doc text only
    assert "Searched for" not in run(helper, WEIGHT_SYNC)[0][-1][-2]["content"]  # a one-line question is its own echo


def link_under(steps) -> str:
    """The query string of the "Link to this question" under the last user message."""
    found = re.findall(r'<div class="rl-link"><a href="([^"]*)"', steps[-1][-2]["content"])
    assert len(found) == 1 and 'target="_blank"' in steps[-1][-2]["content"]
    return html_lib.unescape(found[0])


def test_each_question_links_to_itself_with_its_filters(helper):
    steps, session = run(helper, WEIGHT_SYNC, framework="slime")
    link = link_under(steps)
    assert parse_qs(link.removeprefix("?")) == {"q": [WEIGHT_SYNC], "framework": ["slime"]}
    assert "rl-link" not in final_html(steps)  # under the question, not in the answer
    # Opened, the link asks the same question with the same filter.
    assert arguments.linked_question(parse_qs(link.removeprefix("?"))) == (WEIGHT_SYNC, "slime", "")
    # A follow-up links to what was searched, which stands on its own.
    steps, _ = run(helper, "and on multiple nodes?", framework="slime", session=session, history=steps[-1])
    question = parse_qs(link_under(steps).removeprefix("?"))["q"][0]
    assert question.startswith(WEIGHT_SYNC) and question.endswith(" on multiple nodes?")  # without its cue ("and")
    # A whole log is too long for a link: it links to the lines that were searched.
    log = "".join(f"2025-03-01 12:00:{i % 60:02d} INFO step {i} reward=0.1\n" for i in range(300))
    steps, _ = run(helper, log + "ERROR RuntimeError: wake_up timed out after 60s\n")
    assert parse_qs(link_under(steps).removeprefix("?")) == {"q": ["RuntimeError: wake_up timed out after 60s"]}


def test_a_link_opens_with_at_most_one_capped_question():
    assert arguments.linked_question({}) == ("", "", "")
    assert arguments.linked_question({"q": ["  first ", "second"], "framework": "verl"}) == ("first", "verl", "")
    assert len(arguments.linked_question({"q": "x" * 10_000})[0]) == arguments.LINK_MAX_CHARS


def test_framework_filter_that_hides_the_answer_says_so(helper):
    html = final_html(run(helper, "RuntimeError: wake_up timed out after 60s", framework="verl")[0])
    assert "Nothing matches within your filters, but outside them" in html


def test_chinese_question_is_answered_or_abstains_cleanly(helper):
    query = "rollout 阶段显存不足怎么办"
    expected = helper.ask(query, k=answering.TOP_K)
    html = final_html(run(helper, query)[0])
    if expected.abstained:
        assert "No matching entry in the docs." in html
    else:
        assert 'class="rl-sources"' in html
    assert "rollout 阶段显存不足怎么办" in run(helper, query)[0][-1][0]["content"]


def test_no_matching_entry_still_shows_related_entries(helper):
    expected = helper.ask(OFF_TOPIC, k=answering.TOP_K)
    assert expected.abstained and expected.hits
    steps, session = run(helper, OFF_TOPIC)
    html = final_html(steps)
    assert "No matching entry in the docs." in html
    assert "Related entries" in html and html.count('class="rl-cite"') == len(expected.hits)
    assert '<span class="rl-num">' not in html  # nothing is cited
    assert session["answers"][1]["entry_ids"] == []


def test_whole_entry_is_in_the_expandable_source(helper):
    expected = helper.ask(WEIGHT_SYNC, k=answering.TOP_K)
    html = final_html(run(helper, WEIGHT_SYNC)[0])
    entry = helper.entry(expected.citations[0].entry_id)
    details = html.split('<details class="rl-details">', 1)[1]
    words = [w for w in re.findall(r"[A-Za-z_]{6,}", entry.text)][:8]
    assert words and all(w in details for w in words)
    if "```" in entry.text or ".. code-block::" in entry.text:
        assert "<pre><code" in details and 'class="rl-copy"' in details


def test_framework_filter(helper):
    for framework in helper.frameworks:
        _, session = run(helper, "out of memory", framework=framework)
        ids = session["answers"][1]["entry_ids"]
        assert all(helper.entry(i).framework == framework for i in ids)
        hits = helper.ask("out of memory", k=answering.TOP_K, framework=framework).hits
        assert all(h.entry.framework == framework for h in hits)


def test_collection_filter(helper):
    collection = helper.collections[0]
    _, session = run(helper, WEIGHT_SYNC, collection=collection)
    assert all(helper.entry(i).collection == collection for i in session["answers"][1]["entry_ids"])


def test_unknown_filter_value_is_a_clear_state_not_a_crash(helper):
    steps, _ = run(helper, WEIGHT_SYNC, framework="no-such-framework")
    html = final_html(steps)
    assert "No matching entry in the docs." in html or "rl-error" in html


def test_the_input_box_is_emptied_in_the_browser_not_by_the_answer(helper, tmp_path):
    # When the answer's streamed updates emptied the box, they erased what the user had begun to
    # type meanwhile ("ollow up text"). The browser empties it at once; the answer never touches it.
    config = web_app.build_app(helper, feedback_db=tmp_path / "f.sqlite3").config
    elem = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
    ask = next(d for d in config["dependencies"] if d.get("api_name") == "ask")
    assert "rl-input" not in {elem[i] for i in ask["outputs"]}
    clear = next(d for d in config["dependencies"] if d.get("js") and "rl-input" in {elem[i] for i in d["outputs"]})
    assert clear["backend_fn"] is False and "''" in clear["js"]  # no server round trip to wait for


def test_app_builds_with_filters_from_the_index(helper, tmp_path):
    app = web_app.build_app(helper, feedback_db=tmp_path / "f.sqlite3")
    dropdowns = [b for b in app.blocks.values() if b.__class__.__name__ == "Dropdown"]
    choices = {tuple(v for _, v in d.choices) for d in dropdowns}
    assert ("", *helper.frameworks) in choices and ("", *helper.collections) in choices


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   \n\t ", None])
def test_empty_query_gives_a_clear_message(helper, query):
    steps, session = run(helper, query)
    assert len(steps) == 1 and len(steps[0]) == 1
    assert "The query is empty" in final_html(steps) and 'class="rl-error"' in final_html(steps)
    assert session["answers"] == {}


def test_one_megabyte_query_is_answered_with_a_notice(helper):
    query = ("RuntimeError: Weight sync timed out after 600s\n" + "x" * 1_000_000)[:1_000_000 + 100]
    steps, _ = run(helper, query)
    user, answer = steps[-1][0]["content"], final_html(steps)
    assert "more characters not shown" in user and len(user) < 10_000
    assert "rl-error" not in answer
    expected = helper.ask(query, k=answering.TOP_K)
    assert expected.truncated or expected.notices
    assert 'class="rl-notices"' in answer


def test_an_answer_too_big_to_send_drops_whole_entries_then_says_so(helper, monkeypatch):
    full = final_html(run(helper, WEIGHT_SYNC)[0])
    assert "Show the whole entry" in full
    monkeypatch.setattr(answering, "MAX_HTML_CHARS", len(full) - 1)  # too big with the whole entries
    steps = run(helper, WEIGHT_SYNC)[0]
    html = final_html(steps)
    assert "Show the whole entry" not in html and 'class="rl-sources"' in html
    assert all(len(s[-1]["content"]) <= len(full) - 1 for s in steps)
    monkeypatch.setattr(answering, "MAX_HTML_CHARS", 200)  # too big even without them
    html = final_html(run(helper, WEIGHT_SYNC)[0])
    assert "This answer is too large to show" in html and "rlhelper ask" in html


def test_binary_query_is_refused_with_the_library_message(helper):
    steps, _ = run(helper, "\x00\x01\x02\x03" * 50)
    assert 'class="rl-error"' in final_html(steps) and "Traceback" not in final_html(steps)


def test_library_error_is_one_line_not_a_traceback(helper, monkeypatch):
    def broken(*a, **kw):
        raise IndexCorruptError("index/default/entries.jsonl is unreadable: run `rlhelper ingest` again.")

    monkeypatch.setattr(helper, "ask", broken)
    html = final_html(run(helper, WEIGHT_SYNC)[0])
    assert "unreadable: run `rlhelper ingest` again." in html and "Traceback" not in html


# -- hostile documents ------------------------------------------------------------------------


def test_hostile_document_text_is_shown_never_run(hostile_helper):
    assert any("<script>" in e.text for e in hostile_helper.entries)  # the attack really is in the index
    steps, _ = run(hostile_helper, "XyzzyRewardError: reward server refused")
    for history in steps:
        for message in history:
            html = message["content"]
            assert not re.search(r"<\s*(script|img|iframe|svg|object|embed|style|link|meta|form|input)\b", html, re.I)
            assert not re.search(r"<[^>]*\son\w+\s*=", html)
            # documents link out over http(s); the only other link asks the question on this page
            assert all(h.startswith(("https://", "http://", "?q=")) for h in hrefs(html))
    html = final_html(steps)
    assert "&lt;script&gt;alert(&#x27;xss-script&#x27;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "[click](javascript:alert(1))" in html


def test_hostile_query_is_escaped(helper):
    steps, _ = run(helper, "<img src=x onerror=alert(1)> weight sync")
    echo, link = steps[-1][0]["content"].split('<div class="rl-link">')
    assert echo == "<p>&lt;img src=x onerror=alert(1)&gt; weight sync</p>"
    assert link.startswith('<a href="?q=%3Cimg+src%3Dx+onerror%3Dalert%281%29%3E+weight+sync"')  # encoded


def test_a_cited_heading_is_shown_literally_not_as_markdown(tmp_path):
    """A heading is document text: `*7*` in it (escaped in Markdown, plain in rst) stays `*7*` in the
    answer's heading and trail, as it does in the sources list, instead of turning into emphasis."""
    from rlhelper.ingest.pipeline import ingest

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "quasar.md").write_text(
        "# Quasar troubleshooting\n\n## Quasar \\*7\\* {{7\\*7}} ${7\\*7} template error\n\n"
        "Symptom: the quasar reward server prints `QuasarError: template 7*7` and the rollout stalls.\n\n"
        "Fix: set `quasar.escape_templates=true` and restart the rollout workers.\n", encoding="utf-8")
    (docs / "nebula.rst").write_text(
        "Nebula troubleshooting\n======================\n\nNebula {{6*6}} ${6*6} render error\n"
        "----------------------------------\n\nThe nebula reward server prints ``NebulaError: render 6*6`` "
        "and the rollout hangs; set ``nebula.raw=true``.\n", encoding="utf-8")
    ingest([docs], collection="quasar", index=tmp_path / "idx")
    helper = Helper.load(index=tmp_path / "idx")
    for query, heading in [("QuasarError template 7*7 rollout stalls", "Quasar *7* {{7*7}} ${7*7} template error"),
                           ("NebulaError render 6*6 rollout hangs", "Nebula {{6*6}} ${6*6} render error")]:
        answer = helper.ask(query, k=answering.TOP_K)
        assert answer.citations[0].heading == heading  # what the parser kept
        html = final_html(run(helper, query)[0])
        assert f"<h5>{heading} <sup" in html  # the answer's heading
        assert re.search(r"<p><em>[^<]*› " + re.escape(heading) + "</em></p>", html)  # its trail
        body = html.split('class="rl-sources"')[0]  # the whole entry below renders the doc's own markup
        assert "<em>7</em>" not in body and "<em>6</em>" not in body


# -- votes --------------------------------------------------------------------------------------


def test_votes_are_stored_changed_commented_and_taken_back(helper, tmp_path):
    store = FeedbackStore(tmp_path / "feedback.sqlite3")
    steps, session = run(helper, WEIGHT_SYNC)
    expected = helper.ask(WEIGHT_SYNC, k=answering.TOP_K)

    session, status = votes.record_vote(store, session, 1, True)
    assert "helpful" in status
    with sqlite3.connect(store.path) as conn:
        rows = conn.execute("SELECT query, answer, cited_entry_ids, vote, comment FROM feedback").fetchall()
    assert len(rows) == 1
    query, answer, ids, vote, comment = rows[0]
    assert (query, answer, vote, comment) == (WEIGHT_SYNC, expected.text, 1, None)
    assert ids == '["' + '", "'.join(c.entry_id for c in expected.citations) + '"]'

    session, _ = votes.record_vote(store, session, [1, 0], False)  # a changed mind: same row
    session, status = votes.add_comment(store, session, "The timeout key was right.")
    assert "saved" in status
    assert [(r["vote"], r["comment"]) for r in store.rows()] == [(-1, "The timeout key was right.")]

    session, status = votes.record_vote(store, session, 1, "")  # vote taken back
    assert status == "Vote removed." and store.rows() == []


def test_second_answer_gets_its_own_row(helper, tmp_path):
    store = FeedbackStore(tmp_path / "feedback.sqlite3")
    steps, session = run(helper, WEIGHT_SYNC)
    steps, session = run(helper, OFF_TOPIC, session=session, history=steps[-1])
    assert sorted(session["answers"]) == [1, 3]
    votes.record_vote(store, session, 1, True)
    votes.record_vote(store, session, 3, False)
    assert [(r["query"], r["vote"]) for r in store.rows()] == [(WEIGHT_SYNC, 1), (OFF_TOPIC, -1)]


def test_votes_on_non_answers_and_comments_without_votes(helper, tmp_path):
    store = FeedbackStore(tmp_path / "feedback.sqlite3")
    _, session = run(helper, WEIGHT_SYNC)
    assert votes.record_vote(store, session, 0, True)[1] == "Only answers can be voted on."
    assert "Vote on an answer first" in votes.add_comment(store, session, "hi")[1]
    assert store.rows() == []


@pytest.mark.parametrize("index, liked", [("1", True), ([1, 0, 0], True), (True, True), (-1, True), (1.0, True),
                                          (1, "maybe"), (1, 3), (1, ["Like"])])
def test_a_vote_the_page_cannot_send_is_refused_with_its_reason(helper, tmp_path, index, liked):
    store = FeedbackStore(tmp_path / "feedback.sqlite3")
    _, session = run(helper, WEIGHT_SYNC)
    with pytest.raises(arguments.RequestError, match="position in the chat|a vote is 'Like'"):
        votes.record_vote(store, session, index, liked)
    assert store.rows() == []


def test_votes_and_comments_past_the_clients_limit_are_not_stored(helper, tmp_path):
    store = FeedbackStore(tmp_path / "feedback.sqlite3")
    _, session = run(helper, WEIGHT_SYNC)
    assert votes.record_vote(store, session, 1, "Like", allowed=lambda: False)[1] == votes.TOO_MANY
    assert store.rows() == []
    votes.record_vote(store, session, 1, "Like")
    assert votes.add_comment(store, session, "fine", allowed=lambda: False)[1] == votes.TOO_MANY
    status = votes.add_comment(store, session, "x" * 6_000)[1]
    assert status.startswith("Not saved: The comment is 6,000 characters long and the limit is 2,000")
    assert [r["comment"] for r in store.rows()] == [None]
    with pytest.raises(arguments.RequestError):
        votes.add_comment(store, session, {"text": "x"})


def test_checked_ask_refuses_what_the_page_cannot_send(helper):
    settings = LLMSettings(base_url="http://127.0.0.1:30000/v1", model="m")
    endpoints = arguments.llm_endpoints([settings])
    assert arguments.checked_ask(helper, endpoints, "q", [], "", "", "m")[-1] is settings
    assert arguments.checked_ask(helper, endpoints, "q", None, None, None, None) == ("q", None, "", "", None)
    for args, reason in [
        (("q", [], "", "", "http://evil.example/v1"), "no LLM named"),
        ((123, [], "", "", ""), "message must be text"),
        (("q", "history", "", "", ""), "list of messages"),
        (("q", [], "nope", "", ""), "unknown framework 'nope'"),
        (("q", [], "", "nope", ""), "unknown collection 'nope'"),
        (("x" * (arguments.MAX_MESSAGE_CHARS + 1), [], "", "", ""), "the limit is"),
        (("q", [{"role": "user", "content": "x"}] * (arguments.MAX_HISTORY + 1), "", "", ""), "start a new chat"),
    ]:
        with pytest.raises(arguments.RequestError, match=reason):
            arguments.checked_ask(helper, endpoints, *args)
    with pytest.raises(arguments.RequestError, match="offers no LLM answers"):
        arguments.checked_ask(helper, {}, "q", [], "", "", "m")
    two = arguments.llm_endpoints([settings, LLMSettings(base_url="http://10.0.0.2:8000/v1", model="m")])
    assert list(two) == ["m", "m (10.0.0.2:8000)"]


# -- the LLM hook ---------------------------------------------------------------------------------


@pytest.fixture
def quiet_env(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "RLHELPER_LLM_BASE_URL", "RLHELPER_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def test_llm_answer_streams_and_keeps_the_sources(helper, quiet_env):
    pytest.importorskip("langchain_openai", reason="the llm extra is not installed")
    with OpenAIStub(Reply("Raise `weight_sync_timeout` in the generator config [1].")) as stub:
        steps, session = run(helper, WEIGHT_SYNC, llm=LLMSettings(base_url=stub.url, model="stub-model"))
    html = final_html(steps)
    assert "Raise <code>weight_sync_timeout</code> in the generator config" in html
    assert "Written by the LLM" in html and 'class="rl-sources"' in html
    assert "weight_sync_timeout" in session["answers"][1]["answer"]


def test_an_llm_that_finds_no_answer_in_the_entries_gives_no_match(helper, quiet_env):
    pytest.importorskip("langchain_openai", reason="the llm extra is not installed")
    with OpenAIStub(Reply("NO_ANSWER")) as stub:
        steps, session = run(helper, WEIGHT_SYNC, llm=LLMSettings(base_url=stub.url, model="stub-model"))
    assert all("NO_ANSWER" not in s[-1]["content"] for s in steps)  # not even while it streamed
    html = final_html(steps)
    assert "No matching entry in the docs." in html and "found no answer to this question" in html
    assert 'class="rl-sources"' not in html and "Weight Sync" in html  # the entries it read, as related
    assert session["answers"][1]["entry_ids"] == []


def test_llm_failure_keeps_the_extractive_answer_with_a_notice(helper, quiet_env):
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", model="nobody")  # port 9: nothing listens
    html = final_html(run(helper, WEIGHT_SYNC, llm=settings)[0])
    assert 'class="rl-notices"' in html and "extractive answer" in html
    assert 'class="rl-sources"' in html


def test_an_abstained_answer_says_the_llm_was_not_asked(helper, quiet_env):
    with OpenAIStub(Reply("This must never be shown [1].")) as stub:
        html = final_html(run(helper, OFF_TOPIC, llm=LLMSettings(base_url=stub.url, model="stub-model"))[0])
        assert not stub.requests  # nothing to ground an answer in: the model is not called
    assert "No matching entry in the docs." in html and "the LLM was not asked" in html
    assert html_lib.escape(NOT_ASKED_NOTICE) in html  # worded as the CLI says it (Helper.write words it)
    assert "must never be shown" not in html


@pytest.mark.parametrize("installed", [True, False])
def test_the_llm_choice_says_when_the_client_library_is_missing(helper, tmp_path, monkeypatch, installed):
    # The page used to look for rlhelper's own module, which is always there, so it never said so.
    from rlhelper.answer.llm_client import LLMSettings

    pytest.importorskip("langchain_openai")
    if not installed:
        monkeypatch.setitem(sys.modules, "langchain_openai", None)  # what find_spec sees when it is absent
    config = web_app.build_app(helper, feedback_db=tmp_path / "f.sqlite3",
                               llm=[LLMSettings(base_url="http://127.0.0.1:9/v1", model="m")]).config
    props = {c.get("props", {}).get("elem_id"): c.get("props", {}) for c in config["components"]}
    [note] = [c["props"] for c in config["components"] if "page.llm_unavailable" in str(c.get("props", {}).get("value"))]
    assert props["rl-use-llm"]["interactive"] is installed
    assert note.get("visible", True) is not installed  # "Not available in this install", in the browser's language


def test_the_warm_up_loads_the_markdown_renderer_before_the_first_visitor(helper):
    # Loading markdown-it and Pygments cost the first answer after start about 0.3 s.
    from rlhelper.answer import markup
    from rlhelper.web import server

    markup._parser.cache_clear()
    server._warm_up(helper)
    assert markup._parser.cache_info().currsize == 1
