"""Paired bootstrap intervals of the eval harness (measure/bootstrap.py): the difference of two modes
on the same items, with the interval the set's size allows."""

from __future__ import annotations

import pytest

from rlhelper.measure import bootstrap
from rlhelper.measure.harness import ItemResult, Outcome, summarize
from rlhelper.measure.sets import EvalItem


def _item(n: int, answerable: bool) -> EvalItem:
    return EvalItem(id=f"i{n}", query=f"q{n}", kind="error", lang="en",
                    expected=[{"doc": "d.md", "heading": "h"}] if answerable else [])


def _outcome(rank: int | None, abstained: bool, confidence: float) -> Outcome:
    gains = [0] * 10
    if rank:
        gains[rank - 1] = 1
    return Outcome(gains=gains, abstained=abstained, confidence=confidence, top=[])


def _results(pattern_a, pattern_b, unanswerable_a, unanswerable_b) -> list[ItemResult]:
    """pattern_*: per answerable item (rank, abstained, confidence); unanswerable_*: (abstained, confidence)."""
    out = []
    for n, (a, b) in enumerate(zip(pattern_a, pattern_b, strict=True)):
        out.append(ItemResult(_item(n, True), {"hybrid": _outcome(*a), "judge": _outcome(*b)}))
    for n, (a, b) in enumerate(zip(unanswerable_a, unanswerable_b, strict=True), start=len(out)):
        out.append(ItemResult(_item(n, False), {"hybrid": _outcome(None, *a), "judge": _outcome(None, *b)}))
    return out


def _by_metric(items):
    return {d.metric: d for d in bootstrap.compare(items, "hybrid", "judge", resamples=500)}


def test_the_same_answers_differ_by_nothing():
    same = [(1, False, 0.9), (2, False, 0.6), (None, True, 0.1)] * 5
    items = _results(same, same, [(True, 0.2), (False, 0.7)] * 3, [(True, 0.2), (False, 0.7)] * 3)
    for d in bootstrap.compare(items, "hybrid", "judge", resamples=300):
        assert d.difference == 0 and d.low == 0 and d.high == 0, d


def test_observed_figures_are_the_harness_figures_and_a_clear_gain_excludes_zero():
    a = [(2, False, 0.6)] * 12 + [(1, True, 0.3)] * 4 + [(1, False, 0.8)] * 4
    b = [(1, False, 0.9)] * 12 + [(1, False, 0.7)] * 4 + [(1, False, 0.8)] * 4
    items = _results(a, b, [(False, 0.7)] * 6 + [(True, 0.1)] * 4, [(True, 0.2)] * 9 + [(False, 0.75)])
    found = _by_metric(items)
    for mode, side in (("hybrid", "a"), ("judge", "b")):
        expected = summarize(items, mode)
        assert getattr(found["recall@1"], side) == pytest.approx(expected["recall@1"])
        assert getattr(found["mrr@10"], side) == pytest.approx(expected["mrr@10"])
        assert getattr(found["wrongly_abstained"], side) == pytest.approx(expected["wrongly_abstained"])
        assert getattr(found["unanswerable_abstained"], side) == pytest.approx(expected["abstention_recall"])
        assert getattr(found["abstention_auroc"], side) == pytest.approx(expected["abstention_auroc"])
        assert getattr(found["correct"], side) == pytest.approx(expected["correct"])
    r1 = found["recall@1"]
    assert r1.difference == pytest.approx(0.6) and 0 < r1.low <= 0.6 <= r1.high <= 1
    assert found["unanswerable_abstained"].low > 0


def test_one_item_of_a_small_set_is_within_the_noise():
    a = [(1, False, 0.9)] * 22 + [(2, False, 0.5)]
    b = [(1, False, 0.9)] * 23
    d = _by_metric(_results(a, b, [(True, 0.1)] * 3, [(True, 0.1)] * 3))["recall@1"]
    assert d.difference == pytest.approx(1 / 23) and d.low == 0 and d.high > d.difference


def test_a_set_without_unanswerable_items_has_no_abstention_difference():
    same = [(1, False, 0.9)] * 4
    found = _by_metric(_results(same, same, [], []))
    assert found["abstention_auroc"].difference is None and found["recall@1"].difference == 0
