"""Issue 37 (trust, round 2), attacked as an outsider would, on real servers on 127.0.0.1: a flood
that fills the visitors' vote store, one IPv6 /64 posing as many visitors, an office behind one
address, `questions review` showing whole suggestions, and votes racing in one session. Visitors
are raw HTTP clients speaking the page's protocol (rlhelper.web.trials.Visitor); the flood and race
are the bench's own trials (rlhelper.web.votetrials), checked here in more detail."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rlhelper.api import Helper
from rlhelper.cli.main import main as cli
from rlhelper.index.visitorbank import VisitorBank
from rlhelper.web import loadtest, votetrials
from rlhelper.web.server import start
from rlhelper.web.trials import Visitor, dependencies, lead_of

EXAMPLE = votetrials.EXAMPLE


@pytest.fixture
def helper(seeds_index, tmp_path):
    return Helper.load(seeds_index, user_bank=tmp_path / "data" / "questions.jsonl")


def review(data, *args: str):
    return CliRunner().invoke(cli, ["questions", "review", *args], env={"RLHELPER_DATA_DIR": str(data)})


def test_a_flood_that_fills_the_vote_store_never_stops_a_newcomers_vote_from_teaching_them(helper, tmp_path):
    done = votetrials.store_trial(helper, tmp_path / "store", floods=40, max_bytes=300_000)
    assert done.held, done.figures
    assert "0 refused" in done.figures and "taught them" in done.figures


def test_a_full_store_gives_up_the_biggest_networks_least_used_votes_first(tmp_path):
    bank = VisitorBank(tmp_path / "v.sqlite3", max_bytes=200_000, per_address=8, per_network=30)
    entry = {"entry_id": "seeds/a.md#h", "collection": "seeds", "doc": "a.md", "heading": "H"}
    question = votetrials.long_question()
    bank.record("v-team", "192.0.2.10", "my team's own question", entry, 1)
    for i in range(60):  # 60 browsers of one /24, from 4 addresses
        bank.record(f"v-flood-{i}", f"198.51.100.{i % 4}", f"{i} {question}", entry, 1)
        assert len(bank.votes_of(f"v-flood-{i}")) == 1  # each new vote is kept: room is made, never refused
    held = [s for s in bank.suggestions() for _ in range(s.votes)]
    from_flood = [s for s in held if s.top_network == "198.51.100.0/24"]
    assert len(from_flood) <= 30 and bank.room()["bytes"] <= 200_000  # the network's share, the store's bytes
    assert [r.text for r in bank.votes_of("v-team")] == ["my team's own question"]  # another network's vote stays
    per_address = {}
    for i in range(60):
        if bank.votes_of(f"v-flood-{i}"):
            per_address[i % 4] = per_address.get(i % 4, 0) + 1
    assert max(per_address.values()) <= 8


def test_review_shows_a_suggestions_whole_text_escaped_and_how_its_votes_are_spread(helper, tmp_path):
    data = tmp_path / "data"
    bank = VisitorBank(data / "visitors.sqlite3")
    app, url = start(helper, port=loadtest.free_port(), feedback_db=data / "feedback.sqlite3", writes_per_minute=1000,
                     proxies=["127.0.0.1"], visitor_bank=bank)
    tail = "ends here \x1b]0;owned\x07 and \u202eafter"
    question = votetrials.long_question(1_700) + " " + tail
    try:
        deps = dependencies(url)
        for address in ("198.51.100.7", "198.51.100.8", "203.0.113.5"):
            visitor = Visitor(url, deps, headers={"X-Forwarded-For": address})
            visitor.ask(question)
            assert "for you" in visitor.vote("Like")
    finally:
        app.close()
    shown = review(data)
    assert shown.exit_code == 0, shown.output
    assert question.split(tail)[0].strip() + " ends here and after" in shown.output  # whole, not cut at 70
    assert "3 visitors, 3 addresses in 2 networks (2 of 3 votes from 198.51.100.0/24)" in shown.output
    [listed] = [json.loads(line) for line in review(data, "--json").output.splitlines()]
    assert (listed["networks"], listed["top_network"], listed["votes"]) == (2, "198.51.100.0/24", 3)
    approved = review(data, "--approve", listed["id"])
    assert question.split(tail)[0].strip() in approved.output  # what is approved is what was shown
    # The page drops control characters before a vote is kept; one written to the store another way is
    # shown escaped, for the operator to see, never sent to the terminal.
    bank.record("v-x", "192.0.2.1", "a question \x1b[2J with \u202econtrols", {**listed, "heading": "H"}, 1)
    shown = review(data).output
    assert "a question \\x1b[2J with \\u202econtrols" in shown and "\x1b[2J" not in shown


def test_ipv6_clients_are_counted_by_their_64(helper, tmp_path):
    done = votetrials.ipv6_trial(helper, tmp_path / "ipv6", addresses=40, limit=5)
    assert done.held, done.figures


def test_an_office_behind_one_address_gets_visitor_ids_by_default(helper, tmp_path):
    app, url = start(helper, port=loadtest.free_port(), feedback_db=tmp_path / "feedback.sqlite3",
                     writes_per_minute=1000, visitor_bank=VisitorBank(tmp_path / "office" / "visitors.sqlite3"))
    try:
        deps = dependencies(url)
        said = []
        for _ in range(40):  # 40 new browsers from 127.0.0.1 within the hour
            colleague = Visitor(url, deps)
            colleague.ask(EXAMPLE)
            said.append(colleague.vote("Dislike"))
    finally:
        app.close()
    assert all("will not lead for this question for you" in s for s in said), said[-1]


def test_past_the_visitor_id_limit_a_vote_says_which_limit_and_what_the_operator_can_change(helper, tmp_path):
    app, url = start(helper, port=loadtest.free_port(), feedback_db=tmp_path / "feedback.sqlite3",
                     writes_per_minute=1000, new_visitors_per_hour=2,
                     visitor_bank=VisitorBank(tmp_path / "office" / "visitors.sqlite3"))
    try:
        deps = dependencies(url)
        browsers = [Visitor(url, deps) for _ in range(3)]
        lead = lead_of(browsers[2].ask(EXAMPLE))
        said = browsers[2].vote("Dislike")
        still = lead_of(browsers[2].ask(EXAMPLE))
    finally:
        app.close()
    assert "new visitor ids" in said and "--new-visitors-per-hour" in said and "--trusted-proxy" in said
    assert "reload" not in said.lower() and still == lead  # nothing promised that does not happen


def test_votes_racing_in_one_session_each_land_under_their_own_visitor(helper, tmp_path):
    done = votetrials.concurrent_trial(helper, tmp_path / "race", visitors=100, threads=4)
    assert done.held, done.figures


def write_issue_31_store(path):
    import sqlite3

    with sqlite3.connect(path) as conn:  # the schema of issue 31
        conn.execute("CREATE TABLE votes (visitor TEXT NOT NULL, address TEXT NOT NULL, norm TEXT NOT NULL, "
                     "text TEXT NOT NULL, entry_id TEXT NOT NULL, collection TEXT NOT NULL, doc TEXT NOT NULL, "
                     "heading TEXT NOT NULL, vote INTEGER NOT NULL, filters TEXT NOT NULL, time TEXT NOT NULL, "
                     "PRIMARY KEY (visitor, norm, collection, doc, heading))")
        conn.execute("INSERT INTO votes VALUES ('v-old', '2001:db8:1:2::99', 'old question', 'Old question', "
                     "'seeds/a.md#h', 'seeds', 'a.md', 'H', 1, '', '2026-11-01T10:00:00+00:00')")


def test_a_vote_store_written_before_issue_37_is_read_and_given_its_networks(tmp_path):
    path = tmp_path / "visitors.sqlite3"
    write_issue_31_store(path)
    bank = VisitorBank(path)
    entry = {"entry_id": "seeds/a.md#h", "collection": "seeds", "doc": "a.md", "heading": "H"}
    bank.record("v-new", "2001:db8:1:2::7", "old question", entry, 1)
    [suggestion] = bank.suggestions()
    assert (suggestion.visitors, suggestion.addresses, suggestion.networks) == (2, 1, 1)  # one /64
    assert [r.text for r in bank.votes_of("v-old")] == ["Old question"]


def test_stores_racing_to_upgrade_one_file_each_get_a_working_schema(tmp_path):
    """Seen in `bench reliability`: votes racing into a store of the old layout failed with
    "duplicate column name: bytes" when two connections added the same column at once."""
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "visitors.sqlite3"
    write_issue_31_store(path)
    entry = {"entry_id": "seeds/a.md#h", "collection": "seeds", "doc": "a.md", "heading": "H"}
    banks = [VisitorBank(path) for _ in range(8)]  # one per server process: no lock in common
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: banks[n].record(f"v-{n}", f"10.0.{n}.1", "old question", entry, 1), range(8)))
    [suggestion] = VisitorBank(path).suggestions()
    assert suggestion.visitors == 9
