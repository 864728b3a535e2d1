"""The judge's entry vectors as an index stores them (judge_vectors.npz; search/judge.py makes them).

One vector per distinct passage the judge reads of the index's entries, keyed by the passage's hash,
float16 (a cosine moves by about 1e-3, far below the gaps the judge's decisions rest on), with the
fingerprint of the judge that made them: vectors of another judge are never used. numpy only, so
reading them costs no FAISS import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .folders import JUDGE_VECTORS


@dataclass
class JudgeVectors:
    """The judge's vector of each distinct passage of the index, by the passage's hash, and the
    fingerprint of the judge that made them (a changed judge encodes again)."""

    fingerprint: str
    keys: list[str]
    vectors: np.ndarray

    def save(self, folder: Path, name: str = JUDGE_VECTORS) -> Path:
        path = Path(folder) / name
        with open(path, "wb") as out:
            np.savez(out, fingerprint=np.array(self.fingerprint), keys=np.array(self.keys, dtype=str),
                     vectors=np.asarray(self.vectors, dtype=np.float16))
        return path


def read_judge_vectors(path: Path, fingerprint: str) -> dict[str, np.ndarray]:
    """The judge vectors a file holds (an index's, or those shipped with the judge), by passage hash;
    empty when there is none, or another judge's, or a damaged file (ingest encodes them again; a
    search, as it needs them)."""
    try:
        with np.load(Path(path), allow_pickle=False) as data:
            if str(data["fingerprint"]) != fingerprint:
                return {}
            keys, vectors = data["keys"], data["vectors"]
            if vectors.ndim != 2 or len(keys) != len(vectors):
                return {}
            return dict(zip((str(k) for k in keys), vectors, strict=True))
    except (OSError, ValueError, KeyError):
        return {}
