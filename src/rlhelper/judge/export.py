"""The trained judge as ONNX (fp32 and int8) with its tokenizer and a manifest (torch).

folder/model.onnx        fp32, inputs input_ids / attention_mask / token_type_ids,
                         output `embedding` (mean-pooled over the mask, unit length)
folder/model.int8.onnx   the same with int8 weights (onnxruntime's dynamic quantization)
folder/tokenizer.json    what score.py tokenizes with
folder/manifest.json     the data's hash, the command, the seed, the settings, scale and bias
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

from ..search.judge import MANIFEST, MODEL_FP32, MODEL_INT8, TOKENIZER

OPSET = 17


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def export(model, folder: Path, manifest: dict) -> dict:
    """Write the ONNX models, the tokenizer and the manifest; returns the manifest written."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    encoder, tokenizer = model[0].auto_model, model.tokenizer
    encoder.eval()

    class Embedding(torch.nn.Module):  # the sentence encoder's pooling and normalising, inside the graph
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            tokens = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    # A padded batch, as a shortlist is when served (the test compares padded vectors with torch).
    sample = tokenizer(
        ["a question", "a longer question about ray workers"], padding=True, return_tensors="pt"
    )
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]  # e5: no token types
    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"embedding": {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # the tracer's notes on shapes it fixes: the padded sample covers them
        torch.onnx.export(
            Embedding(encoder),
            tuple(sample[n] for n in names),
            str(folder / MODEL_FP32),
            input_names=names,
            output_names=["embedding"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    quantize_dynamic(str(folder / MODEL_FP32), str(folder / MODEL_INT8), weight_type=QuantType.QInt8)
    tokenizer.backend_tokenizer.save(str(folder / TOKENIZER))
    manifest = dict(
        manifest,
        opset=OPSET,
        files={
            name: {"bytes": (folder / name).stat().st_size, "sha256": sha256(folder / name)}
            for name in (MODEL_FP32, MODEL_INT8, TOKENIZER)
        },
    )
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest
