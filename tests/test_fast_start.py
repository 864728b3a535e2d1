"""issue 38: what makes `rlhelper ask` start fast changes nothing that is answered.

The judge's saved optimized graph encodes bitwise as a session over the shipped model file does, and a
model file that changes is never served by the graph of the old one; `rlhelper ask` (models preloaded on
their own threads) answers exactly what the library answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from rlhelper.search import judge as judge_module
from rlhelper.search import onnx_session
from rlhelper.search.judge import PACKAGED, Judge, judge_available

needs_judge = pytest.mark.skipif(not judge_available(), reason="onnxruntime, tokenizers or the judge model missing")

QUERIES = ["CUDA out of memory during rollout", "NCCL timeout in all_reduce after weight sync",
           "训练时显存不足怎么办", "ModuleNotFoundError: No module named 'sglang'", "ray actor died " * 40]


def _plain_session(model, threads=1):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


@needs_judge
def test_the_saved_graph_encodes_bitwise_as_the_model_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RLHELPER_CACHE_DIR", str(tmp_path))
    with monkeypatch.context() as m:
        m.setattr(judge_module, "fast_session", _plain_session)  # what Judge.load did before
        reference = [Judge.load(PACKAGED).encode_query(q) for q in QUERIES]
    first = Judge.load(PACKAGED, threads=2)  # optimizes the graph and saves it
    saved = list(tmp_path.rglob("model.opt.onnx"))
    assert len(saved) == 1
    used = []
    monkeypatch.setattr(onnx_session, "_cached_model", lambda *a: used.append(a) or saved[0])
    second = Judge.load(PACKAGED, threads=2)  # loads the saved graph, optimizers off
    assert used
    for q, ref in zip(QUERIES, reference, strict=True):
        assert np.array_equal(first.encode_query(q), ref) and np.array_equal(second.encode_query(q), ref), q


def _tiny_model(path, added: float) -> None:
    """y = x + added, as an ONNX file."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "c"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [helper.make_tensor("c", TensorProto.FLOAT, [1], [added])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))


def _run(session) -> float:
    return float(session.run(["y"], {"x": np.array([1.0], dtype=np.float32)})[0][0])


@needs_judge
def test_a_changed_model_file_gets_a_graph_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("RLHELPER_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "model.int8.onnx"
    _tiny_model(model, 1.0)
    assert _run(onnx_session.fast_session(model)) == 2.0
    assert _run(onnx_session.fast_session(model)) == 2.0  # from the saved graph
    assert list((tmp_path / "cache").rglob("model.opt.onnx"))
    _tiny_model(model, 5.0)  # another model in the same file: retrained, or shipped anew
    assert _run(onnx_session.fast_session(model)) == 6.0
    (next((tmp_path / "cache").rglob("model.opt.onnx"))).write_bytes(b"damaged")
    assert _run(onnx_session.fast_session(model)) == 6.0  # a damaged graph is made again


@pytest.mark.slow
@needs_judge
def test_rlhelper_ask_answers_as_the_library_does(seeds_index, usem3_cache_dir, tmp_path, monkeypatch):
    from rlhelper.api import Helper

    env = {**os.environ, "RLHELPER_CACHE_DIR": str(usem3_cache_dir), "RLHELPER_DATA_DIR": str(tmp_path / "data")}
    helper = Helper.load(seeds_index, user_bank=False)
    for query in QUERIES[:3]:
        done = subprocess.run([sys.executable, "-m", "rlhelper.cli", "ask", "--index", str(seeds_index), "--json",
                               query], capture_output=True, text=True, env=env, timeout=300, check=True)
        printed = json.loads(done.stdout)
        expected = json.loads(json.dumps(helper.ask(query, k=5).to_dict(), ensure_ascii=False))
        assert printed["hits"] == expected["hits"] and printed["abstained"] == expected["abstained"], query
        assert printed["confidence"] == expected["confidence"], query


def test_a_question_s_corrections_need_no_deletion_index():
    from rlhelper.search.spelling import BUILD_AFTER, Corrector

    vocabulary = {w: i for i, w in enumerate(["memory", "illegal", "access", "training", "tokenize", "tokenizer",
                                              "hanging", "weight", "rollout", "sglang", "nccl", "x86_64"])}
    words = ["memroy", "ilegal", "acess", "trainning", "tokenizr", "hangng", "weigth", "rollot", "zzzzzz", "nccl"]
    asked = Corrector(vocabulary, is_word=lambda w: False)
    indexed = Corrector(vocabulary, is_word=lambda w: False)
    indexed._by_delete  # noqa: B018 - built up front, as before
    assert [asked.corrections(w) for w in words] == [indexed.corrections(w) for w in words]
    assert "_by_delete" not in vars(asked)  # a question's few words did not index the whole vocabulary
    for n in range(BUILD_AFTER):
        asked.corrections(f"unknownword{chr(97 + n % 26)}")
    assert asked.corrections("memroy") == ["memory"] and "_by_delete" in vars(asked)
