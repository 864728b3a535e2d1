"""The judge on the query path: is this entry an answer to this question? (issues 21, 27)

    judge = Judge.load(folder)          # model.int8.onnx (or model.onnx) + tokenizer.json + manifest
    judge.probabilities(query, [passage(e) for e in entries]) -> [0.93, 0.08, ...]

The model is trained by `rlhelper judge train` (rlhelper.judge, torch) and read here with
onnxruntime and tokenizers, no torch. The probability is sigmoid(scale * cos(question, passage) +
bias), with the scale and bias learned in training (manifest.json). Question and passage are encoded
apart, each with the prefix the model was trained with ("query: ", "passage: ": e5's). A passage's
vector is computed once: ingest stores every entry's in the index (`passage_vectors`, versioned by
the judge's `fingerprint`), and a process keeps any it had to compute, so a query costs one encoder
pass. Both imports are made on load, not on import.

What the judge reads of an entry, `passage(entry)`, is its heading trail and its first lines, not
the whole text: the cost grows with the tokens read, so an entry is cut to about 128 tokens (the
document title and headings, which name the problem, then the entry's own lines in order, code
fences and blank lines skipped). Training and serving share it, so the model is scored on the text
it was trained on.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..config import PACKAGE_DIR
from ..errors import ConfigError
from ..index.judge_vectors import JudgeVectors, read_judge_vectors
from ..index.lexical import has_han
from ..schema import Entry, title_trail
from .onnx_session import fast_session
from .query import NormalizedQuery, looks_like_error
from .ranking import Ranking, split_sections, whole_section

MAX_PASSAGE_CHARS = 600  # ~128 wordpiece tokens of English; the tokenizer truncates the rest

_FENCE = re.compile(r"^\s*(```|~~~|\.\. code-block::|::\s*$)")
_MARKUP = re.compile(r"[*`#>|]+")


def passage(entry: Entry, max_chars: int = MAX_PASSAGE_CHARS) -> str:
    """`Title › Heading: first lines…`, at most `max_chars` characters."""
    head = " › ".join(title_trail(entry.doc_title, entry.breadcrumb) or [entry.heading])
    lines = []
    for line in entry.text.splitlines():
        if _FENCE.match(line):
            continue
        words = " ".join(_MARKUP.sub(" ", line).split())
        if words and words.strip("-=~^") and words not in head:
            lines.append(words)
    text = f"{head}: {' '.join(lines)}" if lines else head
    return text[:max_chars].rstrip()


PACKAGED = PACKAGE_DIR / "data" / "judge"  # the judge shipped with rlhelper (train/judge/README.md)
SHIPPED_VECTORS = "passages.npz"  # the shipped judge's vectors of the shipped corpus's passages
HEAD = "head.npz"  # the trained linear map of each side (judge/head.py); absent: the encoder's own vectors
MODEL_INT8 = "model.int8.onnx"
MODEL_FP32 = "model.onnx"
TOKENIZER = "tokenizer.json"
MANIFEST = "manifest.json"
DEFAULT_MAX_LENGTH = 128
MAX_PASSAGES = 64  # one call scores a shortlist, never a whole index
MAX_CACHED = 20_000  # passage vectors kept (1.5 kB each): every entry of a large index
JUDGED = 5  # the pipeline's first hits the judge reads
# Where the judge's order is taken over the pipeline's (issue 35, chosen by cross-validation, eval/DECISIONS.md):
# when its best hit beats the pipeline's first by a margin; a near tie keeps the pipeline's order, and the
# judge has its say in "no match" only. A pasted log keeps the pipeline's order whatever the judge says.
REORDER_KINDS = frozenset({"question", "error", "zh"})
REORDER_MARGIN = 0.1
REORDER_FLOOR = 0.0
QUERY_PREFIX = "query: "  # e5 was trained to read a question as a "query", a text that answers as a "passage"
PASSAGE_PREFIX = "passage: "
ENCODE_BATCH = 16  # passages per encoder call at ingest (padding grows with the batch's longest)


def input_kind(normalized: NormalizedQuery) -> str:
    """What was asked, as the judge's gate reads it: "zh" (Chinese, whatever its shape), "log" (a pasted
    log or traceback), "error" (an error line or message, no question mark) or "question"."""
    text = normalized.text
    if has_han(text):
        return "zh"
    if normalized.is_log:
        return "log"
    return "error" if looks_like_error(text) and "?" not in text else "question"


def order_helps(probabilities: list[float], kind: str, *, kinds: frozenset[str] = REORDER_KINDS,
                margin: float = REORDER_MARGIN, floor: float = REORDER_FLOOR) -> bool:
    """Whether the judge's order replaces the pipeline's for an input of `kind` (input_kind) whose first
    hits the judge gave `probabilities`, in the pipeline's order."""
    if not probabilities or kind not in kinds:
        return False
    best = max(probabilities)
    return best >= floor and best - probabilities[0] >= margin


def passage_key(text: str) -> str:
    """What a passage's vector is stored under (in the index and in a process's cache)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def judge_available(folder: Path = PACKAGED) -> bool:
    """Whether the judge can run here: its libraries are installed and its model is in `folder`."""
    import importlib.util

    return (all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "tokenizers"))
            and (folder / MODEL_INT8).is_file() and (folder / TOKENIZER).is_file())


def default_mode(folder: Path | None = None) -> str:
    """The search mode of a search that names none: the judge's, wherever it can run (issue 27), else
    hybrid (an install without onnxruntime, or without the model)."""
    return "judge" if judge_available(Path(folder) if folder else PACKAGED) else "hybrid"


class Judge:
    """An exported judge: its ONNX session, the tokenizer it was trained with, scale and bias."""

    def __init__(self, session, tokenizer, manifest: dict, fingerprint: str = "",
                 head: dict[str, np.ndarray] | None = None):
        self.session = session
        self.tokenizer = tokenizer
        self.manifest = manifest
        self.scale = float(manifest.get("scale", 1.0))
        self.bias = float(manifest.get("bias", 0.0))
        self.query_prefix, self.passage_prefix = (manifest.get("prefixes") or ["", ""])[:2]
        self.fingerprint = fingerprint  # what stored passage vectors must have been made by
        self.head = head or {}  # side ("query", "passage") -> the (d, d) map applied to the encoder's vectors
        self._inputs = {i.name for i in session.get_inputs()}
        self._passages: dict[str, np.ndarray] = {}  # passage_key -> unit vector

    @classmethod
    def load(cls, folder: str | Path, *, int8: bool = True, threads: int = 1) -> Judge:
        """`int8`: the quantized model (the fp32 one otherwise). One thread: a query process
        shares the machine with the web server's other requests."""
        try:
            import onnxruntime  # noqa: F401 - checked here, used by fast_session
            from tokenizers import Tokenizer
        except ImportError as err:
            raise ConfigError(f"The judge needs onnxruntime and tokenizers: pip install 'rlhelper[judge]' ({err}).") from err
        folder = Path(folder)
        if not (folder / (MODEL_INT8 if int8 else MODEL_FP32)).is_file() or not (folder / TOKENIZER).is_file():
            raise ConfigError(f"No judge model in {folder}: train one with `rlhelper judge train`.")
        manifest_file = folder / MANIFEST
        manifest = json.loads(manifest_file.read_text(encoding="utf-8")) if manifest_file.is_file() else {}
        session = fast_session(folder / (MODEL_INT8 if int8 else MODEL_FP32), threads)
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        tokenizer.enable_truncation(max_length=int(manifest.get("max_length", DEFAULT_MAX_LENGTH)))
        tokenizer.no_padding()
        head = None
        if (folder / HEAD).is_file():
            with np.load(folder / HEAD, allow_pickle=False) as data:
                head = {side: np.asarray(data[side], dtype=np.float32) for side in ("query", "passage")}
        return cls(session, tokenizer, manifest, fingerprint(folder, int8), head)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors, one row per text."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], types[row, :n], mask[row, :n] = e.ids, e.type_ids, 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        (out,) = self.session.run(["embedding"], {k: v for k, v in feeds.items() if k in self._inputs})
        return out

    def encode(self, texts: list[str], prefix: str = "", progress: Callable[[int], None] | None = None) -> np.ndarray:
        """The encoder's unit vectors of `prefix` + each text, in batches of similar length."""
        out = np.zeros((len(texts), 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), ENCODE_BATCH):
            rows = order[start:start + ENCODE_BATCH]
            vectors = self.embed([prefix + texts[i] for i in rows])
            if not out.shape[1]:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
            if progress:
                progress(min(start + ENCODE_BATCH, len(order)))
        return out

    def mapped(self, vectors: np.ndarray, side: str) -> np.ndarray:
        """The head's map of one side applied, back to unit length (the encoder's vectors without a head)."""
        if side not in self.head or not len(vectors):
            return vectors
        out = vectors @ self.head[side]
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def encode_passages(self, passages: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        """The judge's vectors of passages (what ingest stores)."""
        return self.mapped(self.encode(passages, self.passage_prefix, progress), "passage")

    def encode_query(self, query: str) -> np.ndarray:
        return self.mapped(self.embed([self.query_prefix + query]), "query")[0]

    def remember(self, vectors: dict[str, np.ndarray]) -> None:
        """Passage vectors computed elsewhere (the index's), by passage_key."""
        self._passages.update(vectors)

    def _passage_vectors(self, passages: list[str]) -> np.ndarray:
        keys = [passage_key(p) for p in passages]
        missing = list(dict.fromkeys(p for p, k in zip(passages, keys, strict=True) if k not in self._passages))
        if missing:
            if len(self._passages) + len(missing) > MAX_CACHED:
                self._passages.clear()
            self._passages.update(zip(map(passage_key, missing), self.encode_passages(missing), strict=True))
        return np.stack([self._passages[k] for k in keys]).astype(np.float32)

    def logits(self, query: str, passages: list[str], query_vector: np.ndarray | None = None) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        if len(passages) > MAX_PASSAGES:
            raise ValueError(f"at most {MAX_PASSAGES} passages per call, got {len(passages)}")
        vector = self.encode_query(query) if query_vector is None else query_vector
        return self.scale * (self._passage_vectors(passages) @ vector) + self.bias

    def probabilities(self, query: str, passages: list[str], query_vector: np.ndarray | None = None) -> list[float]:
        """P(the passage answers the query), one per passage, in order (`query_vector`: the query's,
        from `query_soon`, when it was computed already)."""
        return [float(p) for p in 1.0 / (1.0 + np.exp(-self.logits(query, passages, query_vector)))]


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def in_background(work: Callable, *args) -> Future:
    """`work(*args)` on the judge's own thread, while the caller goes on: the retrievers rank while the
    judge loads and encodes the query (onnxruntime lets go of the GIL, so the two share the cores)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlhelper-judge")
    return _pool.submit(work, *args)


def fingerprint(folder: Path = PACKAGED, int8: bool = True) -> str:
    """The judge's identity for stored vectors: its model file's and tokenizer's hashes as the
    manifest records them (hashed here when it does not), its prefixes and length."""
    folder = Path(folder)
    manifest_file = folder / MANIFEST
    manifest = json.loads(manifest_file.read_text(encoding="utf-8")) if manifest_file.is_file() else {}
    files = manifest.get("files", {})
    parts = []
    for name in (MODEL_INT8 if int8 else MODEL_FP32, TOKENIZER, HEAD):
        present = (folder / name).is_file()
        recorded = files.get(name, {}).get("sha256") if present else None
        if present and not recorded:
            recorded = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        parts.append(f"{name}:{recorded}")
    parts += [f"prefixes:{manifest.get('prefixes')}", f"max_length:{manifest.get('max_length', DEFAULT_MAX_LENGTH)}"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def entry_passages(entries: list[Entry]) -> list[str]:
    """What the judge reads of each row: the passage of its whole section, as a hit shows it."""
    sections = split_sections(entries)
    return [passage(whole_section(entries, sections, row)) for row in range(len(entries))]


def shipped_vectors(fingerprint_: str, folder: Path = PACKAGED) -> dict[str, np.ndarray]:
    """The vectors shipped beside the judge for the shipped corpus (`make judge-vectors`), if made by it."""
    return read_judge_vectors(Path(folder) / SHIPPED_VECTORS, fingerprint_)


def passage_vectors(entries: list[Entry], known: dict[str, np.ndarray], *, folder: Path = PACKAGED,
                    threads: int = 1, progress: Callable[[int, int], None] | None = None,
                    ) -> tuple[str, list[str], np.ndarray, int]:
    """(the judge's fingerprint, distinct passage keys, their vectors, how many were encoded now):
    the vectors of every entry's passage, from `known` (an earlier index's), the shipped ones, or
    encoded with the judge in `folder`."""
    print_ = fingerprint(folder)
    known = {**shipped_vectors(print_, folder), **known}
    passages = {passage_key(p): p for p in entry_passages(entries)}
    missing = [key for key in passages if key not in known]
    if missing:
        judge = Judge.load(folder, threads=threads)
        fresh = judge.encode_passages([passages[k] for k in missing],
                                      progress=(lambda n: progress(n, len(missing))) if progress else None)
        known = {**known, **dict(zip(missing, fresh, strict=True))}
    keys = list(passages)
    vectors = np.stack([known[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)
    return print_, keys, vectors.astype(np.float16), len(missing)


def write_shipped_vectors(entries: list[Entry], folder: Path = PACKAGED) -> tuple[Path, int]:
    """Encode every passage of `entries` with the judge in `folder` and write its shipped vector file."""
    (Path(folder) / SHIPPED_VECTORS).unlink(missing_ok=True)
    print_, keys, vectors, _ = passage_vectors(entries, {}, folder=folder, threads=2)
    return JudgeVectors(print_, keys, vectors).save(folder, SHIPPED_VECTORS), len(keys)


def rerank(judge: Judge, text: str, ranking: Ranking, entry_of: Callable[[int], Entry],
           query_vector: np.ndarray | None = None, reorder: bool = True, kind: str | None = None,
           ) -> tuple[Ranking, float]:
    """Where `order_helps` says so for an input of `kind` (None: everywhere), the judge orders the first
    JUDGED hits by its probability (ties keep the pipeline's order); a
    hit the user pinned by a vote keeps the ranking as it is, and one a vote demoted keeps its place
    (below the hit after it, never first) while the others are ordered around it. The scores of
    those places stay where they were, best first, so what reads them (a runner-up cited beside a
    near-tie) sees a ranking. Returns the ranking and the judge's probability for the hit now first.
    `reorder=False`: the judge has its say in the confidence only (a pasted log, below)."""
    head = ranking.fused[:JUDGED]
    probabilities = judge.probabilities(text, [passage(entry_of(row)) for row, _ in head], query_vector)
    if ranking.pinned_lead or not reorder or (kind is not None and not order_helps(probabilities, kind)):
        return ranking, probabilities[0]
    fixed = {place for place, (row, _) in enumerate(head) if row in ranking.demoted}
    judged = iter(sorted((i for i in range(len(head)) if i not in fixed), key=lambda i: -probabilities[i]))
    order = [place if place in fixed else next(judged) for place in range(len(head))]
    if order == list(range(len(head))):
        return ranking, probabilities[0]
    scores = [score for _, score in head]
    fused = [(head[i][0], scores[place]) for place, i in enumerate(order)] + ranking.fused[JUDGED:]
    return replace(ranking, fused=fused), probabilities[order[0]]
