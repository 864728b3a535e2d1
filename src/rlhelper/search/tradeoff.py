"""How a reported issue's thread ranks against a doc entry: one ranking for both, its trade-off learned.

    model = tradeoff_model()            # the user's file, else the shipped rlhelper/data/ranking.json
    model.issue_factor(normalized)      # the factor a thread's fused score is multiplied by

A thread and a doc entry are ranked by the same fusion (retrieve.py); what is learned is how
much a thread's fused score counts, as a small log-linear model of what the query is:

    factor = exp(bias + log_weight * is_log)

`is_log`: the query is a pasted log or traceback (query.normalize_query), the shape in which
reports meet the threads that solved the same error, where a question asked in words more often
meets the docs. The two numbers are fitted on dev items by `rlhelper eval --set
eval/threads.jsonl --split dev --fit-ranking` (measure/tradeoff.py): thread items searched beside
the docs, and the docs' own dev items searched beside the threads, so a thread that wins a doc
question costs what a doc entry that wins a thread report costs. The file records the command,
the data it was fitted on and the dev figures.

Without a file (a broken install) the factor is 1: both count alike.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .. import config
from .query import NormalizedQuery

PACKAGED_FILE = config.PACKAGE_DIR / "data" / "ranking.json"
FEATURES = ("bias", "is_log")
MIN_FACTOR, MAX_FACTOR = 0.25, 4.0  # a file cannot make threads vanish or swamp everything


@dataclass
class TradeoffModel:
    weights: dict[str, float] = field(default_factory=lambda: {name: 0.0 for name in FEATURES})
    notes: dict = field(default_factory=dict)  # how and on what it was fitted, its dev figures

    def issue_factor(self, normalized: NormalizedQuery | None = None) -> float:
        return self.factor(is_log=normalized is not None and normalized.is_log)

    def factor(self, *, is_log: bool) -> float:
        z = self.weights.get("bias", 0.0) + (self.weights.get("is_log", 0.0) if is_log else 0.0)
        return min(MAX_FACTOR, max(MIN_FACTOR, math.exp(z)))

    def to_dict(self) -> dict:
        return {"features": list(FEATURES), "weights": {k: round(v, 6) for k, v in self.weights.items()},
                **self.notes}

    @classmethod
    def from_dict(cls, data: dict) -> TradeoffModel:
        weights = data.get("weights") if isinstance(data, dict) else None
        if not isinstance(weights, dict) or set(weights) - set(FEATURES):
            raise ValueError(f"weights {weights!r} are not of {list(FEATURES)}")
        return cls({name: float(weights.get(name, 0.0)) for name in FEATURES},
                   {k: v for k, v in data.items() if k not in ("features", "weights")})


def user_file() -> Path:
    return Path(config.setting("ranking_file", default=str(config.data_dir() / "ranking.json")))


@lru_cache(maxsize=4)
def _load(user_path: str, user_mtime: float) -> TradeoffModel:
    for path in (Path(user_path), PACKAGED_FILE):
        try:
            return TradeoffModel.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            continue
    return TradeoffModel()


def tradeoff_model() -> TradeoffModel:
    """The fitted trade-off (the user's file first, then the shipped one)."""
    path = user_file()
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = 0.0
    return _load(str(path), mtime)


def save_model(model: TradeoffModel, path: Path | None = None) -> Path:
    path = Path(path or user_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(model.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    _load.cache_clear()
    return path
