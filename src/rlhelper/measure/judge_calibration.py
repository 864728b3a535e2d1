"""The judge mode's abstention, calibrated on dev: `rlhelper judge calibrate`.

The judge mode's confidence combines the pipeline's own (confidence.py, fitted on hybrid searches,
untouched here) with the judge's probability for the hit shown, as a logistic function of their two
logits, fitted here; then a threshold and a weak-match ceiling for the mode. The data is the dev split
of several eval sets searched on one index (the one the sets name their entries in): positives are
the answerable items, negatives the unanswerable ones and every answerable item searched again with
its answers hidden (a near miss), as calibration.py does for hybrid.

The threshold answers one question per set: how many of its answerable dev items may be told "no
match"? (`limits`; the sets in users' words get the issue's 10 % less a margin, since a dev split of
23 answerable items moves 4.3 points per item.) Of the thresholds every set's limit allows, the one
that abstains on the most unanswerable items (then near misses) is kept. The other modes' weights,
thresholds and ceilings are left as they are. Test items are never used.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..search.confidence import ConfidenceModel, Signals, fit_logistic, logit, model_for, save_model
from .calibration import collect, weak_ceiling
from .harness import eval_index
from .sets import load_eval_set

MODE = "judge"
DEFAULT_LIMIT = 0.05  # share of a set's answerable dev items the threshold may abstain on


def features(signals: Signals, model: ConfidenceModel) -> list[float]:
    """[logit(the pipeline's confidence), logit(the judge's probability)]."""
    from dataclasses import replace

    return [logit(model.confidence(replace(signals, judge=None))), logit(signals.judge)]


def fit_combination(model: ConfidenceModel, signals: dict[str, dict[str, list[Signals]]]) -> list[float]:
    """[w_own, w_judge, bias] fitted on every set's answerable items against its unanswerable items
    and near misses (class-balanced logistic regression)."""
    positives = [features(s, model) for found in signals.values() for s in found["answerable"]]
    negatives = [features(s, model) for found in signals.values() for s in found["unanswerable"] + found["near_miss"]]
    if not positives or not negatives:
        raise ConfigError("The judge's calibration needs answerable and unanswerable dev items.")
    weights, bias = fit_logistic(np.array(positives), np.array(negatives), l2=0.1)
    return [float(weights[0]), float(weights[1]), float(bias)]


def choose_threshold(scores: dict[str, dict[str, list[float]]], limits: dict[str, float]) -> float:
    """The threshold (abstain below it) that abstains on the most unanswerable items, then near
    misses, of all sets, while no set abstains on more than its limit of its answerable items."""
    every = sorted({v for found in scores.values() for values in found.values() for v in values})
    if not every:
        return 0.0
    candidates = [every[0] - 1e-6] + [(a + b) / 2 for a, b in zip(every, every[1:], strict=False)]
    best, best_key = candidates[0], None
    for t in candidates:
        if any(found["answerable"] and sum(v < t for v in found["answerable"]) / len(found["answerable"])
               > limits.get(name, DEFAULT_LIMIT) for name, found in scores.items()):
            continue
        key = (sum(v < t for f in scores.values() for v in f["unanswerable"]),
               sum(v < t for f in scores.values() for v in f["near_miss"]), -t)
        if best_key is None or key > best_key:
            best, best_key = t, key
    return round(best, 6)


def _share(values: Sequence[float], t: float) -> float | None:
    return round(sum(v < t for v in values) / len(values), 4) if values else None


def calibrate_judge(helper, sets: dict[str, list], limits: dict[str, float], model: ConfidenceModel,
                    collections=None) -> tuple[ConfidenceModel, dict]:
    """`model` with the judge mode's combination, threshold and weak ceiling set from `sets`
    (name -> dev items); returns it and the dev figures per set."""
    signals = {name: collect(helper, items, MODE, collections) for name, items in sets.items()}
    model = copy.deepcopy(model)
    model.judge_weights = fit_combination(model, signals)
    scores = {name: {kind: [model.confidence(s) for s in found[kind]] for kind in found}
              for name, found in signals.items()}
    t = model.thresholds[MODE] = choose_threshold(scores, limits)
    unanswerable = [v for found in scores.values() for v in found["unanswerable"]]
    weak = model.weak_ceilings[MODE] = weak_ceiling(unanswerable, t)
    figures = {name: {"answerable": len(found["answerable"]), "unanswerable": len(found["unanswerable"]),
                      "wrongly_abstained": _share(found["answerable"], t),
                      "unanswerable_abstained": _share(found["unanswerable"], t),
                      "near_misses_abstained": _share(found["near_miss"], t),
                      "unanswerable_abstained_or_weak": _share(found["unanswerable"], weak + 1e-9),
                      "limit": limits.get(name, DEFAULT_LIMIT)}
               for name, found in scores.items()}
    return model, figures


def run_judge_calibration(eval_files: Sequence[Path], limits: dict[str, float], *, index=None, collections=None,
                          target: Path | None = None, judge_folder: Path | None = None,
                          ) -> tuple[ConfidenceModel, dict, Path]:
    """Calibrate the judge mode on the dev splits of `eval_files` (single questions only) and save it."""
    from ..api import Helper

    sets = {}
    for file in eval_files:
        items = [item for item in load_eval_set(file, split="dev") if not item.previous]
        if not items:
            raise ConfigError(f"{file}: no dev items to calibrate on")
        sets[Path(file).stem] = items
    with eval_index(index, collections, None) as where:
        helper = Helper.load(where, user_bank=False, mode=MODE, judge=judge_folder)
        filter_collections = list(collections) if (collections and index is not None) else None
        model, figures = calibrate_judge(helper, sets, limits, model_for(helper.index.embedder_id), filter_collections)
    model.notes.setdefault("dev_figures", {})[MODE] = figures
    model.notes["judge_calibration"] = {
        "sets": [Path(f).name for f in eval_files], "limits": limits,
        "rule": "confidence = sigmoid(w_own logit(own) + w_judge logit(judge) + bias); threshold: most unanswerable "
                "dev items abstained with each set's answerable dev items abstained at most at its limit"}
    return model, figures, save_model(model, target)
