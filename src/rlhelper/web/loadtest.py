"""Load benchmark for the web chat: concurrent clients asking through Gradio's HTTP API.

    run_load("http://127.0.0.1:7860", clients=20, questions=10) -> dict
    run_load(url, clients=50, duration=60)                         # ask for 60 s instead
    run_load_cli(url=None, clients=20, questions=10, duration=None) -> str   # `rlhelper bench web`

Each client is a thread with its own HTTP connection that asks its questions one
after the other, exactly as the page does: POST /gradio_api/call/ask, then read
the server-sent events until "complete". A response time is from the POST to
the complete answer. Everything is bounded: clients, questions or duration, the
time of one request and the wall time of the run.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import socket
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from ..measure.timing import percentile

MAX_CLIENTS = 200
MAX_QUESTIONS = 1000
MAX_DURATION_S = 3600.0
TARGET_P95_S = 1.0

# Mixed on purpose: English, Chinese, a traceback, and one that should abstain.
QUESTIONS = [
    "Weight sync timed out between the trainer and SGLang",
    "CUDA out of memory during rollout",
    "rollout 阶段显存不足怎么办",
    "RuntimeError: wake_up timed out after 60s",
    "NCCL error: unhandled system error",
    "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
    "ModuleNotFoundError: No module named 'sglang'",
    "Training loss is NaN after a few steps",
    "Ray fails with Failed to generate package metadata",
    "生成速度很慢，如何加速",
    "How do I bake sourdough bread?",
]


class LoadError(Exception):
    """One request that did not give a complete answer."""


def ask_once(client: httpx.Client, base: str, question: str) -> float:
    """One question through the chat endpoint; returns seconds to the complete answer."""
    started = time.perf_counter()
    payload = {"data": [question, [], "", "", ""]}
    resp = client.post(f"{base}/gradio_api/call/ask", json=payload)
    if resp.status_code != 200:
        raise LoadError(f"POST answered HTTP {resp.status_code}")
    event_id = resp.json()["event_id"]
    event = None
    with client.stream("GET", f"{base}/gradio_api/call/ask/{event_id}") as stream:
        if stream.status_code != 200:
            raise LoadError(f"event stream answered HTTP {stream.status_code}")
        for line in stream.iter_lines():
            if line.startswith("event:"):
                event = line[len("event:"):].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                data = line[len("data:"):].strip()
                if event == "error":
                    raise LoadError(f"server error: {data[:200]}")
                if "rl-answer" not in data and "rl-error" not in data:
                    raise LoadError(f"unexpected answer: {data[:200]}")
                return time.perf_counter() - started
    raise LoadError("the event stream ended before the answer was complete")


def run_load(url: str, clients: int = 20, questions: int = 10, timeout: float = 30.0,
             max_seconds: float = 300.0, queries: list[str] | None = None, duration: float | None = None) -> dict:
    """`clients` threads each ask `questions` questions, or ask one after the other for `duration`
    seconds; returns requests, errors, latency percentiles (p50/p95/p99) and throughput.

    `timeout` bounds one request; after `max_seconds` no new request starts
    (the ones not run count as errors). With `duration`, no request starts
    after it; the ones under way finish and count.
    """
    clients = max(1, min(int(clients), MAX_CLIENTS))
    questions = max(1, min(int(questions), MAX_QUESTIONS))
    if duration is not None:
        duration = max_seconds = max(0.1, min(float(duration), MAX_DURATION_S))
    pool = queries or QUESTIONS
    base = url.rstrip("/")
    deadline = time.monotonic() + max_seconds
    times: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client_run(c: int) -> None:
        with httpx.Client(timeout=httpx.Timeout(timeout), trust_env=False) as http:
            for q in itertools.count() if duration is not None else range(questions):
                if time.monotonic() > deadline:
                    if duration is not None:
                        return  # the run's time is up: nothing was left undone
                    with lock:
                        errors.append("not run: the run's time limit was reached")
                    continue
                question = pool[(c + q) % len(pool)]
                try:
                    seconds = ask_once(http, base, question)
                except (LoadError, httpx.HTTPError, ValueError, KeyError) as err:
                    with lock:
                        errors.append(f"{type(err).__name__}: {err}")
                    continue
                with lock:
                    times.append(seconds)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as executor:
        list(executor.map(client_run, range(clients)))
    wall = time.perf_counter() - started
    p = {q: percentile(times, q) for q in (50, 95, 99)}
    return {
        "url": base,
        "clients": clients,
        "questions_per_client": None if duration is not None else questions,
        "duration_s": duration,
        "requests": len(times) + len(errors),
        "ok": len(times),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:5],
        "p50_s": round(p[50], 4) if times else None,
        "p95_s": round(p[95], 4) if times else None,
        "p99_s": round(p[99], 4) if times else None,
        "max_s": round(max(times), 4) if times else None,
        "mean_s": round(sum(times) / len(times), 4) if times else None,
        "wall_s": round(wall, 3),
        "requests_per_s": round(len(times) / wall, 2) if wall > 0 else None,
    }


def format_result(result: dict) -> str:
    if not result["ok"]:
        lines = [f"{result['requests']} requests to {result['url']}: all failed"]
    else:
        met = result["errors"] == 0 and result["p95_s"] <= TARGET_P95_S
        shape = (f"{result['questions_per_client']} questions" if result.get("duration_s") is None
                 else f"{result['duration_s']:g} s of questions")
        lines = [
            f"{result['clients']} clients × {shape} against {result['url']}",
            f"  requests   {result['requests']} ({result['ok']} ok, {result['errors']} errors)",
            f"  response   p50 {result['p50_s']:.3f} s   p95 {result['p95_s']:.3f} s   p99 {result['p99_s']:.3f} s"
            f"   max {result['max_s']:.3f} s",
            f"  throughput {result['requests_per_s']} requests/s over {result['wall_s']} s",
            f"  target     0 errors, p95 <= {TARGET_P95_S:g} s: {'met' if met else 'NOT met'}",
        ]
    lines += [f"  error: {e}" for e in result["error_samples"]]
    return "\n".join(lines)


def close_quietly(app) -> None:
    """Stop a server started for a run; Gradio would print "Closing server..." into the report."""
    with contextlib.redirect_stdout(io.StringIO()):
        app.close()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def run_load_cli(url: str | None = None, clients: int = 20, questions: int = 10, index=None,
                 duration: float | None = None) -> str:
    """`rlhelper bench web`: against `url`, or a server started here on 127.0.0.1 for the run."""
    if url:
        return format_result(run_load(url, clients, questions, duration=duration))
    from ..api import Helper
    from .server import start

    with tempfile.TemporaryDirectory() as tmp:  # votes of a benchmark do not belong in the user's files
        helper = Helper.load(index, user_bank=Path(tmp) / "questions.jsonl")
        app, local = start(helper, port=free_port(), feedback_db=Path(tmp) / "feedback.sqlite3")
        try:
            return (format_result(run_load(local, clients, questions, duration=duration))
                    + f"\n  (server: {json.dumps(local)})")
        finally:
            close_quietly(app)
