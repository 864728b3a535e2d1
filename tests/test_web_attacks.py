"""The web app attacked as an outsider would, over real HTTP on 127.0.0.1 (issue 17).

Two OpenAI-compatible stubs listen on 127.0.0.1: the operator's configured endpoint and an
"attacker" one that a visitor would like the server to call with the operator's key. Requests go
through Gradio's public API (`/gradio_api/call/ask`, the Gradio client) and through the raw routes
the page itself uses (`queue/join` and `run/predict` with a handler's fn_index, spoken by
rlhelper.web.trials), which reach the handlers Gradio hides from its API docs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from rlhelper.answer.llm import LLMSettings
from rlhelper.api import Helper
from rlhelper.web import answering, loadtest
from rlhelper.web import server as web_server
from rlhelper.web.trials import call_api, dependencies, direct_call, queue_call

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openai_stub import OpenAIStub, Reply  # noqa: E402

QUESTION = "Weight sync timed out between the trainer and SGLang"
KEY_ENV, KEY = "RLHELPER_TEST_OPERATOR_KEY", "sk-operator-secret-4242"


@pytest.fixture(scope="module")
def stubs():
    operator = OpenAIStub(Reply("Raise `weight_sync_timeout` in the generator config [1].")).start()
    attacker = OpenAIStub(Reply("PWNED [1]")).start()
    yield operator, attacker
    operator.stop()
    attacker.stop()


@pytest.fixture(scope="module")
def env_with_key():
    """The operator's key, and the settings a CLI user might have: none may reach the page."""
    saved = {name: os.environ.get(name) for name in
             (KEY_ENV, "OPENAI_API_KEY", "RLHELPER_LLM_BASE_URL", "RLHELPER_LLM_MODEL", "NO_PROXY")}
    os.environ.update({KEY_ENV: KEY, "OPENAI_API_KEY": KEY, "NO_PROXY": "127.0.0.1,localhost"})
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="module")
def llm_server(seeds_index, stubs, env_with_key, tmp_path_factory):
    operator, _ = stubs
    db = tmp_path_factory.mktemp("fb-llm") / "feedback.sqlite3"
    app, url = web_server.start(Helper.load(index=seeds_index), port=loadtest.free_port(), feedback_db=db,
                         llm=[LLMSettings(base_url=operator.url, model="stub-model", api_key_env=KEY_ENV)])
    yield url
    app.close()


@pytest.fixture(scope="module")
def plain_server(seeds_index, stubs, env_with_key, tmp_path_factory):
    _, attacker = stubs
    # A CLI user's LLM settings in the environment do not turn the web LLM on.
    os.environ.update({"RLHELPER_LLM_BASE_URL": attacker.url, "RLHELPER_LLM_MODEL": "stub-model"})
    db = tmp_path_factory.mktemp("fb-plain") / "feedback.sqlite3"
    app, url = web_server.start(Helper.load(index=seeds_index), port=loadtest.free_port(), feedback_db=db,
                         writes_per_minute=5)
    yield url, db
    app.close()


def assert_nothing_reached(attacker: OpenAIStub) -> None:
    assert attacker.requests == [] and attacker.headers == []


# -- the LLM endpoint is the operator's choice, not the visitor's -------------------------------------


def test_a_visitor_cannot_send_the_llm_request_or_the_key_to_a_url_of_their_choosing(llm_server, stubs):
    operator, attacker = stubs
    attempts = [
        [QUESTION, [], "", "", True, attacker.url, "stub-model"],  # the API's shape before the fix
        [QUESTION, [], "", "", attacker.url],
        [QUESTION, [], "", "", f"stub-model@{attacker.url}"],
        [QUESTION, [], "", "", {"base_url": attacker.url, "model": "stub-model"}],
    ]
    for data in attempts:
        event, payload = call_api(llm_server, data)
        assert event == "error" and "not in the list of choices" in payload, (data, payload)
    # The hidden ways of asking (an example, a link) take the same arguments and the same checks.
    deps = dependencies(llm_server)
    for name in ("ask", "ask_page", "ask_page_1", "ask_linked", "ask_linked_1"):
        done = queue_call(llm_server, deps[name], [QUESTION, [], "", "", None, attacker.url, None],
                          uuid.uuid4().hex)
        assert done["success"] is False, (name, done)
    assert_nothing_reached(attacker)
    assert operator.requests == []

    # The configured endpoint, picked by name, still writes the answer, with the key sent to it alone.
    event, payload = call_api(llm_server, [QUESTION, [], "", "", "stub-model"])
    assert event == "complete" and "weight_sync_timeout" in payload and "Written by the LLM" in payload
    assert len(operator.requests) == 1 and operator.headers[0]["authorization"] == f"Bearer {KEY}"
    assert_nothing_reached(attacker)


def test_the_gradio_client_sees_only_ask_and_cannot_pick_a_url(llm_server, stubs):
    from gradio_client import Client

    _, attacker = stubs
    client = Client(llm_server, verbose=False)
    try:
        assert set(client.view_api(print_info=False, return_format="dict")["named_endpoints"]) == {"/ask"}
        with pytest.raises(Exception, match="not in the list of choices"):
            client.predict(QUESTION, [], "", "", attacker.url, api_name="/ask")
    finally:
        client.close()
    assert_nothing_reached(attacker)


def test_without_a_configured_llm_the_page_offers_none_and_the_api_refuses_one(plain_server, stubs):
    url, _ = plain_server
    _, attacker = stubs
    config = httpx.get(f"{url}/config", timeout=30, trust_env=False).json()
    props = {c.get("props", {}).get("elem_id"): c.get("props", {}) for c in config["components"]}
    assert props["rl-llm"]["visible"] is False
    assert [value for _, value in props["rl-use-llm"]["choices"]] == [""]
    for choice in ("stub-model", attacker.url, True):
        event, payload = call_api(url, [QUESTION, [], "", "", choice])
        assert event == "error", (choice, payload)
    assert call_api(url, [QUESTION, [], "", "", ""])[0] == "complete"  # no LLM: the extractive answer
    assert_nothing_reached(attacker)


# -- every hidden handler checks what it is sent ------------------------------------------------------


@pytest.mark.parametrize("event_data, reason", [
    ({"index": "1; DROP TABLE feedback", "value": None, "liked": True}, "position in the chat"),
    ({"index": [1, 0, 5], "value": None, "liked": True}, "position in the chat"),
    ({"index": 1.5, "value": None, "liked": True}, "position in the chat"),
    ({"index": 1, "value": None, "liked": "maybe"}, "a vote is 'Like', 'Dislike'"),
    ({"index": 1, "value": None, "liked": {"x": 1}}, "a vote is 'Like', 'Dislike'"),
    ("not an object", "an object with index and liked"),
    (None, "an object with index and liked"),
])
def test_a_hand_made_vote_is_refused_with_http_400_and_its_reason(plain_server, event_data, reason):
    url, db = plain_server
    vote = dependencies(url)["vote"]
    response = direct_call(url, vote, [None, None], uuid.uuid4().hex, event_data)
    assert response.status_code == 400, response.text
    assert reason in response.json()["error"]


def test_votes_and_comments_through_the_page_protocol_are_checked_and_bounded(plain_server):
    url, db = plain_server
    deps, session = dependencies(url), uuid.uuid4().hex
    asked = queue_call(url, deps["ask"], [QUESTION, [], "", "", None, ""], session)
    assert asked["success"] is True
    like = direct_call(url, deps["vote"], [None, None], session, {"index": 1, "value": None, "liked": "Like"})
    assert like.status_code == 200 and "helpful" in json.dumps(like.json())
    # A comment over the limit is refused and left in the box, not stored.
    long = direct_call(url, deps["comment"], [None, None, "x" * 6000], session)
    assert long.status_code == 200 and "limit is 2,000" in json.dumps(long.json())
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT comment FROM feedback").fetchall() == [(None,)]
    # A flood of votes from one client is bounded (this server allows 5 writes a minute).
    said = [json.dumps(direct_call(url, deps["vote"], [None, None], session,
                                   {"index": 1, "value": None, "liked": ("Like", "Dislike")[i % 2]}).json())
            for i in range(10)]
    assert sum("Too many votes" in s for s in said) >= 5
    assert oct(db.stat().st_mode & 0o777) == oct(0o600)


def test_a_configured_endpoint_that_redirects_elsewhere_does_not_carry_the_key_there(seeds_index, stubs,
                                                                                    env_with_key):
    """The key goes to the configured endpoint only, even when that endpoint answers with a redirect
    to another host (httpx drops Authorization across origins; this keeps it so)."""
    pytest.importorskip("langchain_openai", reason="the llm extra is not installed")
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    _, attacker = stubs
    target = attacker.url.replace("127.0.0.1", "localhost")  # another origin, same stub

    class Redirect(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(307)
            self.send_header("Location", f"{target}/chat/completions")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    before = len(attacker.headers)
    try:
        settings = LLMSettings(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", model="stub-model",
                               api_key_env=KEY_ENV)
        steps = list(answering.respond(Helper.load(index=seeds_index), QUESTION, [], llm=settings, budget=30))
    finally:
        server.shutdown()
        server.server_close()
    assert 'class="rl-sources"' in steps[-1][0][-1]["content"]
    print(f"\nredirected requests that reached the other origin: {len(attacker.headers) - before}, "
          f"with the key: {sum(KEY in json.dumps(h) for h in attacker.headers[before:])}")
    assert all(KEY not in json.dumps(h) for h in attacker.headers[before:])
    del attacker.requests[before:], attacker.headers[before:]  # the other tests expect it untouched
