"""The web app as a real server on 127.0.0.1 under hostile requests and load.

Queries: empty, blank, binary and prompt injections over HTTP give a complete
event with a readable message or an answer quoting the docs, never an error
event. Files: every file-serving route of Gradio (file=, the older file/,
proxy=, static, assets, svelte, custom components, upload, monitoring, run
history) is tried against secrets this app must never serve: /etc/passwd, the
repo's index/ and .venv, the served index itself and the feedback SQLite file.
(tests/test_web_server.py covers the basic traversal forms.) Load: 50 clients
for a fixed time, 0 errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from test_reliability_hostile import BINARY, INJECTED_MARKERS, INJECTION, WRAPPED_INJECTIONS
from test_web_server import raw_get

from rlhelper.api import Helper
from rlhelper.measure.feedback import FeedbackStore
from rlhelper.web import loadtest
from rlhelper.web.server import start

REPO = Path(__file__).resolve().parent.parent
# Bytes that would show a leak: /etc/passwd, pyproject, SQLite, an index manifest or entry, pyvenv.cfg.
LEAKS = (b"root:x:0:0", b"[project]", b"SQLite format 3", b'"format_version"', b'"breadcrumb"',
         b"include-system-site-packages", b"secret-vote-query")


@pytest.fixture(scope="module")
def feedback_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("fb") / "feedback.sqlite3"
    FeedbackStore(db).record("secret-vote-query", "an answer", ["x"], 1)
    return db


@pytest.fixture(scope="module")
def server(seeds_index, feedback_db):
    app, url = start(Helper.load(index=seeds_index), port=loadtest.free_port(), feedback_db=feedback_db)
    yield url
    app.close()


def ask_over_http(url: str, query: str) -> tuple[str, str]:
    """(event name, last assistant message HTML) of one question through the page's API."""
    with httpx.Client(timeout=60, trust_env=False) as client:
        event_id = client.post(f"{url}/gradio_api/call/ask",
                               json={"data": [query, [], "", "", ""]}).json()["event_id"]
        text = client.get(f"{url}/gradio_api/call/ask/{event_id}").text
    events = [line[len("event:"):].strip() for line in text.splitlines() if line.startswith("event:")]
    data = [line[len("data:"):].strip() for line in text.splitlines() if line.startswith("data:")]
    history = json.loads(data[-1])[0] if events[-1] == "complete" else []
    replies = [m["content"] for m in history if m["role"] == "assistant"]
    last = replies[-1] if replies else ""
    # Gradio 6 sends a message's content as a list of typed parts.
    return events[-1], last if isinstance(last, str) else "".join(part.get("text", "") for part in last)


@pytest.mark.parametrize("query, shown", [
    ("", "The query is empty"),
    (" \n\t ", "The query is empty"),
    (BINARY.decode("latin-1"), "binary data"),
], ids=["0-bytes", "blank", "binary"])
def test_unsearchable_queries_get_a_readable_message(server, query, shown):
    event, html = ask_over_http(server, query)
    assert event == "complete" and "rl-error" in html and shown in html


@pytest.mark.parametrize("query", [INJECTION, *WRAPPED_INJECTIONS], ids=["alone", "traceback", "question", "tag"])
def test_prompt_injection_over_http_is_a_query_like_any_other(server, query):
    event, html = ask_over_http(server, query)
    assert event == "complete" and "rl-answer" in html
    assert not any(marker in html for marker in INJECTED_MARKERS)
    assert "<script" not in html.lower()


def secret_paths(seeds_index: Path, feedback_db: Path) -> list[str]:
    index = Path(seeds_index).resolve()
    return [
        f"/gradio_api/file={feedback_db}",
        f"/gradio_api/file/{feedback_db}",  # Gradio's older route, still answering
        f"/gradio_api/file={feedback_db.parent}/../{feedback_db.parent.name}/{feedback_db.name}",
        f"/gradio_api/file={index}/manifest.json",
        f"/gradio_api/file={index}/entries.jsonl",
        f"/gradio_api/file={REPO}/index/default/manifest.json",
        "/gradio_api/file=index/default/manifest.json",
        "/gradio_api/file=index/default/entries.jsonl",
        f"/gradio_api/file={REPO}/.venv/pyvenv.cfg",
        "/gradio_api/file=.venv/pyvenv.cfg",
        "/gradio_api/file/.venv/pyvenv.cfg",
        "/gradio_api/file=/proc/self/cwd/pyproject.toml",
        "/gradio_api/file=/proc/self/root/etc/passwd",
        "/gradio_api/file=%2fetc%2fpasswd",
        "/gradio_api/file=%252e%252e%252f%252e%252e%252fetc%252fpasswd",
        "/gradio_api/file=..\\..\\..\\..\\etc\\passwd",
        "/gradio_api/file=file:///etc/passwd",
        "/gradio_api/proxy=file:///etc/passwd",
        "/static/..%2f..%2f..%2f..%2fpyproject.toml",
        "/assets/%2e%2e/%2e%2e/%2e%2e/pyproject.toml",
        "/svelte/..%2f..%2f..%2f..%2f..%2fpyproject.toml",
        "/custom_component/x/client/..%2f..%2f..%2f..%2fetc/passwd",
        "/monitoring",
        "/monitoring/summary",
        "/gradio_api/run-history/records",
    ]


def test_no_route_serves_a_file_it_must_not(server, seeds_index, feedback_db):
    for path in secret_paths(seeds_index, feedback_db):
        status, body = raw_get(server, path)
        assert status in (400, 401, 403, 404, 405), (path, status, body[:200])
        assert not any(leak in body for leak in LEAKS), (path, body[:200])


def test_server_side_fetches_of_local_urls_are_refused(server):
    """file= and proxy= with a URL would make the server fetch it: never from this machine."""
    for path in (f"/gradio_api/file={server}/config", f"/gradio_api/proxy={server}/config",
                 "/gradio_api/file=http://localhost:22/", "/gradio_api/proxy=http://169.254.169.254/latest/"):
        status, body = raw_get(server, path)
        assert status in (400, 403, 404), (path, status, body[:200])
        assert b'"components"' not in body  # the app's own config, fetched through itself


def test_uploads_are_refused(server):
    with httpx.Client(timeout=30, trust_env=False) as client:
        for size in (10, 4096):
            resp = client.post(f"{server}/gradio_api/upload", files={"files": ("x.md", b"#" * size)})
            assert resp.status_code == 403 and "takes no files" in resp.text, resp.text[:200]


# -- load ------------------------------------------------------------------------------------------

LOAD_CLIENTS, LOAD_SECONDS = 50, 15


@pytest.mark.slow
def test_fifty_clients_for_a_fixed_time_get_no_errors(server):
    result = loadtest.run_load(server, clients=LOAD_CLIENTS, duration=LOAD_SECONDS, timeout=60)
    print("\n" + loadtest.format_result(result))
    assert result["errors"] == 0, result["error_samples"]
    assert result["clients"] == LOAD_CLIENTS and result["requests"] >= LOAD_CLIENTS
    assert result["p50_s"] <= result["p95_s"] <= result["p99_s"] <= result["max_s"]
    assert result["wall_s"] >= LOAD_SECONDS


# -- the attacks of issue 17, as `rlhelper bench reliability` runs them ------------------------------------


def test_the_web_attack_trials_all_hold(seeds_index, tmp_path):
    from rlhelper.web import trials as webtrials

    done = {t.name: t for t in webtrials.web_trials(Helper.load(index=seeds_index), tmp_path / "web")}
    assert list(done) == ["ssrf", "votes", "comment", "flood", "slow"]
    assert all(t.held for t in done.values()), [t for t in done.values() if not t.held]
    assert done["ssrf"].figures == "7/7 refused; 0 requests reached that URL, the key left 0 times"
