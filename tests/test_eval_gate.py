"""Regression gate: the test split's hybrid metrics must not fall more than 0.02 below eval/baseline.json.

The baseline is written by `python -m rlhelper.evaluate --write-baseline` (default embedder, seeds
collection, test split, hybrid mode). Raise it deliberately after an improvement; never lower it to
make this pass without saying why in the commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlhelper import evaluate as ev

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / "eval" / "baseline.json"
EVAL_FILE = REPO / "eval" / "seeds.jsonl"

pytestmark = pytest.mark.slow


@pytest.fixture
def gate_index(request, tmp_path):
    """The shared seeds index when conftest provides one, else a fresh one of the seeds collection."""
    try:
        return request.getfixturevalue("seeds_index")
    except pytest.FixtureLookupError:
        pass
    from rlhelper.ingest import ingest

    target = tmp_path / "seeds-index"
    ingest([REPO / "ingest" / "seeds"], index=target, rebuild=True)
    return target


def test_hybrid_metrics_on_the_test_split_hold_the_baseline(request):
    if not BASELINE.is_file():
        pytest.skip("eval/baseline.json is absent: write it with `python -m rlhelper.evaluate --write-baseline`")
    if not EVAL_FILE.is_file():
        pytest.skip("eval/seeds.jsonl is absent")
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    assert baseline["split"] == "test" and baseline["mode"] == "hybrid", "baseline must be test-split hybrid metrics"
    index = request.getfixturevalue("gate_index")

    result = ev.run_eval(EVAL_FILE, split="test", index=index, collections=["seeds"])

    assert result.embedder == baseline["embedder"], "baseline was measured with another embedder"
    # Abstention metrics depend on the calibrated threshold: re-calibrating means re-baselining, on purpose.
    if baseline.get("abstain_threshold") is not None:
        assert result.thresholds["hybrid"] == pytest.approx(baseline["abstain_threshold"]), (
            f"the hybrid abstention threshold is {result.thresholds['hybrid']} but the baseline was measured at "
            f"{baseline['abstain_threshold']}: after re-calibrating, rewrite the baseline with "
            "`python -m rlhelper.evaluate --write-baseline`")
    dropped = ev.regressions(result.metrics("hybrid"), baseline["metrics"], baseline.get("tolerance", ev.GATE_TOLERANCE))
    # Expected entries the index no longer holds (a renamed heading?) explain many drops: show them too.
    assert not dropped, "\n".join(["metrics fell below eval/baseline.json:", *dropped, *result.warnings])
