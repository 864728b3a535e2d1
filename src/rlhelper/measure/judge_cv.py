"""Where the judge's order helps, decided by k-fold cross-validation over pooled items (issue 35).

    rows = [json.loads(line) for line in open("rows.jsonl")]      # eval/experiments/judge_rows.py
    result = cross_validate(rows, folds=5)                         # each row gets the gate of the folds it was not in
    scored = gated_rows(result)                                    # rows with a "gated" outcome beside the others

A row is one eval item searched three ways by the same index: `hybrid`, `reorder` (the judge orders the
first five hits, as issue 27 shipped) and `keep` (the judge's say in "no match" only, the pipeline's
order kept). A gate reads what a search knows at serve time (the judge's probabilities of the first
five hits in the pipeline's order and the input's kind) and picks the `reorder` or the `keep` outcome.

Folds group rows by source (two reports re-told from one thread share a fold) and are drawn by a hash
of it, so adding rows later leaves the old ones in their folds. For each fold the gate is chosen on the
other folds' rows that may be trained on (never a row whose source is held out: those are scored only),
then applied to the fold's rows: no row is scored by a gate chosen on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from types import SimpleNamespace

from ..search.judge import REORDER_FLOOR, REORDER_KINDS, REORDER_MARGIN, order_helps
from .bootstrap import Difference, compare

KINDS = ("question", "error", "zh")  # a pasted log keeps the pipeline's order already (issue 27)
MARGINS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
FLOORS = (0.0, 0.3, 0.5, 0.7)


@dataclass(frozen=True)
class Gate:
    """Reorder when the input's kind is in `kinds`, the judge's best probability among the first five
    is at least `floor`, and it beats the first hit's by at least `margin`."""

    kinds: frozenset[str] = frozenset(KINDS)
    margin: float = 0.0
    floor: float = 0.0

    def reorders(self, row: dict) -> bool:
        return order_helps(row.get("probabilities") or [], row["input_kind"], kinds=self.kinds,
                           margin=self.margin, floor=self.floor)

    def outcome(self, row: dict) -> dict:
        return row["reorder"] if self.reorders(row) else row["keep"]

    def describe(self) -> str:
        kinds = ",".join(k for k in KINDS if k in self.kinds) or "none"
        return f"kinds={kinds} margin={self.margin:g} floor={self.floor:g}"


ALWAYS = Gate()
NEVER = Gate(kinds=frozenset())
SHIPPED = Gate(REORDER_KINDS, REORDER_MARGIN, REORDER_FLOOR)


def candidates() -> list[Gate]:
    """Every gate tried: each set of kinds with each margin and floor, and never reordering."""
    out = [NEVER]
    for size in range(1, len(KINDS) + 1):
        for kinds in combinations(KINDS, size):
            out += [Gate(frozenset(kinds), m, f) for m in MARGINS for f in FLOORS]
    return out


def _key(gate: Gate, rows: Sequence[dict]) -> tuple:
    """What a gate is chosen by: right at 1, then in the top 3, then fewer answerable items abstained
    on, then the fewest reorders (the pipeline's order is the default when the rows cannot tell)."""
    answerable = [r for r in rows if r["answerable"]]
    outcomes = [gate.outcome(r) for r in answerable]
    return (sum(o["first"] == 1 for o in outcomes), sum(1 <= o["first"] <= 3 for o in outcomes),
            -sum(o["abstained"] for o in outcomes), -sum(gate.reorders(r) for r in rows))


def choose(rows: Sequence[dict], gates: Sequence[Gate] | None = None) -> Gate:
    """The gate that serves `rows` best by `_key` (the first listed among equals)."""
    gates = list(gates) if gates is not None else candidates()
    return max(gates, key=lambda g: _key(g, rows))


def fold_of(row: dict, folds: int) -> int:
    group = row.get("source") or f"{row['set']}:{row['id']}"
    return int(hashlib.sha256(group.encode()).hexdigest(), 16) % folds


@dataclass
class CrossValidation:
    rows: list[dict]
    gates: dict[int, Gate]  # fold -> the gate chosen without it
    folds: int

    def gate_of(self, row: dict) -> Gate:
        return self.gates[fold_of(row, self.folds)]


def cross_validate(rows: Iterable[dict], folds: int = 5, gates: Sequence[Gate] | None = None) -> CrossValidation:
    rows = list(rows)
    trainable = [r for r in rows if not r.get("held_out")]
    chosen = {f: choose([r for r in trainable if fold_of(r, folds) != f], gates) for f in range(folds)}
    return CrossValidation(rows, chosen, folds)


def gated_rows(result: CrossValidation) -> list[dict]:
    """The rows with `gated`: each scored by the gate its own fold did not choose."""
    return [{**r, "gated": result.gate_of(r).outcome(r)} for r in result.rows]


def with_gate(rows: Iterable[dict], gate: Gate, name: str = "gated") -> list[dict]:
    """The rows with one fixed gate's outcome as `name` (a shipped gate, scored on every row)."""
    return [{**r, name: gate.outcome(r)} for r in rows]


def _as_results(rows: Sequence[dict], modes: Sequence[str]) -> list[SimpleNamespace]:
    """Rows in the shape bootstrap.compare reads (harness.ItemResult's fields it uses)."""
    def outcome(o: dict) -> SimpleNamespace:
        gains = [int(rank == o["first"]) for rank in range(1, 11)]
        return SimpleNamespace(gains=gains, abstained=o["abstained"], weak=o["weak"], confidence=o["confidence"])

    return [SimpleNamespace(item=SimpleNamespace(answerable=r["answerable"]),
                            outcomes={m: outcome(r[m]) for m in modes}) for r in rows]


def paired(rows: Sequence[dict], a: str, b: str) -> dict[str, Difference]:
    """b - a per metric with its paired-bootstrap 95 % interval (bootstrap.compare's draws)."""
    return {d.metric: d for d in compare(_as_results(rows, (a, b)), a, b)}


def figures(rows: Sequence[dict], mode: str) -> dict[str, float | int]:
    """R@1, R@3, wrongly abstained (answerable); told "no match", "no match" or "weak" (unanswerable)."""
    yes = [r[mode] for r in rows if r["answerable"]]
    no = [r[mode] for r in rows if not r["answerable"]]
    out: dict[str, float | int] = {"answerable": len(yes), "unanswerable": len(no)}
    if yes:
        out["R@1"] = sum(o["first"] == 1 for o in yes) / len(yes)
        out["R@3"] = sum(1 <= o["first"] <= 3 for o in yes) / len(yes)
        out["wrongly_abstained"] = sum(o["abstained"] for o in yes) / len(yes)
    if no:
        out["no_match"] = sum(o["abstained"] for o in no) / len(no)
        out["no_match_or_weak"] = sum(o["abstained"] or o["weak"] for o in no) / len(no)
    return out
