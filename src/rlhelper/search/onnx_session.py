"""An onnxruntime session that starts fast: the model's optimized graph is saved once, then loaded as is.

    session = fast_session(model_path, threads=2)

Most of a session's start is onnxruntime optimizing the graph (fusing the encoder's attention, GELU
and LayerNorm). The optimized graph is written once per model file and onnxruntime version, under
the cache folder (config.cache_dir()), at ORT_ENABLE_EXTENDED (hardware-independent, unlike
ORT_ENABLE_ALL's layout changes), and later sessions load it with the optimizers switched off. The
outputs are bitwise the same as a session that optimizes the original at the default level
(tests/test_fast_start.py; eval/DECISIONS.md, "A fast first answer").

The saved graph is tied to the model file it came from by that file's size, mtime and sha256
(recorded when it is made; a changed file is re-hashed, and a new graph made, on its next load), so
whatever model file is shipped or trained is what runs. Any failure to read or write the cache
falls back to a plain session: slower, never different.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from .. import config

CACHE_FORMAT = 1


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _identity(path: Path) -> dict:
    st = path.stat()
    return {"path": str(path.resolve()), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}


def _options(ort, threads: int, level):
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    options.graph_optimization_level = level
    # Idle intra-op threads sleep instead of spinning: a query encodes once, and spinning workers would
    # bill their waiting as CPU time to a process that is done in a fraction of a second.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def cache_folder(model: Path) -> Path:
    import onnxruntime as ort

    tag = hashlib.sha256(str(Path(model).resolve()).encode()).hexdigest()[:16]
    return config.cache_dir() / f"onnx-{tag}-ort{ort.__version__}-v{CACHE_FORMAT}"


def _cached_model(model: Path, folder: Path) -> Path | None:
    """The saved optimized graph of `model`, when it was made from this very file."""
    try:
        meta = json.loads((folder / "source.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    saved = folder / "model.opt.onnx"
    if not saved.is_file() or not isinstance(meta, dict):
        return None
    now = _identity(model)
    if {k: meta.get(k) for k in now} == now:
        return saved
    # Same path, other size or time: the same bytes (a copy, a touch) keep the graph, other bytes do not.
    return saved if meta.get("bytes") == now["bytes"] and meta.get("sha256") == _sha256(model) else None


def fast_session(model: str | Path, threads: int = 1):
    """An InferenceSession of `model` on the CPU with `threads` intra-op threads."""
    import onnxruntime as ort

    model = Path(model)
    levels = ort.GraphOptimizationLevel
    providers = ["CPUExecutionProvider"]
    try:
        folder = cache_folder(model)
        saved = _cached_model(model, folder)
    except OSError:
        folder = saved = None
    if saved is not None:
        try:
            return ort.InferenceSession(str(saved), _options(ort, threads, levels.ORT_DISABLE_ALL), providers=providers)
        except Exception:  # noqa: BLE001 - a damaged cache: make it again below
            saved = None
    if folder is None:
        return ort.InferenceSession(str(model), _options(ort, threads, levels.ORT_ENABLE_ALL), providers=providers)
    options = _options(ort, threads, levels.ORT_ENABLE_EXTENDED)
    tmp = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        options.optimized_model_filepath = str(tmp / "model.opt.onnx")
    except OSError:
        tmp = None
    session = ort.InferenceSession(str(model), options, providers=providers)
    if tmp is not None:
        _keep(model, tmp, folder)
    return session


def _keep(model: Path, tmp: Path, folder: Path) -> None:
    """Move the graph just written into place with its source's identity (best effort, atomic)."""
    try:
        meta = {**_identity(model), "sha256": _sha256(model)}
        (tmp / "source.json").write_text(json.dumps(meta), encoding="utf-8")
        if folder.exists():
            _remove(folder)
        os.replace(tmp, folder)
    except OSError:
        _remove(tmp)


def _remove(folder: Path) -> None:
    for f in folder.glob("*"):
        with contextlib.suppress(OSError):
            f.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()
