"""How sure rlhelper is that its top entry answers the query: the abstention model.

RRF scores only encode ranks, so they cannot say "nothing in the docs matches".
The confidence is a small logistic model over four signals that mean the same
thing from one query to the next:

    cosine         the embedder's similarity of the query and the top entry
    margin         the embedder's top-1 minus top-2 similarity: one clear
                   winner, or a crowd of look-alikes
    lexical_match  the top entry's BM25 score over the most this query could
                   score (every term matched, saturated)
    coverage       IDF-weighted share of the query's distinct tokens that the
                   top entry contains (a typo read as its correction; a Chinese
                   query against an English entry: its glossary terms)
    length         ln(1 + the count of query words the lexical signals weigh): they
                   shrink as a query grows (a long question or error line has
                   words no entry repeats), and the length lets the model read
                   them at the query's size

It is fitted by `rlhelper eval --split dev --calibrate` (calibration.py) and
stored as plain numbers in a JSON file, per embedder: the shipped one for the
default embedder in `rlhelper/data/calibration.json`, a user's own in
`<data dir>/calibration.json` (setting `calibration_file`), which wins.

One rule is not learned: below the lowest cosine that any answerable dev item
had with its top entry (less 0.02), the answer is "no match" whatever BM25
says, unless the query's words are mostly in the entry's headings. Off-topic
text ("hello", a bread recipe) can share one word with an entry's body and
score a high lexical match, which the dev items, mostly near misses, cannot
teach a linear model; a terse query ("oom") gets a low cosine from an
embedder that needs context, yet names the entry's heading.

Why a model and not a cosine threshold: the embedder alone cannot tell a
paraphrase from a near miss (an answerable question whose answer is not in
the index); how much of the query BM25 finds in the entry helps, and the
query's length lets the model read the lexical signals at the query's size
(a long pasted error has words no entry repeats). A Chinese query is judged
against an English entry on the glossary's English terms and its Latin words,
since its Chinese bigrams can never be in that entry, and Chinese question
words and particles are left out as the English ones are. Even so, with
these two retrievers a question the docs do not answer often looks like one
they do, so answers come in three bands, not two. Below the threshold: "no
matching entry". Above it but no surer than most unanswerable dev questions
(the weak-match ceiling, per mode): the entry is shown, flagged as a weak
match the reader should check. Above that: a plain answer. The dev figures
behind each of these choices, and the commands that measure them, are in
eval/DECISIONS.md.

A reported issue's thread at the top is judged by the same signals and weights, against its own
bands (`kind_bands["issue"]`: threshold and weak-match ceiling per mode), set on the thread set's
dev items by `rlhelper eval --set eval/threads.jsonl --split dev --calibrate`
(calibration.calibrate_kind): a thread shares an error's words with many reports it does not
answer, so where a doc entry at 0.5 is a plain answer, a thread may be a weak one. Refitting
the weights on threads did not separate them better on dev (eval/DECISIONS.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import config

FEATURES = ("cosine", "margin", "lexical_match", "coverage", "length")  # the model's inputs, in order
HEADING_NAMED = 0.5  # heading_coverage from which a query names the entry (lifts the cosine veto)
PACKAGED_FILE = config.PACKAGE_DIR / "data" / "calibration.json"


@dataclass(frozen=True)
class Signals:
    """What the retrievers said about the top entry of one search."""

    cosine: float
    margin: float
    lexical_match: float
    coverage: float
    length: float = 0.0  # ln(1 + number of query words weighed: typos corrected, Chinese particles out)
    heading_coverage: float = 0.0  # the same share within the entry's headings only (not a model input)
    judge: float | None = None  # the judge's probability that the entry answers (judge mode only)

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, name) for name in FEATURES], dtype=np.float64)

    def to_dict(self) -> dict:
        return {name: round(value, 6) for name, value in asdict(self).items() if value is not None}


@dataclass
class ConfidenceModel:
    """confidence = sigmoid(weights . signals + bias); abstain below the mode's threshold."""

    weights: list[float]
    bias: float
    thresholds: dict[str, float]  # per search mode
    embedder: str = ""
    # Below this cosine the embedder vetoes, unless the query names the entry's heading.
    cosine_floor: float = -1.0
    # Per mode: an answer at or below this confidence is flagged as a weak match (calibration.py).
    weak_ceilings: dict[str, float] = field(default_factory=dict)
    # Per feature, the [low, high] it spanned in fitting. Inputs are clipped to it: a linear model
    # must not extrapolate (a 500-token log's length would otherwise make any match look sure).
    feature_ranges: list[list[float]] | None = None
    # Per kind of top entry ("issue": a GitHub thread), its own {"thresholds": {mode: t}, "weak_ceilings":
    # {mode: c}, ...notes}; a kind without bands uses the model's.
    kind_bands: dict[str, dict] = field(default_factory=dict)
    # In judge mode: [w_own, w_judge, bias] of sigmoid(w_own * logit(own) + w_judge * logit(judge) + bias),
    # fitted on dev by `rlhelper judge calibrate` (measure/judge_calibration.py); None: their mean.
    judge_weights: list[float] | None = None
    notes: dict = field(default_factory=dict)  # how and on what it was fitted, its dev figures

    def confidence(self, signals: Signals) -> float:
        """The model's probability; in judge mode, combined with the judge's (eval/DECISIONS.md)."""
        own = self._own_confidence(signals)
        if signals.judge is None:
            return own
        return combine(own, signals.judge, self.judge_weights)

    def _own_confidence(self, signals: Signals) -> float:
        if signals.cosine < self.cosine_floor and signals.heading_coverage < HEADING_NAMED:
            return 0.0
        x = signals.vector()
        if self.feature_ranges:
            low, high = np.array(self.feature_ranges, dtype=np.float64).T
            x = np.clip(x, low, high)
        z = float(np.dot(self.weights, x)) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def threshold(self, mode: str, kind: str = "doc") -> float:
        thresholds = self._bands(kind, "thresholds") or self.thresholds
        return thresholds.get(mode, thresholds.get("hybrid", self.thresholds.get(mode, 0.5)))

    def weak(self, confidence: float, mode: str, kind: str = "doc") -> bool:
        """True when an answer this confident is no surer than most unanswerable dev questions
        (of the top entry's kind, when it has bands of its own)."""
        ceilings = self._bands(kind, "weak_ceilings") or self.weak_ceilings
        ceiling = ceilings.get(mode, ceilings.get("hybrid"))
        return ceiling is not None and confidence <= ceiling

    def _bands(self, kind: str, name: str) -> dict[str, float]:
        bands = self.kind_bands.get(kind) or {}
        return bands.get(name) or {}

    def to_dict(self) -> dict:
        return {"features": list(FEATURES), "weights": [round(w, 6) for w in self.weights],
                "bias": round(self.bias, 6), "thresholds": {m: round(t, 6) for m, t in self.thresholds.items()},
                "cosine_floor": round(self.cosine_floor, 6),
                "weak_ceilings": {m: round(t, 6) for m, t in self.weak_ceilings.items()},
                **({"feature_ranges": [[round(lo, 6), round(hi, 6)] for lo, hi in self.feature_ranges]}
                   if self.feature_ranges else {}),
                **({"kind_bands": self.kind_bands} if self.kind_bands else {}),
                **({"judge_weights": [round(w, 6) for w in self.judge_weights]} if self.judge_weights else {}),
                "embedder": self.embedder, **self.notes}

    @classmethod
    def from_dict(cls, data: dict) -> ConfidenceModel:
        if list(data.get("features", [])) != list(FEATURES):
            raise ValueError(f"features {data.get('features')} are not {list(FEATURES)}")
        known = ("features", "weights", "bias", "thresholds", "embedder", "cosine_floor", "weak_ceilings",
                 "feature_ranges", "kind_bands", "judge_weights")
        notes = {k: v for k, v in data.items() if k not in known}
        if len(data["weights"]) != len(FEATURES):
            raise ValueError(f"{len(data['weights'])} weights for {len(FEATURES)} features")
        return cls(weights=[float(w) for w in data["weights"]], bias=float(data["bias"]),
                   thresholds={m: float(t) for m, t in data["thresholds"].items()},
                   embedder=str(data.get("embedder", "")), cosine_floor=float(data.get("cosine_floor", -1.0)),
                   weak_ceilings={m: float(t) for m, t in data.get("weak_ceilings", {}).items()},
                   feature_ranges=_ranges(data.get("feature_ranges")), kind_bands=_kind_bands(data.get("kind_bands")),
                   notes=notes, judge_weights=_judge_weights(data.get("judge_weights")))


def _kind_bands(data) -> dict[str, dict]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"kind_bands {data!r} is not an object")
    out = {}
    for kind, bands in data.items():
        out[str(kind)] = {**bands, **{name: {m: float(t) for m, t in (bands.get(name) or {}).items()}
                                      for name in ("thresholds", "weak_ceilings")}}
    return out


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def combine(own: float, judge: float, weights: list[float] | None) -> float:
    """The judge mode's confidence from the pipeline's and the judge's probabilities: a logistic
    combination of their logits when fitted, else their mean."""
    if not weights:
        return (own + judge) / 2
    z = weights[0] * logit(own) + weights[1] * logit(judge) + weights[2]
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def _judge_weights(data) -> list[float] | None:
    if data is None:
        return None
    weights = [float(w) for w in data]
    if len(weights) != 3:
        raise ValueError(f"judge_weights {data} are not [w_own, w_judge, bias]")
    return weights


def _ranges(data) -> list[list[float]] | None:
    if data is None:
        return None
    ranges = [[float(low), float(high)] for low, high in data]
    if len(ranges) != len(FEATURES) or any(low > high for low, high in ranges):
        raise ValueError(f"feature_ranges {data} do not fit {list(FEATURES)}")
    return ranges


def user_file() -> Path:
    return Path(config.setting("calibration_file", default=str(config.data_dir() / "calibration.json")))


def models_in(path: Path) -> dict[str, dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    models = data.get("models") if isinstance(data, dict) else None
    return models if isinstance(models, dict) else {}


@lru_cache(maxsize=8)
def _load(embedder_id: str, user_path: str, user_mtime: float) -> ConfidenceModel:
    for path in (Path(user_path), PACKAGED_FILE):
        models = models_in(path)
        if embedder_id in models:
            try:
                return ConfidenceModel.from_dict(models[embedder_id])
            except (KeyError, TypeError, ValueError):
                continue  # a damaged entry: fall through to the next file
    # Not calibrated for this embedder: the default embedder's model, since cosines of
    # sentence embedders live on similar scales. `rlhelper eval --calibrate` fixes it.
    shipped = models_in(PACKAGED_FILE).get(config.DEFAULT_EMBEDDER)
    try:
        return ConfidenceModel.from_dict(shipped) if shipped else FALLBACK
    except (KeyError, TypeError, ValueError):
        return FALLBACK


def model_for(embedder_id: str) -> ConfidenceModel:
    """The calibrated model for an embedder (the user's file first, then the shipped one)."""
    path = user_file()
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = 0.0
    return _load(embedder_id, str(path), mtime)


def save_model(model: ConfidenceModel, path: Path | None = None) -> Path:
    """Add or replace the model of `model.embedder` in a calibration file (atomically)."""
    path = Path(path or user_file())
    models = models_in(path)
    models[model.embedder] = model.to_dict()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"models": models}, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    _load.cache_clear()
    return path


def fit_logistic(positives: np.ndarray, negatives: np.ndarray, l2: float = 1.0,
                 iterations: int = 50) -> tuple[np.ndarray, float]:
    """Class-balanced, L2-regularised logistic regression by Newton's method.

    Minimises l2/2 * |w|^2 + sum_i s_i * logloss_i, with sample weights
    s_i = n / (2 * n_class) so 18 real negatives plus 231 near misses do not
    swamp (or get swamped by) the positives. The bias is not regularised.
    Returns (weights, bias).
    """
    x = np.vstack([positives, negatives]).astype(np.float64)
    y = np.r_[np.ones(len(positives)), np.zeros(len(negatives))]
    if not len(positives) or not len(negatives):
        raise ValueError("need answerable and unanswerable examples to fit")
    s = np.where(y == 1, len(y) / (2 * len(positives)), len(y) / (2 * len(negatives)))
    xb = np.hstack([x, np.ones((len(x), 1))])
    theta = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ theta, -60, 60)))
        gradient = xb.T @ (s * (p - y)) + reg * theta
        hessian = (xb * (s * p * (1 - p))[:, None]).T @ xb + np.diag(reg) + 1e-9 * np.eye(len(theta))
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return theta[:-1], float(theta[-1])


# Used only when no calibration file can be read at all (a broken install): abstain
# below a cosine of about 0.35 with nothing else known, the old rule of thumb.
FALLBACK = ConfidenceModel(weights=[10.0, 0.0, 0.0, 0.0, 0.0], bias=-3.5, thresholds={"hybrid": 0.5},
                           embedder="", notes={"note": "uncalibrated fallback"})
