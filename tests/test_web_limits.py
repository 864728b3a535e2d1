"""Bounds on what a visitor can make the web server hold (issue 31, points 3, 4 and 6), over real HTTP
on 127.0.0.1: forwarded addresses believed only from the operator's proxies, session state and chat
history bounded by size, sessions per address bounded and let go when idle, no uploads."""

from __future__ import annotations

import pickle
import uuid

import httpx
import pytest

from rlhelper.api import Helper
from rlhelper.web import gate, loadtest
from rlhelper.web.server import start
from rlhelper.web.trials import Visitor, call_api, dependencies, queue_call

QUESTION = "Weight sync timed out between the trainer and SGLang"
BIG = 2_000_000  # characters: the longest question the page takes


@pytest.fixture(scope="module")
def served(seeds_index, tmp_path_factory):
    data = tmp_path_factory.mktemp("limits-data")
    helper = Helper.load(seeds_index, user_bank=data / "questions.jsonl")
    app, url = start(helper, port=loadtest.free_port(), feedback_db=data / "feedback.sqlite3", writes_per_minute=5)
    yield app, url
    app.close()


def held_sessions(app) -> dict:
    return dict(app.state_holder.session_data)


def votes_accepted(url: str, headers_of) -> int:
    """Eight fresh browsers, each asking once and voting once, with the headers `headers_of(i)`."""
    deps, accepted = dependencies(url), 0
    for i in range(8):
        visitor = Visitor(url, deps, headers=headers_of(i))
        visitor.ask(QUESTION)
        accepted += "Thanks" in visitor.vote(("Like", "Dislike")[i % 2])
    return accepted


# -- point 3: the real client address --------------------------------------------------------------


def test_a_forwarded_for_header_from_an_untrusted_address_does_not_move_the_vote_limit(served):
    _, url = served
    # 127.0.0.1 is what a local reverse proxy looks like: its header is believed only when named.
    assert votes_accepted(url, lambda i: {"X-Forwarded-For": f"203.0.113.{i + 1}"}) <= 5


def test_a_named_proxy_is_believed_and_limits_each_real_visitor(seeds_index, tmp_path):
    helper = Helper.load(seeds_index, user_bank=tmp_path / "questions.jsonl")
    app, url = start(helper, port=loadtest.free_port(), feedback_db=tmp_path / "feedback.sqlite3",
                     writes_per_minute=5, proxies=["127.0.0.1"])
    try:
        # Behind the proxy each visitor has their own address, and their own limit.
        assert votes_accepted(url, lambda i: {"X-Forwarded-For": f"203.0.113.{i + 1}"}) == 8
        # One visitor's address, however many browsers: the limit holds.
        assert votes_accepted(url, lambda i: {"X-Forwarded-For": "203.0.113.99"}) <= 5
    finally:
        app.close()


# -- point 4: memory ------------------------------------------------------------------------------------


def test_a_2mb_question_is_not_kept_in_the_session(served):
    app, url = served
    visitor = Visitor(url)
    for _ in range(3):
        html = visitor.ask("x " * (BIG // 2 - 40) + QUESTION)
        assert "rl-answer" in html or "rl-error" in html
    state = app.state_holder.session_data[visitor.session].state_data
    size = len(pickle.dumps(state))
    assert size < 200_000, f"the session holds {size:,} bytes"


def test_a_chat_history_is_bounded_by_characters(served):
    _, url = served
    history = [{"role": role, "content": [{"type": "text", "text": letter * 1_500_000}]}
               for role, letter in (("user", "y"), ("assistant", "z"))] * 2
    event, data = call_api(url, [QUESTION, history, "", "", ""])
    assert event == "error" and "the chat holds 6,000," in data and "the limit is 4,000,000" in data


def test_a_request_body_beyond_the_bound_is_refused_before_it_is_parsed(served):
    _, url = served
    body = b'{"data": ["' + b"q" * (gate.MAX_BODY_BYTES + 1024) + b'", [], "", "", ""]}'
    said = httpx.post(f"{url}/gradio_api/call/ask", content=body, headers={"content-type": "application/json"},
                      timeout=60, trust_env=False)
    assert said.status_code == 413 and "this server takes at most 16 MB" in said.json()["error"]


def test_sessions_per_address_are_bounded(served):
    app, url = served
    deps = dependencies(url)
    made = [uuid.uuid4().hex for _ in range(gate.SESSIONS_PER_ADDRESS + 24)]
    for session in made:
        queue_call(url, deps["ask"], [QUESTION, [], "", "", None, ""], session)
    held = [s for s in made if s in held_sessions(app)]
    assert len(held) <= gate.SESSIONS_PER_ADDRESS and made[-1] in held  # the newest stay, the oldest went
    before = len(held_sessions(app))
    for _ in range(gate.SESSIONS_PER_ADDRESS + 4):  # the public API, which sends no session id
        assert call_api(url, [QUESTION, [], "", "", ""])[0] == "complete"
    assert len(held_sessions(app)) <= before + 1


def test_idle_sessions_are_let_go():
    now = [0.0]
    sessions = gate.Sessions(per_address=3, idle=60, total=10, clock=lambda: now[0])
    assert sessions.seen("a", "s1") == [] and sessions.seen("b", "s2") == []
    now[0] = 45
    sessions.seen("a", "s3")
    now[0] = 80
    assert sessions.seen("c", "s4") == ["s1", "s2"]  # idle for a minute; s3 was used 35 s ago
    assert sessions.seen("a", "s5") == [] and sessions.seen("a", "s6") == [] and sessions.seen("a", "s7") == ["s3"]
    assert sessions.of("a") == 3 and len(sessions) == 4


# -- point 6: uploads ---------------------------------------------------------------------------------------


def test_uploads_are_refused_and_nothing_is_written(served):
    from gradio.utils import get_upload_folder

    _, url = served
    folder = get_upload_folder()

    def files_there() -> int:
        import os

        return sum(len(names) for _, _, names in os.walk(folder)) if os.path.isdir(folder) else 0

    before = files_there()
    files = [("files", (f"f{i}.txt", b"x" * 1000, "text/plain")) for i in range(50)]
    for route in ("/gradio_api/upload", "/gradio_api/upload?upload_id=abc", "/gradio_api/process_recording"):
        said = httpx.post(f"{url}{route}", files=files, timeout=30, trust_env=False)
        assert said.status_code == 403 and "takes no files" in said.text and folder not in said.text
    assert files_there() == before


def test_visitor_ids_are_signed_and_a_new_one_is_bounded_per_address(tmp_path):
    from rlhelper.index.visitorbank import VisitorBank
    from rlhelper.web.visitors import Visitors, load_key

    key = load_key(tmp_path)
    assert load_key(tmp_path) == key and oct((tmp_path / "web_visitor.key").stat().st_mode & 0o777) == oct(0o600)
    now = [0.0]
    visitors = Visitors(None, VisitorBank(tmp_path / "v.sqlite3"), key, mints_per_hour=3, clock=lambda: now[0])
    tokens = [visitors.mint("198.51.100.1") for _ in range(4)]
    assert all(tokens[:3]) and tokens[3] is None  # a fourth new browser from that address this hour: none
    assert visitors.mint("198.51.100.2")  # another address has its own
    assert visitors.verify(tokens[0]) == tokens[0].split(".")[0]
    forged = [tokens[0].split(".")[0] + "." + tokens[1].split(".")[1], "v-made-up.AAAA", "", None, 7, "x" * 500]
    assert [visitors.verify(t) for t in forged] == [None] * len(forged)
    assert Visitors(None, VisitorBank(tmp_path / "v.sqlite3"), b"another key" * 4).verify(tokens[0]) is None
    now[0] = 3601
    assert visitors.mint("198.51.100.1")  # an hour later
