"""Whose votes teach the web chat (issue 31, points 1 and 2), attacked as an outsider would: visitors
are raw HTTP clients on 127.0.0.1 speaking the page's own protocol (rlhelper.web.trials.Visitor: the
load event that hands out a visitor id, then the page's ask and vote events).

A visitor's vote changes that visitor's own answers at once and survives a reload; it changes no one
else's lead and shows no one else its words until the operator approves it (`rlhelper questions
review`); a take-back removes only the visitor's own vote, never the operator's records.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rlhelper.api import Helper
from rlhelper.cli.main import main as cli
from rlhelper.index.lastanswer import entry_key
from rlhelper.index.userbank import UserBank
from rlhelper.index.visitorbank import VisitorBank
from rlhelper.web import loadtest
from rlhelper.web.app import EXAMPLES
from rlhelper.web.server import start
from rlhelper.web.trials import Visitor, lead_of, matched_of

EXAMPLE = EXAMPLES[0]["text"]  # the page's own example


@pytest.fixture(scope="module")
def served(seeds_index, tmp_path_factory):
    """(url, helper, data folder): a server whose operator's bank and visitors' votes live in `data`."""
    data = tmp_path_factory.mktemp("trust-data")
    helper = Helper.load(seeds_index, user_bank=data / "questions.jsonl")
    app, url = start(helper, port=loadtest.free_port(), feedback_db=data / "feedback.sqlite3",
                     writes_per_minute=1000)
    yield url, helper, data
    app.close()


def review(data, *args: str):
    return CliRunner().invoke(cli, ["questions", "review", *args], env={"RLHELPER_DATA_DIR": str(data)})


def test_a_thumbs_down_on_the_example_demotes_its_entry_for_that_visitor_alone(served):
    url, _, _ = served
    attacker = Visitor(url)
    lead = lead_of(attacker.ask(EXAMPLE))
    assert lead
    assert "will not lead for this question for you" in attacker.vote("Dislike")
    assert lead_of(attacker.ask(EXAMPLE)) != lead  # it took at once, for them
    assert lead_of(attacker.reopen().ask(EXAMPLE)) != lead  # and survives a reload of their page
    assert lead_of(Visitor(url).ask(EXAMPLE)) == lead  # another visitor's answer is unchanged


def test_a_thumbs_up_under_a_filter_pins_nothing_for_others_until_the_operator_approves_it(served):
    url, helper, data = served
    attacker = Visitor(url)
    lead = lead_of(attacker.ask(EXAMPLE))
    framework, pinned = next((fw, lead_of(attacker.ask(EXAMPLE, framework=fw))) for fw in helper.frameworks
                             if lead_of(attacker.ask(EXAMPLE, framework=fw)) not in ("", lead))
    assert "will lead for this question for you" in attacker.vote("Like")
    assert lead_of(attacker.ask(EXAMPLE)) == pinned  # without the filter, for the visitor who voted
    bystander = Visitor(url)
    answer = bystander.ask(EXAMPLE)
    assert lead_of(answer) == lead and EXAMPLE not in " ".join(matched_of(answer))

    listed = review(data, "--json")
    suggestion = next(json.loads(line) for line in listed.output.splitlines()
                      if json.loads(line)["heading"] in pinned and json.loads(line)["vote"] == 1)
    assert suggestion["visitors"] == 1 and suggestion["addresses"] == 1
    assert f"framework {framework}" in suggestion["filters"]
    shown = review(data)
    assert suggestion["id"] in shown.output and "1 visitor, 1 address" in shown.output

    approved = review(data, "--approve", suggestion["id"])
    assert approved.exit_code == 0 and "1 approved" in approved.output
    answer = bystander.ask(EXAMPLE)
    assert lead_of(answer) == pinned and matched_of(answer)[0] == EXAMPLE  # approved: it teaches everyone
    assert suggestion["id"] not in review(data).output  # and is no longer pending


@pytest.mark.parametrize("secret", ["Free bitcoin: https://spam.example/claim-now",
                                    "on gpu-node-17.corp.internal with HF_TOKEN=hf_QpT9xSecretToken42"])
def test_a_visitors_words_are_never_shown_to_another_visitor(served, secret):
    url, _, _ = served
    question = f"RuntimeError: weight sync timed out between trainer and SGLang {secret}"
    attacker = Visitor(url)
    attacker.ask(question)
    assert "will lead" in attacker.vote("Like")
    assert any(secret in m for m in matched_of(attacker.ask(question)))  # their own words, to them
    for asked in (question, EXAMPLE):
        answer = Visitor(url).ask(asked)
        assert "rl-answer" in answer and secret not in answer and not any(secret in m for m in matched_of(answer))


def test_a_take_back_removes_the_visitors_vote_and_never_the_operators_record(served):
    url, helper, data = served
    question = "sglang weight update times out after the trainer step"
    hits = helper.search(question, k=5)
    operator = UserBank(data / "questions.jsonl")
    operator.add(question, entry_key(hits[2].entry), 1, "import")  # the operator's team taught this one
    visitor = Visitor(url)
    assert hits[2].entry.heading in lead_of(visitor.ask(question))
    assert "will lead" in visitor.vote("Like")
    assert "Vote removed" in visitor.vote("")  # taken back
    assert "Vote removed" in visitor.vote("")
    assert any(r.source == "import" and r.entry_id == hits[2].entry.id for r in operator.records())
    assert not VisitorBank(data / "visitors.sqlite3").votes_of(visitor.token.split(".")[0])
    # A thumbs-down from a visitor demotes it for them, never for the others.
    visitor.ask(question)
    visitor.vote("Dislike")
    assert hits[2].entry.heading not in lead_of(visitor.ask(question))
    assert hits[2].entry.heading in lead_of(Visitor(url).ask(question))
    assert any(r.source == "import" and r.entry_id == hits[2].entry.id for r in operator.records())


def test_a_forged_visitor_id_is_refused_and_teaches_nothing(served):
    url, _, data = served
    forger = Visitor(url)
    real = forger.token
    forger.token = real.split(".")[0] + ".AAAAAAAAAAAAAAAA"
    forger.ask(EXAMPLE)
    said = forger.vote("Like")
    assert "Not learned" in said and "visitor id" in said
    assert not VisitorBank(data / "visitors.sqlite3").votes_of(real.split(".")[0])


def test_learn_from_votes_teaches_everyone_and_says_so(seeds_index, tmp_path):
    helper = Helper.load(seeds_index, user_bank=tmp_path / "questions.jsonl")
    app, url = start(helper, port=loadtest.free_port(), feedback_db=tmp_path / "feedback.sqlite3",
                     learn_from_votes=True)
    try:
        voter = Visitor(url)
        lead = lead_of(voter.ask(EXAMPLE))
        assert "for everyone" in voter.vote("Dislike")
        assert lead_of(Visitor(url).ask(EXAMPLE)) != lead
        assert [r.source for r in helper.user_bank.records()] == ["web"]
        voter.vote("")  # their take-back removes what their vote wrote
        assert helper.user_bank.records() == []
        assert lead_of(Visitor(url).ask(EXAMPLE)) == lead
    finally:
        app.close()
