"""The judge's cross-validation (issue 35): no row is scored by a gate chosen on it, and a held-out
source is scored, never chosen on."""

from __future__ import annotations

import pytest

from rlhelper.measure import judge_cv


def _row(i: int, *, helps: bool, held_out: bool = False, kind: str = "question") -> dict:
    """One answerable item: the judge's order puts it first (`helps`) or moves it from first to second."""
    reorder, keep = ({"first": 1}, {"first": 2}) if helps else ({"first": 2}, {"first": 1})
    base = {"abstained": False, "weak": False, "confidence": 0.5}
    return {"set": "real", "id": f"r{i}", "source": f"o/r#{i}", "lang": "en", "answerable": True,
            "held_out": held_out, "input_kind": kind, "probabilities": [0.1, 0.9 if helps else 0.3],
            "hybrid": {**keep, **base}, "reorder": {**reorder, **base}, "keep": {**keep, **base}}


def test_each_fold_is_scored_by_a_gate_chosen_without_it():
    # the judge's order helps where it is sure (0.9) and hurts where it is not (0.3): a floor tells them apart
    rows = [_row(i, helps=i % 2 == 0) for i in range(40)]
    result = judge_cv.cross_validate(rows, folds=4)
    for fold, gate in result.gates.items():
        others = [r for r in rows if judge_cv.fold_of(r, 4) != fold]
        assert gate == judge_cv.choose(others)
    scored = judge_cv.gated_rows(result)
    assert judge_cv.figures(scored, "gated")["R@1"] == 1.0
    assert judge_cv.figures(scored, "reorder")["R@1"] == 0.5 and judge_cv.figures(scored, "keep")["R@1"] == 0.5


def test_held_out_rows_are_scored_but_never_choose_the_gate():
    # every trainable row says "never reorder"; the held-out rows alone would say "reorder"
    rows = [_row(i, helps=False, kind="error") for i in range(20)] + \
        [_row(100 + i, helps=True, held_out=True, kind="error") for i in range(30)]
    result = judge_cv.cross_validate(rows, folds=5)
    assert all(not gate.reorders(rows[-1]) for gate in result.gates.values())
    scored = judge_cv.gated_rows(result)
    assert len(scored) == 50 and judge_cv.figures(scored, "gated")["R@1"] == 20 / 50
    difference = judge_cv.paired(scored, "reorder", "gated")["recall@1"]
    assert difference.difference == pytest.approx(0.4 - 0.6) and difference.low <= difference.difference <= difference.high
