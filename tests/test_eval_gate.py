"""Regression gate: the test split's hybrid metrics must not fall more than 0.02 below the baselines:
eval/baseline.json for the single questions (eval/seeds.jsonl), eval/baseline-followups.json for the
conversations (eval/followups.jsonl; 28 answerable items, so one item lost fails it), and
eval/baseline-official.json for the official pages (eval/official.jsonl, on seeds + official: the
default index), and eval/baseline-issues.json for problems users reported in GitHub issues
(eval/issues.jsonl, default index; 23 answerable test items, so one item lost fails it).

A baseline is written by the command it records (`rlhelper eval --write-baseline`,
with `--set`, `--baseline` and `--collection` for the other sets; default embedder, test split,
hybrid mode). Raise it deliberately after an improvement; never lower it to make this pass without
saying why in the commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlhelper.measure import baseline as gate
from rlhelper.measure import harness

REPO = Path(__file__).resolve().parent.parent
GATED = [(REPO / "eval" / "seeds.jsonl", REPO / "eval" / "baseline.json"),
         (REPO / "eval" / "followups.jsonl", REPO / "eval" / "baseline-followups.json"),
         (REPO / "eval" / "official.jsonl", REPO / "eval" / "baseline-official.json"),
         (REPO / "eval" / "issues.jsonl", REPO / "eval" / "baseline-issues.json")]

pytestmark = pytest.mark.slow


def gate_index(request, tmp_path, collections: list[str]):
    """The shared index of these collections when conftest provides one, else a fresh one."""
    shared = {("seeds",): "seeds_index", ("official", "seeds"): "full_index"}.get(tuple(sorted(collections)))
    try:
        if shared:
            return request.getfixturevalue(shared)
    except pytest.FixtureLookupError:
        pass
    from rlhelper.ingest.pipeline import ingest

    target = tmp_path / "gate-index"
    ingest([REPO / "ingest" / name for name in collections], index=target, rebuild=True)
    return target


@pytest.mark.parametrize(("eval_file", "baseline_file"), GATED, ids=[f.name for f, _ in GATED])
def test_hybrid_metrics_on_the_test_split_hold_the_baseline(request, tmp_path, eval_file, baseline_file):
    if not baseline_file.is_file():
        pytest.skip(f"{baseline_file.name} is absent: write it with `rlhelper eval --write-baseline`")
    if not eval_file.is_file():
        pytest.skip(f"{eval_file.name} is absent")
    baseline = json.loads(baseline_file.read_text(encoding="utf-8"))
    assert baseline["eval_file"] == eval_file.name
    assert baseline["split"] == "test" and baseline["mode"] == "hybrid", "baseline must be test-split hybrid metrics"
    collections = baseline.get("collections") or ["seeds"]
    index = gate_index(request, tmp_path, collections)

    result = harness.run_eval(eval_file, split="test", index=index, collections=collections)

    assert result.embedder == baseline["embedder"], "baseline was measured with another embedder"
    # Abstention metrics depend on the calibrated threshold: re-calibrating means re-baselining, on purpose.
    if baseline.get("abstain_threshold") is not None:
        assert result.thresholds["hybrid"] == pytest.approx(baseline["abstain_threshold"]), (
            f"the hybrid abstention threshold is {result.thresholds['hybrid']} but the baseline was measured at "
            f"{baseline['abstain_threshold']}: after re-calibrating, rewrite the baseline with "
            f"`{baseline['command']}`")
    dropped = gate.regressions(result.metrics("hybrid"), baseline["metrics"], baseline.get("tolerance", gate.GATE_TOLERANCE))
    # Expected entries the index no longer holds (a renamed heading?) explain many drops: show them too.
    assert not dropped, "\n".join([f"metrics fell below {baseline_file.name}:", *dropped, *result.warnings])
