"""Issue 37's attacks on the visitors' votes, for `rlhelper bench reliability` and the tests:

    store_trial(helper, work)      -> WebTrial   a flood from one network fills the vote store; a newcomer's vote
                                                 still teaches them, and review shows the flood's spread
    ipv6_trial(helper, work)       -> WebTrial   fresh browsers from 40 addresses of one IPv6 /64
    concurrent_trial(helper, work) -> WebTrial   100 visitors' votes racing in one session, 4 threads

Each starts a server of its own on 127.0.0.1 (trials.own_server) behind a "proxy" it names
(`--trusted-proxy 127.0.0.1`), so a visitor's X-Forwarded-For is believed: many addresses from one
machine. Observations, not verdicts (as trials.py).
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

from ..index.visitorbank import VisitorBank
from ..measure.reliability import Row
from . import loadtest
from .app import EXAMPLES
from .trials import Visitor, WebTrial, dependencies, direct_call, lead_of, own_server
from .visitors import Visitors, load_key

EXAMPLE = EXAMPLES[0]["text"]  # the page's own example
FLOOD_NETWORK = "198.51.100"  # TEST-NET-2: the flood's /24
NEWCOMER = "203.0.113.9"  # TEST-NET-3: a visitor from another network
IPV6_HOST = "2001:db8:7:1"  # one /64 of the documentation prefix


def long_question(n: int = 1_900) -> str:
    """A question of `n` characters that still finds the example's entry."""
    return (EXAMPLE + " ") * (n // (len(EXAMPLE) + 1)) + EXAMPLE[: n % (len(EXAMPLE) + 1)].rstrip()


def _votes_bank(work: Path, **bounds) -> VisitorBank:
    """A vote store of the trial's own (its signing key beside it)."""
    return VisitorBank(work / f"votes-{uuid.uuid4().hex[:8]}" / "visitors.sqlite3", **bounds)


def store_trial(helper, work: Path, floods: int = 40, max_bytes: int = 300_000) -> WebTrial:
    """`floods` fresh browsers of one /24 each vote on one 1,900-character question, against a store of
    `max_bytes` (the flood is several times that); then a newcomer from another network votes."""
    bank = _votes_bank(work, max_bytes=max_bytes)
    app, url, _ = own_server(helper, work, writes_per_minute=10_000, proxies=["127.0.0.1"], visitor_bank=bank)
    question, refused = long_question(), 0
    try:
        deps = dependencies(url)
        for i in range(floods):
            flooder = Visitor(url, deps, headers={"X-Forwarded-For": f"{FLOOD_NETWORK}.{i + 1}"})
            flooder.ask(question)
            refused += "for you" not in flooder.vote("Like")
        newcomer = Visitor(url, deps, headers={"X-Forwarded-For": NEWCOMER})
        lead = lead_of(newcomer.ask(EXAMPLE))
        said = newcomer.vote("Dislike")
        moved = lead_of(newcomer.ask(EXAMPLE)) != lead
    finally:
        loadtest.close_quietly(app)
    room = bank.room()
    flood = next((s for s in bank.suggestions() if s.vote == 1), None)
    held = ("will not lead for this question for you" in said and moved and room["bytes"] <= max_bytes
            and refused == 0 and flood is not None and flood.networks == 1)
    figures = (f"{floods} votes of 1,900 characters from one /24 into a store of {max_bytes / 1000:.0f} kB: "
               f"{refused} refused, {room['votes']} kept ({room['bytes'] / 1000:.0f} kB); the newcomer's vote "
               f"{'taught them' if moved else 'did not teach them'}")
    if flood is not None:
        figures += f"; review: {flood.visitors} visitors in {flood.networks} network"
    return WebTrial("store", "a flood from one network past the vote store's size, then a newcomer's vote",
                    held, figures)


def ipv6_trial(helper, work: Path, addresses: int = 40, limit: int = 5) -> WebTrial:
    """Fresh browsers from `addresses` addresses of one IPv6 /64 ask and vote, against a server that
    gives one address `limit` visitor ids an hour and `limit` writes a minute."""
    app, url, _ = own_server(helper, work, writes_per_minute=limit, new_visitors_per_hour=limit,
                             proxies=["127.0.0.1"], visitor_bank=_votes_bank(work))
    tokens, accepted = set(), 0
    try:
        deps = dependencies(url)
        for i in range(addresses):
            visitor = Visitor(url, deps, headers={"X-Forwarded-For": f"{IPV6_HOST}::{i + 1:x}"})
            tokens.add(visitor.token)
            visitor.ask(EXAMPLE)
            accepted += "Thanks" in visitor.vote("Like")
    finally:
        loadtest.close_quietly(app)
    ids = len(tokens - {""})
    return WebTrial("ipv6net", f"fresh browsers from {addresses} addresses of one IPv6 /64",
                    ids <= limit and accepted <= limit,
                    f"{ids} visitor ids and {accepted} votes accepted (limit {limit} an hour and {limit} a minute "
                    "per address; IPv6 counted by /64)")


def concurrent_trial(helper, work: Path, visitors: int = 100, threads: int = 4) -> WebTrial:
    """`visitors` visitors (their tokens signed with the server's key) vote Like on one answer of one
    session, from `threads` threads at once: each vote must land under its own visitor."""
    bank = _votes_bank(work)
    app, url, _ = own_server(helper, work, writes_per_minute=10_000, visitor_bank=bank)
    try:
        deps = dependencies(url)
        minter = Visitors(None, bank, load_key(bank.path.parent), mints_per_hour=visitors)
        tokens = [minter.mint("bench") for _ in range(visitors)]
        asker = Visitor(url, deps)
        asker.ask(EXAMPLE)
        position, told = len(asker.history) - 1, []

        def vote(share: list[str]) -> None:
            for token in share:
                said = direct_call(url, deps["vote"], [None, token], asker.session,
                                   {"index": position, "value": None, "liked": "Like"})
                told.append(said.status_code == 200 and "for you" in said.text)

        racing = [threading.Thread(target=vote, args=(tokens[k::threads],)) for k in range(threads)]
        for t in racing:
            t.start()
        for t in racing:
            t.join(timeout=300)
    finally:
        loadtest.close_quietly(app)
    stored = sum(len(bank.votes_of(minter.verify(token))) == 1 for token in tokens)
    return WebTrial("concurrent", f"{visitors} visitors' votes in one session from {threads} threads at once",
                    stored == visitors and sum(told) == stored,
                    f"{stored}/{visitors} stored under their own visitor; {sum(told)} told it teaches them")


TRIALS = {"store": store_trial, "ipv6net": ipv6_trial, "concurrent": concurrent_trial}


def _step(trial):
    def step(copy: Path, work: Path, clients: int, seconds: float) -> Row:
        from ..api import Helper

        helper = Helper.load(copy, user_bank=work / "votes" / "questions.jsonl")
        done = trial(helper, work / "votes")
        return Row(done.name, done.tried, int(done.held), 1, done.figures, [] if done.held else [done.figures])

    return step


RELIABILITY_STEPS = {name: _step(trial) for name, trial in TRIALS.items()}
