"""Fit how a reported issue's thread ranks against a doc entry (search/tradeoff.py), on dev items only.

    RLHELPER_RANKING_FILE=src/rlhelper/data/ranking.json \\
        rlhelper eval --set eval/threads.jsonl --split dev --fit-ranking

One index holds the default docs and the thread set's corpus (threadeval.thread_index). Every dev
item of the thread set, and of the docs' own sets (seeds, official, issues), is ranked once with
threads counting as doc entries do (factor 1); each candidate model then re-sorts those rankings
(the factor multiplies a thread's fused score, so a re-sort is exactly what search would return).
The model kept quotes a right entry in the most dev answers, over all sets pooled (the first hit,
and the best of the other kind in the top 3 when it is a plain answer on its own too: retrieve.py
Retriever.companion, answer/extractive.py; its confidence is read with the calibration as it is,
so after `--calibrate` moves a thread's bands, fit again): each
report counts once, whether a doc or a thread answers it, so a thread that pushes a doc question's
answer out costs as much as a doc entry that pushes a thread report's out. The objective is
flat near its best (a handful of hundreds of items), so among the models within 0.5 % of the pooled
items of the best, the one nearest to "count alike" (the smallest weights) is kept: one ranking, unless
the dev items show more than noise against it. Test items are never read.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import config
from ..answer.extractive import cited_positions
from ..errors import ConfigError, RlhelperError
from ..search.query import normalize_query
from ..search.retrieve import BOTH_WITHIN
from ..search.tradeoff import TradeoffModel, save_model
from .sets import EvalItem, entry_locations, load_eval_set, relevance_gains
from .threadeval import corpus_folder, thread_index

DOC_SETS = ("seeds.jsonl", "official.jsonl", "issues.jsonl")  # the docs' own sets, searched beside the threads
BIAS_GRID = sorted({0.0, *(round(math.log(f), 6) for f in np.geomspace(0.5, 3.0, 25))})  # 0: count alike
LOG_GRID = [round(x, 3) for x in np.linspace(-1.0, 1.0, 9)]
DEPTH = 50
MARGIN = 0.005  # share of the pooled items within which the objective counts as flat


@dataclass
class Ranked:
    """One dev item's ranking with threads counting as doc entries do."""

    set_name: str
    fused: list[tuple[int, float]]
    relevant: frozenset[int]
    issues: frozenset[int]
    is_log: bool
    fits: frozenset[int] = frozenset()  # rows that would be a plain answer on their own (Retriever.companion)

    def outcome(self, factor: float) -> tuple[int | None, bool]:
        """Once threads' scores are multiplied by `factor`: the rank of the first relevant row, and
        whether the answer quotes a relevant entry (the first, or its companion of the other kind:
        retrieve.Retriever.companion, answer.extractive.cited_positions)."""
        scored = sorted(((score * (factor if row in self.issues else 1.0), -at, row)
                         for at, (row, score) in enumerate(self.fused)), reverse=True)
        rows = [row for _, _, row in scored]
        first = next((rank for rank, row in enumerate(rows, start=1) if row in self.relevant), None)
        if not rows:
            return first, False
        other = next((i for i in range(1, min(BOTH_WITHIN, len(rows))) if (rows[i] in self.issues) != (rows[0] in self.issues)),
                     None)
        companion = other if other is not None and rows[other] in self.fits else None
        cited = cited_positions([s for s, _, _ in scored[:BOTH_WITHIN]], [r in self.issues for r in rows[:BOTH_WITHIN]],
                                companion)
        return first, any(rows[i] in self.relevant for i in cited)


def rank_items(helper, items: Sequence[EvalItem], set_name: str) -> list[Ranked]:
    retriever = helper.retriever
    allowed = retriever.allowed_mask()
    entries = helper.entries
    out = []
    for item in items:
        if not item.answerable or item.previous:
            continue
        normalized = normalize_query(item.query)
        if not normalized.text.strip():
            continue
        try:
            ranking = retriever.rank(normalized, allowed, depth=DEPTH, issue_factor=1.0)
        except RlhelperError:
            continue
        rows = [row for row, _ in ranking.fused]
        relevant = frozenset(row for row in rows if relevance_gains([entry_locations(entries[row])], item.expected)[0])
        issues = frozenset(row for row in rows if entries[row].kind == "issue")
        out.append(Ranked(set_name, list(ranking.fused), relevant, issues, normalized.is_log,
                          fitting_rows(retriever, normalized.text, ranking, allowed, rows[:FITS_DEPTH])))
    return out


FITS_DEPTH = 10  # rows whose own confidence is read: any of them may reach the top 3 at another factor


def fitting_rows(retriever, text: str, ranking, allowed, rows: list[int]) -> frozenset[int]:
    """The rows that would be a plain answer on their own (what Retriever.companion asks of a companion)."""
    model, entries, out = retriever.confidence_model, retriever.index.entries, set()
    for row in rows:
        signals = retriever.signals(text, ranking, allowed, row=row)
        confidence = model.confidence(signals) if signals is not None else 0.0
        kind = entries[row].kind
        if confidence >= model.threshold("hybrid", kind) and not model.weak(confidence, "hybrid", kind):
            out.add(row)
    return frozenset(out)


def figures_of(ranked: Sequence[Ranked], model: TradeoffModel) -> dict[str, float]:
    outcomes = [r.outcome(model.factor(is_log=r.is_log)) for r in ranked]
    n = max(1, len(ranked))
    return {"n": len(ranked), "quoted": round(sum(shown for _, shown in outcomes) / n, 4),
            "recall@1": round(sum(f == 1 for f, _ in outcomes) / n, 4),
            "recall@3": round(sum(f is not None and f <= 3 for f, _ in outcomes) / n, 4)}


def fit(ranked: Sequence[Ranked]) -> tuple[TradeoffModel, dict]:
    """The grid's model (see the module docstring) and every set's dev figures under it."""
    scored = []
    for bias in BIAS_GRID:
        for log_weight in LOG_GRID:
            model = TradeoffModel({"bias": bias, "is_log": log_weight})
            outcomes = [r.outcome(model.factor(is_log=r.is_log)) for r in ranked]
            scored.append((sum(shown for _, shown in outcomes), abs(bias) + abs(log_weight), model))
    best = max(quoted for quoted, _, _ in scored)
    margin = MARGIN * len(ranked)
    # The objective is flat near its best (a few items of hundreds): within that margin, the model nearest to
    # counting a thread as a doc entry (one ranking) wins, so noise does not move the factor.
    chosen = min((entry for entry in scored if entry[0] >= best - margin), key=lambda entry: entry[1])[2]
    by_set = {}
    for name in sorted({r.set_name for r in ranked}):
        members = [r for r in ranked if r.set_name == name]
        by_set[name] = {"fitted": figures_of(members, chosen), "count_alike": figures_of(members, TradeoffModel()),
                        "previous_x0.9": figures_of(members, TradeoffModel({"bias": math.log(0.9), "is_log": 0.0}))}
    return chosen, by_set


def run_fit(eval_file: Path, *, collections=None, target: Path | None = None,
            notify=lambda message: None) -> tuple[TradeoffModel, Path]:
    from ..api import Helper

    thread_items = load_eval_set(eval_file, split="dev")
    if not thread_items:
        raise ConfigError(f"{eval_file}: no dev items to fit on")
    doc_sets = {name: load_eval_set(config.REPO_ROOT / "eval" / name, split="dev") for name in DOC_SETS
                if (config.REPO_ROOT / "eval" / name).is_file()}
    expected_repos = sorted({w["repo"] for item in load_eval_set(eval_file) for w in item.expected if "repo" in w})
    folder = corpus_folder(eval_file)
    with thread_index(folder, collections, None, notify, expected_repos) as (where, _):
        helper = Helper.load(where, user_bank=False)
        ranked = rank_items(helper, thread_items, Path(eval_file).name)
        for name, items in doc_sets.items():
            ranked += rank_items(helper, items, name)
    model, by_set = fit(ranked)
    model.notes = {
        "command": "RLHELPER_RANKING_FILE=src/rlhelper/data/ranking.json rlhelper eval --set "
                   f"{_relative(eval_file)} --split dev --fit-ranking",
        "factor": {"question": round(model.factor(is_log=False), 4), "pasted log": round(model.factor(is_log=True), 4)},
        "fitted_on": f"{len(ranked)} answerable dev items ranked beside the threads of {_relative(folder)}: "
                     + ", ".join(f"{name} {fig['fitted']['n']}" for name, fig in by_set.items()),
        "data": _fingerprint(eval_file, folder, doc_sets),
        "rule": "most dev answers quoting a right entry, all sets pooled; within 0.5 % of the items of the best, "
                "the smallest weights (nearest to counting a thread as a doc entry)",
        "dev_figures": by_set,
    }
    return model, save_model(model, target)


def _relative(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(config.REPO_ROOT))
    except ValueError:
        return str(path)


def _fingerprint(eval_file: Path, folder: Path, doc_sets: dict) -> str:
    """A hash of what the fit read (the eval files and the corpus's exports): the same data, the same fit."""
    h = hashlib.sha256()
    for path in [Path(eval_file), *sorted(Path(folder).glob("*.json")),
                 *(config.REPO_ROOT / "eval" / name for name in sorted(doc_sets))]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]

