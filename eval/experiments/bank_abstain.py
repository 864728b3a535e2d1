"""Dev study: does closeness to an entry's bank questions tell answerable from unanswerable?

    python eval/experiments/bank_abstain.py

For the dev split of seeds (temporary seeds index), official and issues (index/default): the AUROC
of each abstention signal of the top hybrid entry, answerable items against unanswerable ones (and
against near misses: answerable items searched with their answers hidden), and the shipped
confidence's. Dev only.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from rlhelper import config
from rlhelper.api import Helper
from rlhelper.measure.calibration import collect
from rlhelper.measure.harness import eval_index
from rlhelper.measure.sets import load_eval_set
from rlhelper.search.confidence import Signals

EVAL = config.REPO_ROOT / "eval"
SETS = (("seeds", "seeds.jsonl", None), ("official", "official.jsonl", "default"), ("issues", "issues.jsonl", "default"))


def auroc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    p, n = np.array(pos)[:, None], np.array(neg)[None, :]
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def main() -> None:
    names = [f.name for f in fields(Signals)]
    with eval_index(None, ["seeds"]) as seeds_path:
        helpers = {"seeds": Helper.load(seeds_path), "default": Helper.load("default")}
        for name, file, index in SETS:
            helper = helpers[index or "seeds"]
            found = collect(helper, load_eval_set(EVAL / file, split="dev"), "hybrid")
            model = helper.retriever.confidence_model
            print(f"{name}: {len(found['answerable'])} answerable, {len(found['unanswerable'])} unanswerable, "
                  f"{len(found['near_miss'])} near misses; AUROC vs unanswerable / vs near misses")
            for signal in [*names, "confidence"]:
                value = model.confidence if signal == "confidence" else (lambda s, a=signal: getattr(s, a))
                pos = [value(s) for s in found["answerable"]]
                print(f"  {signal:18} {auroc(pos, [value(s) for s in found['unanswerable']]):.3f} "
                      f"{auroc(pos, [value(s) for s in found['near_miss']]):.3f}")


if __name__ == "__main__":
    main()
