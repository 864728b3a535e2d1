"""Conversations in the eval: an item with "previous" is scored as the follow-up of that message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlhelper.api import Helper
from rlhelper.errors import ConfigError
from rlhelper.measure import harness, metrics, sets
from rlhelper.measure.calibration import calibrate

EVAL = Path(__file__).resolve().parent.parent / "eval"
SLIME_WEIGHT_SYNC = [{"doc": "002_bd1aab8bc1bcc176.txt", "heading": "Issue: Weight Sync Timeout"},
                     {"doc": "002_bd1aab8bc1bcc176.txt", "heading": "Issue: Weight Sync Failures in Multi-Node"}]


@pytest.fixture(scope="module")
def helper(seeds_index) -> Helper:
    return Helper.load(seeds_index)


def write_set(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    return path


def test_a_follow_up_is_scored_as_the_conversation_not_alone(helper, tmp_path):
    eval_file = write_set(tmp_path / "conversation.jsonl", [
        {"id": "with", "previous": "weight sync timed out", "query": "what about slime?", "kind": "follow-up",
         "expected": SLIME_WEIGHT_SYNC},
        {"id": "alone", "query": "what about slime?", "expected": SLIME_WEIGHT_SYNC},
    ])
    items = sets.load_eval_set(eval_file)
    assert items[0].previous == "weight sync timed out" and items[1].previous is None
    assert items[0].to_dict()["previous"] == "weight sync timed out" and "previous" not in items[1].to_dict()
    results, warnings = harness.evaluate_helper(helper, items, modes=("hybrid",))
    assert warnings == []
    with_previous, alone = (r.outcomes["hybrid"] for r in results)
    assert metrics.first_relevant_rank(with_previous.gains) in (1, 2, 3) and not with_previous.abstained
    assert metrics.first_relevant_rank(alone.gains) is None  # the same words alone do not find it
    # What the eval scored is what a user of the conversation would get.
    answer = helper.ask("what about slime?", k=metrics.K, mode="hybrid",
                        previous=helper.ask("weight sync timed out", k=metrics.K, mode="hybrid"))
    assert [h["heading"] for h in with_previous.top] == [h.entry.heading for h in answer.hits]
    assert with_previous.confidence == pytest.approx(answer.confidence) and 0 < answer.confidence <= 1


def test_calibration_refuses_follow_ups(helper):
    items = [sets.EvalItem("c", "what about slime?", "follow-up", "en", SLIME_WEIGHT_SYNC, split="dev",
                         previous="weight sync timed out")]
    with pytest.raises(ConfigError, match="follow-ups"):
        calibrate(helper, items)


def test_previous_may_be_a_conversation_and_small_talk_in_it_is_not_searched(helper, tmp_path):
    eval_file = write_set(tmp_path / "longer.jsonl", [
        {"id": "two", "previous": ["weight sync timed out between the trainer and sglang", "what about slime?"],
         "query": "on multiple nodes?", "kind": "follow-up", "expected": SLIME_WEIGHT_SYNC[1:]},
        {"id": "thanks", "previous": ["weight sync timed out between the trainer and sglang", "thanks!"],
         "query": "what about slime?", "kind": "follow-up", "expected": SLIME_WEIGHT_SYNC},
    ])
    two, thanks = sets.load_eval_set(eval_file)
    assert two.previous == ["weight sync timed out between the trainer and sglang", "what about slime?"]
    assert two.to_dict()["previous"] == two.previous
    kept = harness.asked_before(helper, thanks.previous)
    assert kept.query == "weight sync timed out between the trainer and sglang"  # "thanks" left the topic
    results, _ = harness.evaluate_helper(helper, [two, thanks], modes=("hybrid",))
    assert all(not r.outcomes["hybrid"].abstained for r in results)
