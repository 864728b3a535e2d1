"""Dev study: how much the question bank's two rankings count in the fusion (questions.py).

    python eval/experiments/bank_study.py [--grid]

Runs the dev split of seeds (temporary seeds index), official and issues (index/default) with the
question-bank RRF weights set to each value of a small grid, hybrid mode only, and prints R@1 / R@3 /
MRR@10 and abstention figures per set. Dev only: the test split is not read.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import rlhelper.search.retrieve as retrieve
from rlhelper import config
from rlhelper.api import Helper
from rlhelper.measure.harness import eval_index, run_eval

EVAL = config.REPO_ROOT / "eval"
SETS = (("seeds", EVAL / "seeds.jsonl", None), ("official", EVAL / "official.jsonl", "default"),
        ("issues", EVAL / "issues.jsonl", "default"))
KEYS = ("recall@1", "recall@3", "mrr@10", "abstention_recall", "wrongly_abstained", "abstention_auroc")


def figures(helper: Helper, eval_file: Path) -> dict:
    result = run_eval(eval_file, split="dev", helper=helper, modes=("hybrid",))
    return result.metrics("hybrid")


def main() -> None:
    grid = [(0.0, 0.0, "rrf"), (1.0, 1.0, "rrf")]
    if "--grid" in sys.argv:
        grid = [(0.0, 0.0, "rrf")] + [(lw, dw, "rrf") for lw, dw in itertools.product((0.5, 1.0, 2.0), (0.5, 1.0))]
        grid += [(lw, 1.0, "max") for lw in (0.0, 0.5, 1.0, 2.0)]
    with eval_index(None, ["seeds"]) as seeds_path:
        helpers = {"seeds": Helper.load(seeds_path), "default": Helper.load("default")}
        print(f"{'lexQ':>5} {'denQ':>5} {'how':>4}  " + "  ".join(f"{name:>38}" for name, _, _ in SETS))
        for lex_w, dense_w, how in grid:
            retrieve.QUESTION_LEXICAL_WEIGHT, retrieve.QUESTION_DENSE_WEIGHT = lex_w, dense_w
            retrieve.QUESTION_DENSE_MODE = how
            cells = []
            for _name, file, index in SETS:
                m = figures(helpers[index or "seeds"], file)
                cells.append(" ".join(f"{m.get(k) if m.get(k) is not None else float('nan'):.3f}" for k in KEYS))
            print(f"{lex_w:5.1f} {dense_w:5.1f} {how:>4}  " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
