"""Fitting the abstention model on dev items of a real index (calibration.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlhelper.api import Helper
from rlhelper.errors import ConfigError
from rlhelper.measure import calibration
from rlhelper.measure.sets import EvalItem, load_eval_set

REPO = Path(__file__).resolve().parent.parent
EVAL_FILE = REPO / "eval" / "seeds.jsonl"


@pytest.fixture(scope="module")
def dev_items() -> list[EvalItem]:
    items = load_eval_set(EVAL_FILE, split="dev")
    answerable = [i for i in items if i.answerable][:24]
    unanswerable = [i for i in items if not i.answerable][:6]
    return answerable + unanswerable


def test_near_misses_hide_every_answering_entry(seeds_index, dev_items):
    helper = Helper.load(seeds_index)
    item = next(i for i in dev_items if i.answerable)
    hidden = calibration.answering_rows(helper.entries, item.expected)
    assert hidden.any()
    allowed = helper.retriever.allowed_mask() & ~hidden
    from rlhelper.search.query import normalize_query

    ranking = helper.retriever.rank(normalize_query(item.query), allowed)
    assert not any(hidden[row] for row, _ in ranking.fused)


def test_calibrate_fits_a_model_that_ranks_answerable_items_higher(seeds_index, dev_items, tmp_path):
    helper = Helper.load(seeds_index)
    model = calibration.calibrate(helper, dev_items)
    assert set(model.thresholds) == {"lexical", "dense", "hybrid"}
    figures = model.notes["dev_figures"]["hybrid"]
    assert figures["wrongly_abstained"] <= 0.05
    assert set(model.weak_ceilings) == set(model.thresholds)
    assert all(model.weak_ceilings[m] >= model.thresholds[m] for m in model.thresholds)
    found = calibration.collect(helper, dev_items, "hybrid")
    pos = np.mean([model.confidence(s) for s in found["answerable"]])
    neg = np.mean([model.confidence(s) for s in found["unanswerable"] + found["near_miss"]])
    assert pos > neg
    assert len(found["near_miss"]) == len(found["answerable"]) == 24


def test_weak_ceiling_covers_the_share_of_unanswerable_items_and_never_sits_below_the_threshold():
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    ceiling = calibration.weak_ceiling(scores, threshold=0.25, share=0.8)
    assert ceiling == pytest.approx(0.8)
    assert sum(s <= ceiling for s in scores) == 8
    assert calibration.weak_ceiling(scores, threshold=0.85, share=0.8) == pytest.approx(0.85)
    assert calibration.weak_ceiling([], threshold=0.4) == 0.4
    # Rounded up to the 6 decimals the file keeps: the item at the ceiling stays inside it.
    assert calibration.weak_ceiling([0.1234561], threshold=0.0, share=1.0) >= 0.1234561


def test_calibration_refuses_test_items(seeds_index):
    helper = Helper.load(seeds_index)
    test_items = load_eval_set(EVAL_FILE, split="test")[:5]
    with pytest.raises(ConfigError, match="dev"):
        calibration.calibrate(helper, test_items)


def test_signals_are_bounded(seeds_index, dev_items):
    helper = Helper.load(seeds_index)
    for item in dev_items[:10]:
        result = helper.retrieve(item.query)
        s = result.signals
        assert -1.0 <= s.cosine <= 1.0 and 0.0 <= s.margin <= 2.0
        assert 0.0 <= s.lexical_match <= 1.0 and 0.0 <= s.coverage <= 1.0
        assert 0.0 <= result.confidence <= 1.0
