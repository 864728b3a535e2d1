"""The web app's rows of `rlhelper bench reliability`: each step starts servers of its own on
127.0.0.1 against a copy of the index and returns its rows (measure.reliability lays them out).

    load      `clients` browsers' worth of questions for `seconds`
    web       issue 17's attacks (trials.py)
    trust     issue 31's attacks (trusttrials.py)
    memory    20 clients sending 2 MB questions to a `rlhelper serve` process (trusttrials.py)
    store, ipv6net, concurrent
              issue 37's attacks (votetrials.py): a flood that fills the visitors' vote store, one
              IPv6 /64 posing as many visitors, votes racing in one session

The steps are handed down to measure.reliability.run_reliability as `web_steps` (the web app is a
face above that layer).
"""

from __future__ import annotations

from pathlib import Path

from ..measure.reliability import Row
from . import loadtest, trials, trusttrials, votetrials


def load_row(copy: Path, work: Path, clients: int, seconds: float) -> Row | None:
    """The load trial: `clients` browsers' worth of questions for `seconds` against the app on 127.0.0.1."""
    if seconds <= 0:
        return None
    from ..api import Helper
    from .server import start

    app, url = start(Helper.load(copy, user_bank=work / "load-bank" / "questions.jsonl"), port=loadtest.free_port(),
                     feedback_db=work / "feedback.sqlite3")
    try:
        result = loadtest.run_load(url, clients=clients, duration=seconds, timeout=60)
    finally:
        loadtest.close_quietly(app)
    figures = (f"{result['requests']} requests, p50 {result['p50_s'] or 0:.3f} s, p95 {result['p95_s'] or 0:.3f} s, "
               f"p99 {result['p99_s'] or 0:.3f} s, max {result['max_s'] or 0:.3f} s, "
               f"{result['requests_per_s']} requests/s")
    return Row("load", f"{result['clients']} clients × {seconds:g} s on 127.0.0.1", result["ok"],
               result["requests"], figures, result["error_samples"])


def attack_rows(copy: Path, work: Path, clients: int, seconds: float) -> list[Row]:
    """Issue 17's attacks (trials.py), a row each (`clients` and `seconds` are the load trial's)."""
    from ..api import Helper

    return [Row(t.name, t.tried, int(t.held), 1, t.figures, [] if t.held else [t.figures])
            for t in trials.web_trials(Helper.load(copy, user_bank=work / "web" / "questions.jsonl"), work / "web")]


RELIABILITY_STEPS = {"load": load_row, "web": attack_rows, "trust": trusttrials.trust_rows,
                     "memory": trusttrials.memory_row, **votetrials.RELIABILITY_STEPS}
