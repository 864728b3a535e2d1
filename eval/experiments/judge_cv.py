"""The judge's order on the pooled real reports, cross-validated (issue 35): figures for eval/DECISIONS.md.

    python eval/experiments/judge_cv.py ROWS.jsonl [MORE.jsonl ...] [--pool issues,real] [--folds 5]
        [--shipped kinds=question,zh margin=0.2 floor=0]

ROWS come from eval/experiments/judge_rows.py. The rows of the `--pool` sets are cross-validated
(rlhelper.measure.judge_cv): each scored by a gate chosen on the other folds. Then the gate chosen on
every trainable row of the pool (what would ship), or `--shipped`, is scored on every set, pool or not.
Printed per set and per language (zh on its own): hybrid, reorder (issue 27), keep, gated; and gated
against hybrid and against reorder with paired-bootstrap 95 % intervals. Only figures, never a query.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rlhelper.measure.judge_cv import Gate, choose, cross_validate, figures, gated_rows, paired, with_gate

MODES = ("hybrid", "reorder", "keep", "gated")
REAL = ("issues", "real")  # the sets written from real reports, also reported pooled


def line(name: str, rows: list[dict]) -> str:
    parts = [f"{name} ({sum(r['answerable'] for r in rows)}+{sum(not r['answerable'] for r in rows)})"]
    for mode in MODES:
        f = figures(rows, mode)
        parts.append(f"{mode}: " + " ".join(f"{k}={v:.3f}" for k, v in f.items() if isinstance(v, float)))
    for base in ("hybrid", "reorder"):
        if any(r["answerable"] for r in rows):
            d = paired(rows, base, "gated")["recall@1"]
            parts.append(f"gated-{base} R@1 {d.difference:+.3f} [{d.low:+.3f}, {d.high:+.3f}]")
    return "\n    ".join(parts)


def report(title: str, rows: list[dict]) -> None:
    print(f"== {title}")
    sets = sorted({r["set"] for r in rows})
    real = [s for s in REAL if s in sets]
    groups = [*sets, *(["+".join(real)] if len(real) > 1 else []), *(["all"] if len(sets) > 1 else [])]
    for name in groups:
        part = [r for r in rows if name == "all" or r["set"] in name.split("+")]
        for lang in ("all", "en", "zh"):
            sub = [r for r in part if lang == "all" or r["lang"] == lang]
            if sub and (lang == "all" or len({r["lang"] for r in part}) > 1):
                print("  " + line(f"{name} {lang}", sub))
    kinds = sorted({r["input_kind"] for r in rows})
    for kind in kinds:
        sub = [r for r in rows if r["input_kind"] == kind and r["answerable"]]
        if sub:
            f = {m: figures(sub, m)["R@1"] for m in MODES}
            print(f"  kind {kind} ({len(sub)} answerable) R@1 " + " ".join(f"{m}={v:.3f}" for m, v in f.items()))


def parse_gate(words: list[str]) -> Gate:
    fields = dict(w.split("=", 1) for w in words)
    return Gate(frozenset(k for k in fields.get("kinds", "").split(",") if k), float(fields.get("margin", 0)),
                float(fields.get("floor", 0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="+", type=Path)
    parser.add_argument("--pool", default="issues,real")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--shipped", nargs="*", default=None, help="A gate to score instead of the one chosen.")
    args = parser.parse_args()
    rows = [json.loads(x) for path in args.rows for x in path.read_text().splitlines() if x.strip()]
    pool_sets = set(args.pool.split(","))
    pool = [r for r in rows if r["set"] in pool_sets]
    result = cross_validate(pool, args.folds)
    for fold, gate in sorted(result.gates.items()):
        print(f"fold {fold}: {sum(1 for r in pool if result.gate_of(r) is gate and r['answerable'])} answerable scored, "
              f"gate chosen on the others: {gate.describe()}")
    report(f"pooled {args.folds}-fold cross-validation ({','.join(sorted(pool_sets))})", gated_rows(result))
    trainable = [r for r in pool if not r.get("held_out")]
    gate = parse_gate(args.shipped) if args.shipped is not None else choose(trainable)
    print(f"gate chosen on all {len(trainable)} trainable pool rows: {gate.describe()}")
    report("that gate on every set (in-sample on the pool's trainable rows)", with_gate(rows, gate))


if __name__ == "__main__":
    main()
