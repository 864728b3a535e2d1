"""Fit the abstention model on the eval's dev split: `rlhelper eval --split dev --calibrate`.

Positives are the answerable dev items, searched as a user would search them.
Negatives are the unanswerable dev items, plus every answerable dev item
searched again with the entries that answer it hidden: a near miss, a question
in scope whose answer is not in the index, which is what most unanswerable
questions look like. The unanswerable dev items alone are too few to fit the
model's weights; the near misses add one per answerable item.

The model (confidence.py) is fitted on hybrid searches, and its cosine floor
set just below the least similar answerable dev item. Each mode (the judge's apart:
judge_calibration.py, run after this, as it rests on these weights) then gets
the threshold that abstains on the most negatives while abstaining on at most
5 % of the answerable dev items, and a weak-match ceiling: the confidence
that 80 % of the unanswerable dev items do not exceed. Test items are never used.

A thread set (eval/threads.jsonl) calibrates the bands of a thread at the top instead
(`calibrate_kind`): its dev items are searched beside the docs with the model as it is, and
the searches whose top entry is a thread set the "issue" bands by the same two rules.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ConfigError, RlhelperError
from ..search.confidence import ConfidenceModel, Signals, fit_logistic, save_model
from ..search.query import normalize_query
from .harness import MODES, eval_index
from .metrics import MAX_WRONGLY_ABSTAINED, TARGET_ABSTENTION_RECALL, choose_threshold, share_ceiling
from .sets import EvalItem, entry_locations, load_eval_set, relevance_gains

COSINE_FLOOR_MARGIN = 0.02  # the veto sits this far below the least similar answerable dev item


def answering_rows(entries, expected: Sequence[dict]) -> np.ndarray:
    """Bool mask of the entries that answer an item (any expected location)."""
    return np.array([bool(relevance_gains([entry_locations(e)], expected)[0]) for e in entries], dtype=bool)


def search_signals(retriever, item: EvalItem, allowed: np.ndarray, mode: str, kind: str | None = None
                   ) -> Signals | None:
    """The top entry's signals; with `kind`, None unless the top entry is of that kind."""
    normalized = normalize_query(item.query)
    if not normalized.text.strip():
        return None
    ranking, signals = retriever.assess(normalized, allowed, mode=mode)
    if kind is not None and (not ranking.fused or retriever.index.entries[ranking.fused[0][0]].kind != kind):
        return None
    return signals


def collect(helper, items: Sequence[EvalItem], mode: str, collections=None, kind: str | None = None
            ) -> dict[str, list[Signals]]:
    """Signals of the top entry for positives, unanswerable items and near misses (with `kind`:
    only the searches whose top entry is of that kind)."""
    retriever = helper.retriever
    allowed = retriever.allowed_mask(collection=list(collections) if collections else None)
    out: dict[str, list[Signals]] = {"answerable": [], "unanswerable": [], "near_miss": []}
    for item in items:
        try:
            if not item.answerable:
                found = search_signals(retriever, item, allowed, mode, kind)
                if found is not None:
                    out["unanswerable"].append(found)
                continue
            found = search_signals(retriever, item, allowed, mode, kind)
            if found is not None:
                out["answerable"].append(found)
            hidden = allowed & ~answering_rows(helper.entries, item.expected)
            near = search_signals(retriever, item, hidden, mode, kind)
            if near is not None:
                out["near_miss"].append(near)
        except RlhelperError:
            continue  # an unsearchable query has no signals to learn from
    return out


def weak_ceiling(unanswerable: Sequence[float], threshold: float,
                 share: float = TARGET_ABSTENTION_RECALL) -> float:
    """The confidence at or below which `share` of the unanswerable items fall (never below
    the abstention threshold): answers up to it are no surer than most unanswerable questions."""
    if not unanswerable:
        return threshold
    ceiling = max(threshold, share_ceiling(unanswerable, share))
    return math.ceil(ceiling * 1e6) / 1e6  # rounded up: the file keeps 6 decimals, and the item at it counts


def _share_below(values: Sequence[float], threshold: float) -> float | None:
    return round(sum(v < threshold for v in values) / len(values), 4) if values else None


def calibrate(helper, items: Sequence[EvalItem], *, collections=None, modes: Sequence[str] = MODES,
              max_wrongly_abstained: float = MAX_WRONGLY_ABSTAINED) -> ConfidenceModel:
    """Fit the model on hybrid searches of dev `items`, then a threshold per mode."""
    dev = [item for item in items if item.split in ("dev", None)]
    if len(dev) != len(items) or not dev:
        raise ConfigError("Calibration uses dev items only: run it with --split dev.")
    if any(item.previous for item in dev):  # its signals are of one search; a follow-up's answer is two
        raise ConfigError("Calibration fits single questions, and this set holds follow-ups (items with "
                          '"previous"): calibrate on a set without them, such as eval/seeds.jsonl.')
    by_mode = {mode: collect(helper, dev, mode, collections) for mode in modes}
    hybrid = by_mode.get("hybrid") or next(iter(by_mode.values()))
    positives = np.array([s.vector() for s in hybrid["answerable"]])
    negatives = np.array([s.vector() for s in hybrid["unanswerable"] + hybrid["near_miss"]])
    if not len(positives) or not len(negatives):
        raise ConfigError("Calibration needs answerable and unanswerable dev items.")
    weights, bias = fit_logistic(positives, negatives)
    floor = min(s.cosine for s in hybrid["answerable"]) - COSINE_FLOOR_MARGIN
    seen = np.vstack([positives, negatives])
    model = ConfidenceModel(weights=list(map(float, weights)), bias=bias, thresholds={},
                            embedder=str(helper.index.embedder_id), cosine_floor=round(floor, 4),
                            feature_ranges=[[float(lo), float(hi)] for lo, hi in zip(seen.min(0), seen.max(0), strict=True)])
    figures = {mode: set_threshold(model, mode, signals, max_wrongly_abstained) for mode, signals in by_mode.items()}
    model.notes = {
        "fitted_on": f"{len(dev)} dev items: {len(hybrid['answerable'])} answerable, "
                     f"{len(hybrid['unanswerable'])} unanswerable, {len(hybrid['near_miss'])} near misses",
        "rule": f"abstain when confidence < threshold; threshold abstains on the most negatives with at most "
                f"{max_wrongly_abstained:.0%} of answerable dev items abstained",
        "dev_figures": figures,
    }
    return model


def set_threshold(model: ConfidenceModel, mode: str, signals: dict[str, list[Signals]],
                  max_wrongly_abstained: float = MAX_WRONGLY_ABSTAINED) -> dict:
    """Set `mode`'s threshold and weak-match ceiling on `model` from its dev signals; returns its dev figures."""
    scores = {name: [model.confidence(s) for s in found] for name, found in signals.items()}
    t = choose_threshold(scores["answerable"], scores["unanswerable"] + scores["near_miss"], max_wrongly_abstained)
    model.thresholds[mode] = t
    weak = model.weak_ceilings[mode] = weak_ceiling(scores["unanswerable"], t)
    return {
        "wrongly_abstained": _share_below(scores["answerable"], t),
        "unanswerable_abstained": _share_below(scores["unanswerable"], t),
        "near_misses_abstained": _share_below(scores["near_miss"], t),
        "answerable_flagged_weak": round(sum(t <= v <= weak for v in scores["answerable"])
                                         / len(scores["answerable"]), 4) if scores["answerable"] else None,
    }


def run_calibration(eval_file: Path, *, collections=None, embedder=None, index=None,
                    target: Path | None = None) -> tuple[ConfidenceModel, Path]:
    """Calibrate on the dev split of `eval_file` and save the model; returns it and where it went."""
    from ..api import Helper

    items = load_eval_set(eval_file, split="dev")
    if not items:
        raise ConfigError(f"{eval_file}: no dev items to calibrate on")
    with eval_index(index, collections, embedder) as where:
        helper = Helper.load(where, embedder=embedder, user_bank=False)
        filter_collections = list(collections) if (collections and index is not None) else None
        model = calibrate(helper, items, collections=filter_collections)
    return model, save_model(model, target)


def calibrated_modes() -> tuple[str, ...]:
    """Every eval mode, and the judge's when it can run: a thread's bands are set for every mode
    a search may run in (the judge's after `rlhelper judge calibrate`, whose weights they rest on)."""
    from ..search.judge import judge_available

    return (*MODES, "judge") if judge_available() else MODES


def calibrate_kind(helper, items: Sequence[EvalItem], kind: str, *, modes: Sequence[str] = MODES,
                   max_wrongly_abstained: float = MAX_WRONGLY_ABSTAINED) -> ConfidenceModel:
    """The model as it is, with bands of its own for a top entry of `kind`, set on dev `items`."""
    dev = [item for item in items if item.split in ("dev", None) and not item.previous]
    if len(dev) != len(items) or not dev:
        raise ConfigError("Calibration uses dev items only: run it with --split dev.")
    model = copy.deepcopy(helper.retriever.confidence_model)  # the cached one stays as read
    scratch = copy.deepcopy(model)
    bands = {"thresholds": {}, "weak_ceilings": {}, "dev_figures": {}}
    for mode in modes:
        signals = collect(helper, dev, mode, kind=kind)
        if not signals["answerable"] or not (signals["unanswerable"] or signals["near_miss"]):
            raise ConfigError(f"Calibrating the {kind} bands needs dev searches with a {kind} at the top, answerable "
                              "and not.")
        bands["dev_figures"][mode] = {**set_threshold(scratch, mode, signals, max_wrongly_abstained),
                                      "searches": {name: len(found) for name, found in signals.items()}}
        bands["thresholds"][mode] = scratch.thresholds[mode]
        bands["weak_ceilings"][mode] = scratch.weak_ceilings[mode]
    bands["fitted_on"] = f"{len(dev)} dev items searched beside the docs; the searches with a {kind} at the top"
    model.kind_bands[kind] = bands
    return model


def run_thread_calibration(eval_file: Path, *, collections=None, target: Path | None = None,
                           notify=lambda message: None) -> tuple[ConfidenceModel, Path]:
    """Calibrate a thread's bands on the dev split of a thread set, beside the docs, and save them."""
    from ..api import Helper
    from .threadeval import corpus_folder, thread_index

    items = [item for item in load_eval_set(eval_file, split="dev") if not item.previous]
    if not items:
        raise ConfigError(f"{eval_file}: no dev items to calibrate on")
    repos = sorted({w["repo"] for item in load_eval_set(eval_file) for w in item.expected if "repo" in w})
    with thread_index(corpus_folder(eval_file), collections, None, notify, repos) as (where, _):
        helper = Helper.load(where, user_bank=False)
        model = calibrate_kind(helper, items, "issue", modes=calibrated_modes())
    return model, save_model(model, target)
