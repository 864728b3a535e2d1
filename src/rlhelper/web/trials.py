"""Attacks on the web app over real HTTP on 127.0.0.1, for `rlhelper bench reliability` (issue 17).

    ssrf_trial(helper, work)       -> WebTrial   a visitor names their own LLM URL, by every route
    payload_trial(helper, work)    -> WebTrial   hand-made votes: HTTP 400 with a reason, never 500
    comment_trial(helper, work)    -> WebTrial   a 6,000-character comment is refused, not stored
    flood_trial(helper, work)      -> WebTrial   100 votes in a burst from one browser are bounded
    slow_trial(helper, work)       -> WebTrial   a pathological question in flight, a normal one answered

Observations, not verdicts (as in trials.py): each WebTrial says what was tried, whether it held,
and the figures; reliability.py lays them out. The page's own wire protocol is spoken here
(`call_api`, `queue_call`, `direct_call`), so the handlers Gradio hides from its API docs are
reached exactly as a hand-made request would reach them.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from . import loadtest

QUESTION = "Weight sync timed out between the trainer and SGLang"
MARKER = "QuasarPathological"  # the word SpinningHelper spins on


@dataclass
class WebTrial:
    name: str
    tried: str
    held: bool
    figures: str


# -- the page's wire protocol ------------------------------------------------------------------------


def call_api(url: str, data: list, timeout: float = 120) -> tuple[str, str]:
    """POST /gradio_api/call/ask then read its events: (last event name, its data)."""
    with httpx.Client(timeout=timeout, trust_env=False) as client:
        event_id = client.post(f"{url}/gradio_api/call/ask", json={"data": data}).json()["event_id"]
        text = client.get(f"{url}/gradio_api/call/ask/{event_id}").text
    events = [line[len("event:"):].strip() for line in text.splitlines() if line.startswith("event:")]
    data_lines = [line[len("data:"):].strip() for line in text.splitlines() if line.startswith("data:")]
    return (events or [""])[-1], (data_lines or [""])[-1]


def dependencies(url: str) -> dict[str, dict]:
    """The page's events by handler name (ask, ask_1, vote, ...), from /config."""
    config = httpx.get(f"{url}/config", timeout=30, trust_env=False).json()
    return {dep["api_name"]: dep for dep in config["dependencies"] if dep.get("backend_fn")}


def queue_call(url: str, dep: dict, data: list, session: str, timeout: float = 120, headers: dict | None = None) -> dict:
    """One queued event as the browser sends it (queue/join, then the session's event stream):
    the final message, {"success": ..., "output": ...}."""
    with httpx.Client(timeout=timeout, trust_env=False, headers=headers or {}) as client:
        joined = client.post(f"{url}/gradio_api/queue/join", json={
            "data": data, "fn_index": dep["id"], "session_hash": session, "event_data": None,
            "trigger_id": dep["targets"][0][0]})
        if joined.status_code != 200:
            return {"success": False, "joined": joined.status_code}
        with client.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": session}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[len("data:"):])
                    if message.get("msg") == "process_completed":
                        return message
    return {"success": False}


def direct_call(url: str, dep: dict, data: list, session: str, event_data=None) -> httpx.Response:
    """One unqueued event (votes, comments) as the browser sends it: POST run/predict with its fn_index."""
    return httpx.post(f"{url}/gradio_api/run/predict", timeout=30, trust_env=False, json={
        "data": data, "fn_index": dep["id"], "session_hash": session, "event_data": event_data,
        "trigger_id": dep["targets"][0][0]})


class Visitor:
    """One browser, spoken as raw HTTP: it opens the page (the load event that hands out a visitor id,
    kept as the browser keeps it), asks as the page asks, and votes as the page votes. A new Visitor
    is a fresh browser; `reopen()` is the same browser after a reload (same id, new session)."""

    def __init__(self, url: str, deps: dict | None = None, token: str = "", headers: dict | None = None):
        self.url, self.deps, self.token = url, deps or dependencies(url), token
        self.headers = headers or {}
        self.history: list = []
        self.reopen()

    def reopen(self) -> Visitor:
        self.session, self.history = uuid.uuid4().hex, []
        said = self._direct("welcome", [self.token or None, None])
        if said.status_code == 200:
            self.token = said.json()["data"][0] or self.token
        return self

    def _direct(self, name: str, data: list, event_data=None) -> httpx.Response:
        dep = self.deps[name]
        return httpx.post(f"{self.url}/gradio_api/run/predict", timeout=30, trust_env=False, headers=self.headers,
                          json={"data": data, "fn_index": dep["id"], "session_hash": self.session,
                                "event_data": event_data, "trigger_id": dep["targets"][0][0]})

    def ask(self, question: str, framework: str = "", collection: str = "") -> str:
        """The answer's HTML ("" when the question was refused); the chat grows as on the page."""
        done = queue_call(self.url, self.deps["ask_page"], [question, self.history, framework, collection, None, "",
                                                            self.token], self.session, headers=self.headers)
        if not done.get("success"):
            return ""
        self.history = done["output"]["data"][0]
        return message_text(self.history[-1])

    def vote(self, liked: str, position: int | None = None) -> str:
        """Like / Dislike / "" (taken back) the last answer (or the one at `position`): the status shown."""
        position = len(self.history) - 1 if position is None else position
        said = self._direct("vote", [None, self.token], {"index": position, "value": None, "liked": liked})
        return json.dumps(said.json(), ensure_ascii=False) if said.status_code == 200 else f"HTTP {said.status_code}"


def message_text(message: dict) -> str:
    """A chat message's HTML (Gradio 6 sends a message's content as a list of typed parts)."""
    content = message.get("content") if isinstance(message, dict) else ""
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])


def lead_of(html: str) -> str:
    """The first cited source's title, as text ("" when the answer cites none: an abstention lists
    related entries, which lead nothing)."""
    import html as html_lib
    import re

    cited = (html or "").partition('<div class="rl-sources">')[2]
    found = re.search(r'class="rl-cite-head">(.*?)</div>', cited, re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).strip() if found else ""


def matched_of(html: str) -> list[str]:
    """Every "matched: <question>" the answer shows."""
    import html as html_lib
    import re

    return [html_lib.unescape(m) for m in re.findall(r'rl-matched">matched: (.*?)</div>', html or "", re.S)]


# -- stand-ins -----------------------------------------------------------------------------------------


class Recorder:
    """An HTTP server on 127.0.0.1 that records every request (method, path, headers) and answers 404:
    where an attacker would like the server to send its LLM request and key."""

    def __init__(self):
        self.requests: list[tuple[str, str, dict]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _record(self):
                recorder.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _record

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class SpinningHelper:
    """A Helper whose search spins the CPU in pure Python for `spin` seconds on a question naming
    MARKER (as a giant section once did), until `stop` is set; any other question is answered as is."""

    def __init__(self, helper, spin: float = 60.0):
        self._helper, self.spin, self.stop = helper, spin, threading.Event()
        self._spinning, self._changed = 0, threading.Condition()

    def __getattr__(self, name):
        return getattr(self._helper, name)

    def ask(self, query, *args, **kwargs):
        if MARKER in query:
            self._count(+1)
            try:
                end = time.monotonic() + self.spin
                while time.monotonic() < end and not self.stop.is_set():
                    sum(i * i for i in range(20_000))
            finally:
                self._count(-1)
        return self._helper.ask(query, *args, **kwargs)

    def _count(self, step: int) -> None:
        with self._changed:
            self._spinning += step
            self._changed.notify_all()

    def wait_spinning(self, n: int = 1, timeout: float = 60.0) -> bool:
        """Wait until `n` searches spin at once: a test's "in flight" as a state, not a pause."""
        with self._changed:
            return self._changed.wait_for(lambda: self._spinning >= n, timeout)


def own_server(helper, work: Path, **kw) -> tuple[object, str, Path]:
    """(app, url, feedback file) of a server of its own, with a feedback file of its own."""
    from .server import start

    db = work / f"feedback-{uuid.uuid4().hex[:8]}.sqlite3"
    app, url = start(helper, port=loadtest.free_port(), feedback_db=db, **kw)
    return app, url, db


# -- the trials --------------------------------------------------------------------------------------------


def ssrf_trial(helper, work: Path) -> WebTrial:
    """The server is configured with one LLM endpoint and a key; a visitor names another URL through
    the public API (the pre-fix shape too), the hidden ways of asking, and the Gradio client."""
    from ..answer.llm import LLMSettings

    key_env, key = "RLHELPER_BENCH_OPERATOR_KEY", f"sk-bench-{uuid.uuid4().hex}"
    saved = os.environ.get(key_env)
    os.environ[key_env] = key
    attacker, operator = Recorder(), Recorder()
    app, url, db = own_server(helper, work, llm=[LLMSettings(base_url=operator.url, model="bench-model",
                                                       api_key_env=key_env)])
    try:
        refused = []
        for data in ([QUESTION, [], "", "", True, attacker.url, "bench-model"], [QUESTION, [], "", "", attacker.url]):
            refused.append(call_api(url, data)[0] == "error")
        deps = dependencies(url)
        for name in ("ask", "ask_page", "ask_page_1", "ask_linked", "ask_linked_1"):
            done = queue_call(url, deps[name], [QUESTION, [], "", "", None, attacker.url, None], uuid.uuid4().hex)
            refused.append(done.get("success") is False)
    finally:
        loadtest.close_quietly(app)
        attacker.close()
        operator.close()
        if saved is None:
            os.environ.pop(key_env, None)
        else:
            os.environ[key_env] = saved
    leaked = sum(key in json.dumps(headers) for _, _, headers in attacker.requests + operator.requests)
    held = all(refused) and not attacker.requests and not leaked
    return WebTrial("ssrf", f"{len(refused)} requests naming an LLM URL of the visitor's choosing", held,
                    f"{sum(refused)}/{len(refused)} refused; {len(attacker.requests)} requests reached that URL, "
                    f"the key left {leaked} times")


BAD_VOTES = [
    {"index": "1; DROP TABLE feedback", "value": None, "liked": True},
    {"index": [1, 0, 5], "value": None, "liked": True},
    {"index": 1, "value": None, "liked": "maybe"},
    "not an object",
    None,
]


def payload_trial(helper, work: Path) -> WebTrial:
    app, url, db = own_server(helper, work)
    try:
        vote = dependencies(url)["vote"]
        statuses = []
        for event_data in BAD_VOTES:
            response = direct_call(url, vote, [None, None], uuid.uuid4().hex, event_data)
            reason = response.json().get("error") if response.headers.get("content-type", "").startswith(
                "application/json") else None
            statuses.append((response.status_code, bool(reason)))
    finally:
        loadtest.close_quietly(app)
    held = all(status == 400 and reason for status, reason in statuses)
    return WebTrial("votes", f"{len(BAD_VOTES)} hand-made vote payloads", held,
                    "answered HTTP " + ", ".join(sorted({str(s) for s, _ in statuses}))
                    + (" with a reason" if all(r for _, r in statuses) else ", some without a reason"))


def _voted_session(url: str, deps: dict) -> str:
    session = uuid.uuid4().hex
    queue_call(url, deps["ask"], [QUESTION, [], "", "", None, ""], session)
    direct_call(url, deps["vote"], [None, None], session, {"index": 1, "value": None, "liked": "Like"})
    return session


def comment_trial(helper, work: Path) -> WebTrial:
    from ..measure.feedback import FeedbackStore

    app, url, db = own_server(helper, work)
    try:
        deps = dependencies(url)
        session = _voted_session(url, deps)
        said = json.dumps(direct_call(url, deps["comment"], [None, None, "x" * 6_000], session).json())
    finally:
        loadtest.close_quietly(app)
    rows = FeedbackStore(db).rows()
    held = "limit is 2,000" in said and len(rows) == 1 and rows[0]["comment"] is None
    return WebTrial("comment", "a 6,000-character comment through the page's protocol", held,
                    "refused with the limit; nothing stored" if held else f"said {said[:120]}; rows {len(rows)}")


def flood_trial(helper, work: Path, votes: int = 100) -> WebTrial:
    from ..measure.feedback import WRITES_PER_MINUTE

    app, url, db = own_server(helper, work)
    try:
        deps = dependencies(url)
        session = _voted_session(url, deps)
        said = [json.dumps(direct_call(url, deps["vote"], [None, None], session,
                                       {"index": 1, "value": None, "liked": ("Dislike", "Like")[i % 2]}).json())
                for i in range(votes)]
        size = db.stat().st_size if db.exists() else 0
        mode = db.stat().st_mode & 0o777 if db.exists() else 0
    finally:
        loadtest.close_quietly(app)
    stored = sum("Thanks" in s for s in said) + 1  # the first vote, before the burst
    held = stored <= WRITES_PER_MINUTE and mode == 0o600
    return WebTrial("flood", f"{votes} votes in a burst from one browser", held,
                    f"{stored} stored (limit {WRITES_PER_MINUTE} a minute), the rest refused; "
                    f"file {size / 1024:.0f} KB, mode {mode:o}")


def slow_trial(helper, work: Path, budget: float = 3.0) -> WebTrial:
    spinning = SpinningHelper(helper)
    app, url, db = own_server(spinning, work, time_budget=budget)
    stuck: dict = {}

    def pathological():
        started = time.monotonic()
        stuck["event"], stuck["data"] = call_api(url, [f"{MARKER} rollout stall", [], "", "", ""])
        stuck["seconds"] = time.monotonic() - started

    try:
        worker = threading.Thread(target=pathological)
        worker.start()
        time.sleep(0.5)
        started = time.monotonic()
        event, data = call_api(url, [QUESTION, [], "", "", ""])
        normal = time.monotonic() - started
        worker.join(timeout=120)
    finally:
        spinning.stop.set()
        loadtest.close_quietly(app)
    cut = stuck.get("event") == "complete" and "stopped working on this answer" in stuck.get("data", "")
    held = cut and event == "complete" and "rl-sources" in data and normal < 10 and stuck["seconds"] < budget + 5
    return WebTrial("slow", f"a question whose search spins 60 s, and a normal one (budget {budget:g} s)",
                    held, f"the normal one took {normal:.2f} s; the slow one was cut after "
                    f"{stuck.get('seconds', float('nan')):.1f} s")


TRIALS = (ssrf_trial, payload_trial, comment_trial, flood_trial, slow_trial)


def web_trials(helper, work: Path) -> list[WebTrial]:
    work.mkdir(parents=True, exist_ok=True)
    return [trial(helper, work) for trial in TRIALS]
