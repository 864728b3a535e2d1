"""How much each signal of a comment counts toward "this comment carries the thread's fix": a logistic
regression learned from labelled threads, shipped as its weights only.

    model = resolution_model()                 # src/rlhelper/data/resolution.json, read once
    p = model.probability(features)            # features: signals.comment_features' dict
    p >= model.threshold                       # the comment carries a fix

The weights are fitted offline (`train/resolution/fit.py`, with scikit-learn) on the dev split of
the threads re-told from real trackers (eval/threads-real/, eval/THREADS.md); the file records the
command that reproduces them, the hash of the data they were fitted on and the dev figures. Ingest
needs only this module (a dot product per comment): no scikit-learn at run time.

A user may fit their own on their own labelled threads and point `resolution_file` (or
RLHELPER_RESOLUTION_FILE) at it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ... import config
from ...errors import ConfigError
from .signals import FEATURES

FORMAT = 1
SHIPPED = Path(__file__).resolve().parents[2] / "data" / "resolution.json"


@dataclass(frozen=True)
class ResolutionModel:
    bias: float
    weights: tuple[float, ...]  # in FEATURES order
    threshold: float

    def logit(self, features: dict) -> float:
        return self.bias + sum(w * features[name] for w, name in zip(self.weights, FEATURES, strict=True) if w)

    def probability(self, features: dict) -> float:
        z = self.logit(features)
        return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0

    @classmethod
    def from_dict(cls, data: dict) -> ResolutionModel:
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
        weights = data["weights"]
        missing = [name for name in FEATURES if name not in weights]
        if missing:
            raise ValueError(f"no weight for {', '.join(missing)}")
        return cls(float(data["bias"]), tuple(float(weights[name]) for name in FEATURES), float(data["threshold"]))


def model_file() -> Path:
    return _model_file(os.environ.get("RLHELPER_RESOLUTION_FILE"), os.environ.get("RLHELPER_CONFIG"),
                       os.environ.get("XDG_CONFIG_HOME"), os.environ.get("HOME"))


@lru_cache(maxsize=8)
def _model_file(*where) -> Path:
    """The setting's file for these variables (resolve() asks per thread: the config file is read once)."""
    setting = config.setting("resolution_file", default=None)
    return Path(setting).expanduser() if setting else SHIPPED


@lru_cache(maxsize=4)
def _load(path: str, stamp: float) -> ResolutionModel:
    try:
        return ResolutionModel.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not a resolution model ({exc}): fit one with `python train/resolution/fit.py`, "
                          "or unset resolution_file to use the shipped one") from None


def resolution_model() -> ResolutionModel:
    path = model_file()
    try:
        stamp = path.stat().st_mtime
    except OSError:
        raise ConfigError(f"no resolution model at {path}: unset resolution_file to use the shipped one") from None
    return _load(str(path), stamp)


def fingerprint() -> str:
    """What ingest's analysis cache keys on: the model file's bytes."""
    try:
        return hashlib.sha256(model_file().read_bytes()).hexdigest()[:16]
    except OSError:
        return ""
