"""The regression gate's baselines (eval/baseline*.json): written by
`rlhelper eval --write-baseline`, read by tests/test_eval_gate.py.

A baseline holds the gated metrics of the test split's hybrid mode and the
command that measured them, so that whoever raises it can run it again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from .. import config
from .harness import EvalResult
from .sets import DEFAULT_EVAL_FILE

DEFAULT_BASELINE = config.REPO_ROOT / "eval" / "baseline.json"
# Metrics where higher is better; the regression gate watches these.
GATED_METRICS = ("recall@1", "recall@3", "recall@5", "mrr@10", "ndcg@10", "abstention_precision",
                 "abstention_recall", "unanswerable_abstained_or_weak")
GATE_TOLERANCE = 0.02
BASELINE_SPLIT = "test"
DEFAULT_COLLECTIONS = ("seeds",)


def baseline_of(result: EvalResult, mode: str = "hybrid",
                command: str = "rlhelper eval --write-baseline") -> dict:
    """What eval/baseline.json holds: the gated metrics of one mode, and how they were measured."""
    metrics = result.metrics(mode)
    return {
        "eval_file": Path(result.eval_file).name,
        "split": result.split,
        "mode": mode,
        "embedder": result.embedder,
        "collections": result.collections or ["seeds"],
        "created": result.created,
        "n": metrics["n"],
        "tolerance": GATE_TOLERANCE,
        "abstain_threshold": result.thresholds.get(mode),
        "metrics": {name: (round(metrics[name], 4) if metrics[name] is not None else None) for name in GATED_METRICS},
        "command": command,
    }


def regressions(current: dict, baseline: dict, tolerance: float = GATE_TOLERANCE) -> list[str]:
    """Gated metrics that fell more than `tolerance` below the baseline (a None now, a number then, counts)."""
    out = []
    for name, before in baseline.items():
        if before is None:
            continue
        now = current.get(name)
        if now is None or now < before - tolerance:
            out.append(f"{name}: {before:.4f} -> {'n/a' if now is None else f'{now:.4f}'} (tolerance {tolerance})")
    return out


def baseline_command(eval_file: Path, baseline: Path, collections: Sequence[str]) -> str:
    """The command that writes this baseline again, with repository-relative paths."""
    command = "rlhelper eval --write-baseline"
    if Path(eval_file).resolve() != DEFAULT_EVAL_FILE or Path(baseline).resolve() != DEFAULT_BASELINE:
        command += f" --set {_repo_relative(eval_file)} --baseline {_repo_relative(baseline)}"
    if list(collections) != list(DEFAULT_COLLECTIONS):
        command += "".join(f" --collection {c}" for c in collections)
    return command


def write_baseline(result: EvalResult, path: Path, command: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(baseline_of(result, command=command), indent=2) + "\n", encoding="utf-8")
    return path


def _repo_relative(path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(config.REPO_ROOT).as_posix()
    except ValueError:
        return str(path)
