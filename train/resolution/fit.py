"""Fit the resolution model: which comment of a thread carries its fix, learned from labelled threads.

    python train/resolution/fit.py [--corpus eval/threads-real] [--out src/rlhelper/data/resolution.json]

Reads the corpus's DEV threads only (their labels: split "dev"), as `rlhelper ingest --github` reads
them (the export reader, the repository-wide notice pass, the same comment signals:
rlhelper.ingest.github.signals), and fits a logistic regression (scikit-learn, L2) of "this comment
is labelled as carrying the fix". Ingest ships and reads only the weights.

The thread's decision ("has a fix") is: some comment's probability reaches the threshold, or GitHub
records what closed it (a pull request, a commit), or the body holds a workaround. The L2 strength and
the threshold are chosen on out-of-fold probabilities (threads split into folds, so a thread's comments
never help score themselves): the pair that comes nearest to both targets (the most of
min(precision / 0.90, recall / 0.85), per thread). The file records the command, the data's hash,
the choice and the dev figures (out of fold, and of the final fit on all dev threads).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from rlhelper import config
from rlhelper.ingest.github.resolution import NOT_ANSWERS, resolve, thread_features
from rlhelper.ingest.github.resolution_model import FORMAT, ResolutionModel
from rlhelper.ingest.github.signals import FEATURES
from rlhelper.measure.resolutioneval import data_hash, labelled_threads, thread_figures

TARGET_PRECISION, TARGET_RECALL = 0.90, 0.85  # the targets, per thread
STRENGTHS = (0.1, 0.3, 1.0, 3.0, 10.0)  # C of scikit-learn's LogisticRegression
FOLDS = 5
NEVER = ResolutionModel(0.0, tuple(0.0 for _ in FEATURES), 2.0)  # no comment passes: what GitHub records only


def rows_of(threads):
    """Per thread: its comments' feature matrix, their labels, and whether GitHub records a fix."""
    out = []
    for t in threads:
        judged, rows, _ = thread_features(t.thread, t.notices)
        fixes = t.fix_positions
        x = np.array([[row[name] for name in FEATURES] for row in rows], dtype=float).reshape(len(rows), len(FEATURES))
        y = np.array([position in fixes for position, *_ in judged], dtype=int)
        recorded = resolve(t.thread, t.notices, model=NEVER).resolved
        out.append((x, y, recorded))
    return out


def fit(data, strength):
    x = np.vstack([d[0] for d in data if len(d[0])])
    y = np.concatenate([d[1] for d in data if len(d[1])])
    model = LogisticRegression(C=strength, max_iter=2000)
    model.fit(x, y)
    return model


NEVER_FIX = [FEATURES.index(name) for name in NOT_ANSWERS]  # resolve() never takes such a comment for a fix


def thread_scores(model, data):
    """Per thread: the best comment's probability (0 without comments), and whether GitHub records a fix."""
    out = []
    for x, _, recorded in data:
        p = model.predict_proba(x)[:, 1] * (x[:, NEVER_FIX].sum(axis=1) == 0) if len(x) else []
        out.append((float(max(p)) if len(x) else 0.0, recorded))
    return out


def choose_threshold(scores, truth):
    """The threshold nearest to meeting both targets: the most min(precision / TARGET_PRECISION,
    recall / TARGET_RECALL), then the most recall. Returns (threshold, that attainment)."""
    best = None
    for t in sorted({s for s, _ in scores} | {0.5}):
        guess = [s >= t or r for s, r in scores]
        tp = sum(g and h for g, h in zip(guess, truth, strict=True))
        fp = sum(g and not h for g, h in zip(guess, truth, strict=True))
        fn = sum(h and not g for g, h in zip(guess, truth, strict=True))
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        key = (min(precision / TARGET_PRECISION, recall / TARGET_RECALL), recall)
        if best is None or key > best[1]:
            best = (t, key)
    return best[0], best[1][0]


def out_of_fold(data, truth, strength):
    folds = np.arange(len(data)) % FOLDS
    scores = [None] * len(data)
    for k in range(FOLDS):
        train = [d for d, f in zip(data, folds, strict=True) if f != k]
        if not any(d[1].any() for d in train):
            continue
        model = fit(train, strength)
        for i in np.flatnonzero(folds == k):
            scores[i] = thread_scores(model, [data[i]])[0]
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=config.REPO_ROOT / "eval" / "threads-real")
    parser.add_argument("--out", type=Path, default=config.REPO_ROOT / "src" / "rlhelper" / "data" / "resolution.json")
    args = parser.parse_args()
    threads = labelled_threads(args.corpus, split="dev")
    if not threads:
        sys.exit(f"no dev threads under {args.corpus}")
    # A fixed order that does not follow the repositories: folds mix them.
    threads.sort(key=lambda t: hashlib.sha1(f"{t.repo}#{t.number}".encode()).hexdigest())
    data = rows_of(threads)
    truth = [bool(t.label.get("has_resolution")) for t in threads]
    tried = []
    for strength in STRENGTHS:
        scores = out_of_fold(data, truth, strength)
        scores = [s if s is not None else (0.0, r) for s, (_, _, r) in zip(scores, data, strict=True)]
        threshold, attained = choose_threshold(scores, truth)
        tried.append((attained, -abs(np.log10(strength)), strength, threshold, scores))
    _, _, strength, threshold, oof = max(tried, key=lambda t: (t[0], t[1]))
    model = fit(data, strength)
    weights = {name: round(float(w), 4) for name, w in zip(FEATURES, model.coef_[0], strict=True)}
    learned = ResolutionModel(float(model.intercept_[0]), tuple(weights[n] for n in FEATURES), float(threshold))
    oof_predicted = {(t.repo, t.number): s >= threshold or r for t, (s, r) in zip(threads, oof, strict=True)}
    fitted_predicted = {(t.repo, t.number): resolve(t.thread, t.notices, model=learned).resolved for t in threads}
    out = {
        "format": FORMAT,
        "features": list(FEATURES),
        "bias": round(float(model.intercept_[0]), 4),
        "weights": weights,
        "threshold": round(float(threshold), 4),
        "command": "python train/resolution/fit.py --corpus eval/threads-real",
        "data": data_hash(args.corpus, threads),
        "fitted_on": f"{len(threads)} dev threads of {args.corpus.name} "
                     f"({sum(truth)} with a fix; {sum(len(y) for _, y, _ in data)} comments, "
                     f"{sum(int(y.sum()) for _, y, _ in data)} labelled as carrying it)",
        "rule": f"L2 strength C among {list(STRENGTHS)} and the threshold chosen on {FOLDS}-fold out-of-fold "
                f"probabilities (threads split): the most min(precision / {TARGET_PRECISION}, recall / "
                f"{TARGET_RECALL}) per thread, then the most recall",
        "chosen": {"C": strength, "attainment by C": {str(s): round(r, 3) for r, _, s, _, _ in tried}},
        "dev_figures": {"out of fold": thread_figures(threads, oof_predicted),
                        "fitted": thread_figures(threads, fitted_predicted)},
    }
    args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: out[k] for k in ("threshold", "fitted_on", "chosen", "dev_figures")}, indent=2))
    print(f"-> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
