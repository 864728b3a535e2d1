"""The judge mode's calibration (measure/judge_calibration.py): a fitted combination of the pipeline's
and the judge's probabilities, and a threshold that respects a limit per eval set."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from rlhelper.measure import judge_calibration as jc
from rlhelper.search.confidence import ConfidenceModel, Signals, combine

MODEL = ConfidenceModel(weights=[4.0, 0.0, 0.0, 0.0, 0.0], bias=-2.0, thresholds={"hybrid": 0.3})


def _signals(cosine: float, judge: float) -> Signals:
    return Signals(cosine=cosine, margin=0.0, lexical_match=0.0, coverage=0.0, judge=judge)


def test_the_combination_is_a_logistic_of_both_logits_and_the_mean_without_weights():
    assert combine(0.2, 0.6, None) == pytest.approx(0.4)
    z = 1.5 * math.log(0.2 / 0.8) + 0.5 * math.log(0.6 / 0.4) - 0.25
    assert combine(0.2, 0.6, [1.5, 0.5, -0.25]) == pytest.approx(1 / (1 + math.exp(-z)))
    model = replace(MODEL, judge_weights=[1.5, 0.5, -0.25])
    signals = _signals(0.5, 0.6)
    own = model.confidence(replace(signals, judge=None))
    assert model.confidence(signals) == pytest.approx(combine(own, 0.6, [1.5, 0.5, -0.25]))
    again = ConfidenceModel.from_dict(model.to_dict())
    assert again.judge_weights == [1.5, 0.5, -0.25] and again.confidence(signals) == pytest.approx(model.confidence(signals))


def test_the_fit_leans_on_whichever_signal_separates():
    """Answerable items: the judge sure, the pipeline unsure; unanswerable: the judge unsure. The
    judge's weight must come out larger than the pipeline's."""
    found = {"set": {
        "answerable": [_signals(0.3 + 0.01 * i, 0.8 + 0.001 * i) for i in range(40)],
        "unanswerable": [_signals(0.3 + 0.01 * i, 0.2 + 0.001 * i) for i in range(20)],
        "near_miss": [_signals(0.35 + 0.01 * i, 0.25) for i in range(20)],
    }}
    w_own, w_judge, _ = jc.fit_combination(MODEL, found)
    assert w_judge > 1.0 and abs(w_own) < w_judge


def test_the_threshold_keeps_each_set_within_its_limit():
    scores = {
        "issues": {"answerable": [0.1, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9, 0.9, 0.9], "unanswerable": [0.2, 0.3, 0.55],
                   "near_miss": []},
        "seeds": {"answerable": [0.6] * 20, "unanswerable": [0.4, 0.45], "near_miss": [0.58]},
    }
    t = jc.choose_threshold(scores, {"issues": 0.1, "seeds": 0.05})
    assert 0.45 < t <= 0.5  # abstains on 0.1 (10 % of issues' answerable), 0.2, 0.3, 0.4, 0.45; not on 0.5
    strict = jc.choose_threshold(scores, {"issues": 0.0, "seeds": 0.05})
    assert strict < 0.1  # no issue may be abstained on: nothing below the lowest answerable
    loose = jc.choose_threshold(scores, {"issues": 0.2, "seeds": 0.05})
    assert 0.55 < loose <= 0.6  # two of issues' answerable (0.1, 0.5) may go: 0.55 and the near miss 0.58 too
