"""Scoring (question, entry) pairs with the exported judge: onnxruntime and tokenizers, no torch.

    judge = Judge.load(folder)          # model.onnx (or model.int8.onnx) + tokenizer.json + manifest
    judge.probabilities(query, [passage(e) for e in entries]) -> [0.93, 0.08, ...]

The probability is sigmoid(scale * cos(question, passage) + bias), with the scale and bias learned in
training (manifest.json). A passage's vector is kept once computed: a process meets the same few
hundred entries again and again, so a warm judge encodes the question alone. Both imports are
light next to torch; they are made on load, not on import.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

MODEL_INT8 = "model.int8.onnx"
MODEL_FP32 = "model.onnx"
TOKENIZER = "tokenizer.json"
MANIFEST = "manifest.json"
DEFAULT_MAX_LENGTH = 128
MAX_PASSAGES = 64  # one call scores a shortlist, never a whole index
MAX_CACHED = 20_000  # passage vectors kept (1.5 kB each): every entry of a large index


class Judge:
    """An exported judge: its ONNX session, the tokenizer it was trained with, scale and bias."""

    def __init__(self, session, tokenizer, manifest: dict):
        self.session = session
        self.tokenizer = tokenizer
        self.manifest = manifest
        self.scale = float(manifest.get("scale", 1.0))
        self.bias = float(manifest.get("bias", 0.0))
        self._inputs = {i.name for i in session.get_inputs()}
        self._passages: dict[str, np.ndarray] = {}

    @classmethod
    def load(cls, folder: str | Path, *, int8: bool = True, threads: int = 1) -> Judge:
        """`int8`: the quantized model (the fp32 one otherwise). One thread: a query process
        shares the machine with the web server's other requests."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = Path(folder)
        manifest_file = folder / MANIFEST
        manifest = json.loads(manifest_file.read_text(encoding="utf-8")) if manifest_file.is_file() else {}
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        model = folder / (MODEL_INT8 if int8 else MODEL_FP32)
        session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        tokenizer.enable_truncation(max_length=int(manifest.get("max_length", DEFAULT_MAX_LENGTH)))
        tokenizer.no_padding()
        return cls(session, tokenizer, manifest)

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

    def _passage_vectors(self, passages: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(p for p in passages if p not in self._passages))
        if missing:
            if len(self._passages) + len(missing) > MAX_CACHED:
                self._passages.clear()
            self._passages.update(zip(missing, self.embed(missing), strict=True))
        return np.stack([self._passages[p] for p in passages])

    def logits(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        if len(passages) > MAX_PASSAGES:
            raise ValueError(f"at most {MAX_PASSAGES} passages per call, got {len(passages)}")
        question = self.embed([query])[0]
        return self.scale * (self._passage_vectors(passages) @ question) + self.bias

    def probabilities(self, query: str, passages: list[str]) -> list[float]:
        """P(the passage answers the query), one per passage, in order."""
        return [float(p) for p in 1.0 / (1.0 + np.exp(-self.logits(query, passages)))]
