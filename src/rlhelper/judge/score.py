"""Scoring (question, entry) pairs with the exported judge: onnxruntime and tokenizers, no torch.

    judge = Judge.load(folder)          # model.onnx (or model.int8.onnx) + tokenizer.json + manifest
    judge.probabilities(query, [passage(e) for e in entries]) -> [0.93, 0.08, ...]

The probability is the sigmoid of the model's one logit, as the training loss (binary cross-entropy
on logits) defines it. Both imports are light next to torch; they are made on load, not on import.
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
MAX_PAIRS = 64  # one call scores a shortlist, never a whole index


class Judge:
    """An exported judge: its ONNX session and the tokenizer it was trained with."""

    def __init__(self, session, tokenizer, max_length: int, manifest: dict):
        self.session = session
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.manifest = manifest
        self._inputs = {i.name for i in session.get_inputs()}

    @classmethod
    def load(cls, folder: str | Path, *, int8: bool = True, threads: int = 1) -> Judge:
        """`int8`: the quantized model (the fp32 one otherwise). One thread: a query process
        shares the machine with the web server's other requests."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = Path(folder)
        manifest_file = folder / MANIFEST
        manifest = json.loads(manifest_file.read_text(encoding="utf-8")) if manifest_file.is_file() else {}
        max_length = int(manifest.get("max_length", DEFAULT_MAX_LENGTH))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        model = folder / (MODEL_INT8 if int8 else MODEL_FP32)
        session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        tokenizer.enable_truncation(max_length=max_length)  # longest-first, as the trainer's tokenizer
        tokenizer.no_padding()
        return cls(session, tokenizer, max_length, manifest)

    def logits(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        if len(passages) > MAX_PAIRS:
            raise ValueError(f"at most {MAX_PAIRS} passages per call, got {len(passages)}")
        encodings = self.tokenizer.encode_batch([(query, p) for p in passages])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], types[row, :n], mask[row, :n] = e.ids, e.type_ids, 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        (out,) = self.session.run(["logits"], {k: v for k, v in feeds.items() if k in self._inputs})
        return out.reshape(len(passages))

    def probabilities(self, query: str, passages: list[str]) -> list[float]:
        """P(the passage answers the query), one per passage, in order."""
        return [float(p) for p in 1.0 / (1.0 + np.exp(-self.logits(query, passages)))]
