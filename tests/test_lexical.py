"""Tokenizer and BM25 index: identifiers, Chinese, ranking, filtering, persistence."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest

from rlhelper.errors import IndexCorruptError
from rlhelper.index.lexical import (
    BM25_FILE,
    HEADING_REPEATS,
    TOKENIZER_VERSION,
    VOCAB_FILE,
    BM25Index,
    entry_text_for_lexical,
    entry_tokens,
    phrases,
    stem,
    tokenize,
)

# --- tokenizer: identifiers ----------------------------------------------------


def test_dotted_exception_name_keeps_whole_and_camel_parts():
    tokens = tokenize("torch.cuda.OutOfMemoryError: CUDA out of memory")
    assert tokens[:3] == ["torch.cuda.outofmemoryerror", "torch", "cuda"]
    assert {"outofmemoryerror", "out", "memory", "error"} <= set(tokens)
    assert "of" not in tokens  # stopword


def test_dotted_config_key_keeps_whole_snake_chunks_and_parts():
    tokens = tokenize("actor_rollout_ref.rollout.gpu_memory_utilization=0.3")
    assert "actor_rollout_ref.rollout.gpu_memory_utilization" in tokens
    assert {"actor_rollout_ref", "gpu_memory_utilization"} <= set(tokens)
    assert {"actor", "rollout", "ref", "gpu", "memory", "utilization", "0.3"} <= set(tokens)


def test_snake_case_whole_plus_parts():
    assert tokenize("max_num_seqs") == ["max_num_seqs", "max", "num", "seq"]


def test_cli_flag_whole_snake_spelling_and_parts():
    tokens = tokenize("--sglang-mem-fraction-static 0.8")
    assert tokens[:2] == ["--sglang-mem-fraction-static", "sglang_mem_fraction_static"]
    assert {"sglang", "mem", "fraction", "static", "0.8"} <= set(tokens)


def test_flag_and_attribute_spellings_meet():
    # slime's qa.md writes both `--max-tokens-per-gpu` and `max_tokens_per_gpu`.
    assert "max_tokens_per_gpu" in tokenize("--max-tokens-per-gpu")
    assert "max_tokens_per_gpu" in tokenize("max_tokens_per_gpu")


def test_single_word_flag_keeps_its_dashes():
    assert tokenize("--colocate") == ["--colocate", "colocate"]
    assert tokenize("x--y") == []  # not a flag: dashes inside a word


def test_camel_case_split_and_protected_product_names():
    assert tokenize("RayActorError") == ["rayactorerror", "ray", "actor", "error"]
    assert tokenize("SGLangInferenceEngine") == ["sglanginferenceengine", "sglang", "inference", "engine"]
    assert tokenize("vLLM SkyRL") == ["vllm", "skyrl"]
    assert tokenize("HTTPServer") == ["httpserver", "http", "server"]


def test_numbers_kept_when_they_identify_something():
    tokens = tokenize("port 8000, step 3, pid 2769699, ratio 0.85, version 535.161.08")
    assert {"8000", "0.85", "535.161.08"} <= set(tokens)
    assert "3" not in tokens and "2769699" not in tokens


def test_hex_addresses_dropped():
    assert tokenize("at 0x7f3a2b10c0") == []


def test_stopwords_dropped_but_negations_and_out_kept():
    assert tokenize("the engine is not running") == ["engine", "not", "running"]
    assert tokenize("No module named sglang") == ["no", "module", "named", "sglang"]
    assert tokenize("timed out") == ["timed", "out"]


def test_light_plural_stemming():
    assert [stem(w) for w in ("gpus", "weights", "retries", "status", "process", "corpus", "kwargs")] == [
        "gpu", "weight", "retry", "status", "process", "corpus", "kwarg",
    ]
    assert tokenize("GPUs") == tokenize("GPU") == ["gpu"]
    assert tokenize("1800000ms 50ms") == ["1800000ms", "50ms"]  # units are not plurals


def test_full_width_and_case_are_normalised():
    assert tokenize("ＯＯＭ") == tokenize("oom") == ["oom"]


def test_empty_and_symbol_only_text():
    assert tokenize("") == []
    assert tokenize("=> :: --- ...") == []


# --- tokenizer: Chinese ----------------------------------------------------------


def test_chinese_runs_become_overlapping_bigrams():
    assert tokenize("显存不足") == ["显存", "存不", "不足"]
    assert tokenize("rollout 阶段显存不足") == ["rollout", "阶段", "段显", "显存", "存不", "不足"]


def test_single_han_character_stays():
    assert tokenize("慢 10 倍") == ["慢", "10", "倍"]


def test_chinese_punctuation_splits_runs():
    assert tokenize("超时，重启") == ["超时", "重启"]


def test_chinese_query_does_not_load_jieba():
    # jieba's dictionary takes seconds to load; the tokenizer must never pull it in.
    code = "import sys, rlhelper.index.lexical as L; L.tokenize('权重同步超时'); print('jieba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_tokenizer_is_linear_on_hostile_input():
    started = time.process_time()  # CPU time: other processes do not count
    for text in ("a." * 200_000, "-" * 400_000, "aB" * 200_000, "中" * 400_000, "x" * 400_000):
        tokenize(text)
    assert time.process_time() - started < 10  # generous: quadratic behaviour would take minutes


def test_long_dotted_blob_keeps_its_name_parts():
    blob = ".".join(["some_module"] * 20)  # > 80 characters as a whole
    tokens = tokenize(blob)
    assert blob not in tokens and "some_module" not in tokens
    assert tokens.count("module") == 20


# --- entry text ------------------------------------------------------------------


def test_entry_text_weights_heading_and_adds_ancestors():
    text = entry_text_for_lexical(
        "Error: Weight sync timed out",
        ["Troubleshooting Guide", "4. Weight Sync Issues", "Error: Weight sync timed out"],
        "Error: Weight sync timed out\nIncrease generator.weight_sync_timeout.",
    )
    assert text.count("Weight sync timed out") == 3  # twice added + its own line in the body
    assert "Troubleshooting Guide / 4. Weight Sync Issues" in text
    assert text.endswith("Increase generator.weight_sync_timeout.")


def test_entry_text_without_breadcrumb():
    assert entry_text_for_lexical("H", [], "body") == "H\nH\nbody"


def test_phrases_are_ordered_pairs_of_plain_words():
    assert phrases("ValueError: reward_spec field is required") == [
        "valueerror+reward", "reward+spec", "spec+field", "field+required"]
    assert phrases("Field 'reward_spec' must be a dictionary") == [
        "field+reward", "reward+spec", "spec+dictionary"]  # "must", "be", "a" are stopwords
    assert phrases("GPUs at 30%") == []  # one plain word ("gpu"); numbers are not words here
    assert phrases("显存不足") == [] and phrases("") == []


def test_entry_tokens_add_the_headings_phrases_weighted_like_the_heading():
    tokens = entry_tokens("Weight sync timed out", ["Guide", "Weight sync timed out"], "Raise the timeout.")
    assert tokens.count("weight+sync") == HEADING_REPEATS + 1
    assert "raise+timeout" not in tokens  # body pairs are not indexed


def test_phrases_break_a_tie_between_entries_sharing_words():
    docs = ["Error: reward_spec field is required", "Error: ValueError: Field 'reward_spec' must be a dictionary"]
    idx = BM25Index.build([entry_tokens(d, [d], d) for d in docs])
    query = "ValueError: reward_spec field is required"
    ids, _ = idx.search(tokenize(query) + phrases(query), k=2)
    assert ids[0] == 0


# --- BM25 ------------------------------------------------------------------------

DOCS = [
    "Error: CUDA out of memory during generation. Reduce generator.gpu_memory_utilization",
    "Error: Weight sync timed out. Increase generator.weight_sync_timeout",
    "NCCL error: unhandled system error. Check firewall and NCCL_DEBUG=INFO",
    "OOM during rollout: lower actor_rollout_ref.rollout.gpu_memory_utilization",
    "Gloo 超时 / Global rank x is not part of group",
    "可用显存不足：降低 SGLang 的静态显存占用",
]


@pytest.fixture(scope="module")
def index():
    return BM25Index.build([tokenize(d) for d in DOCS])


def test_ranks_the_matching_entry_first(index):
    ids, scores = index.search(tokenize("Weight sync timed out after 60s"), k=3)
    assert ids[0] == 1
    assert np.all(np.diff(scores) <= 0) and np.all(scores > 0)


def test_exact_identifier_beats_shared_parts(index):
    ids, _ = index.search(tokenize("actor_rollout_ref.rollout.gpu_memory_utilization"), k=3)
    assert ids[0] == 3  # doc 0 shares gpu/memory/utilization but not the key


def test_chinese_query_matches_chinese_entry(index):
    ids, _ = index.search(tokenize("显存不足怎么办"), k=2)
    assert ids[0] == 5
    ids, _ = index.search(tokenize("gloo 超时"), k=2)
    assert ids[0] == 4


def test_unknown_tokens_are_tolerated(index):
    ids, scores = index.search(["zzzz-never-seen", "nccl"], k=5)
    assert list(ids) == [2]
    empty_ids, empty_scores = index.search(["zzzz"], k=5)
    assert empty_ids.size == 0 and empty_scores.size == 0
    assert index.search([], k=5)[0].size == 0


def test_only_matching_documents_are_returned(index):
    ids, _ = index.search(tokenize("memory"), k=10)
    assert set(ids) == {0, 3}


def test_allowed_mask_filters(index):
    allowed = np.ones(len(DOCS), dtype=bool)
    allowed[1] = False
    ids, _ = index.search(tokenize("Weight sync timed out"), k=5, allowed=allowed)
    assert 1 not in ids
    with pytest.raises(ValueError):
        index.search(["nccl"], k=5, allowed=np.ones(3, dtype=bool))


def test_ties_break_on_row_and_k_limits(index):
    twin = BM25Index.build([["alpha", "beta"], ["gamma"], ["alpha", "beta"], ["alpha", "beta"]])
    ids, scores = twin.search(["alpha"], k=2)
    assert list(ids) == [0, 2] and scores[0] == scores[1]


def _reference_bm25(docs, query, k1=1.2, b=0.75):
    """Textbook Okapi BM25 with Lucene's IDF and 1 + ln(qtf), one document at a time."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    df = Counter(t for d in docs for t in set(d))
    out = []
    for d in docs:
        tf = Counter(d)
        score = 0.0
        for term, qtf in Counter(query).items():
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                norm = k1 * (1 - b + b * len(d) / avgdl)
                score += idf * (1 + math.log(qtf)) * tf[term] * (k1 + 1) / (tf[term] + norm)
        out.append(score)
    return np.array(out)


def test_scores_match_a_textbook_implementation():
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(300)]
    docs = [list(rng.choice(vocab, size=rng.integers(1, 60))) for _ in range(400)]
    query = list(rng.choice(vocab[:50], size=8))
    idx = BM25Index.build(docs)
    ids, scores = idx.search(query, k=400)
    expected = _reference_bm25(docs, query)
    assert np.allclose(scores, expected[ids], rtol=1e-4)
    assert set(ids) == set(np.flatnonzero(expected > 0))


def test_extra_terms_count_with_their_own_weight(index):
    plain_ids, plain = index.search(tokenize("Gloo"), k=6)
    _, light = index.search(tokenize("Gloo"), k=6, extra={"超时": 0.5})
    _, heavy = index.search(tokenize("Gloo"), k=6, extra={"超时": 1.0})
    assert list(plain_ids) == [4]
    assert plain[0] < light[0] < heavy[0]
    _, same = index.search(tokenize("Gloo"), k=6, extra={"gloo": 0.1})  # a query token keeps its own weight
    assert same[0] == pytest.approx(plain[0])


def test_upper_bound_and_score_of_one_document(index):
    query = tokenize("Weight sync timed out")
    ids, scores = index.search(query, k=6)
    for row, score in zip(ids, scores, strict=True):
        assert index.score(query, int(row)) == pytest.approx(score, rel=1e-5)
    assert index.score(query, 4) == 0.0  # the Chinese Gloo entry holds none of the words
    assert 0 < scores[0] < index.upper_bound(query)
    assert index.upper_bound(["never-seen-token"]) == 0.0


def test_coverage_weighs_rare_tokens_more(index):
    doc = set(tokenize(DOCS[1]))
    assert index.coverage(tokenize("weight sync"), doc) == 1.0
    assert index.coverage([], doc) == 0.0
    rare, common = "weight_sync_timeout", "error"
    assert index.term_weight(rare) > index.term_weight(common)
    assert index.coverage([rare, "nothing"], doc) > index.coverage(["error", "nothing"], doc)
    assert index.term_weight("nothing") >= index.term_weight(rare)  # unknown: the rarest possible


def test_empty_corpus_and_empty_documents():
    assert BM25Index.build([]).search(["a"], k=3)[0].size == 0
    idx = BM25Index.build([[], ["nccl"], []])
    assert list(idx.search(["nccl"], k=3)[0]) == [1]


@pytest.mark.slow
def test_query_is_fast_on_many_documents():
    rng = np.random.default_rng(0)
    vocab = np.array([f"t{i}" for i in range(5_000)])
    docs = [list(vocab[rng.integers(0, 5_000, size=40)]) for _ in range(20_000)]
    idx = BM25Index.build(docs)
    query = list(vocab[:30])
    started = time.process_time()
    for _ in range(20):
        idx.search(query, k=50)
    assert (time.process_time() - started) / 20 < 0.5  # measured ~1 ms; generous for CI


# --- persistence -----------------------------------------------------------------


def test_save_load_round_trip(index, tmp_path):
    index.save(tmp_path)
    loaded = BM25Index.load(tmp_path)
    for query in ("Weight sync timed out", "显存不足", "nccl firewall"):
        a, b = index.search(tokenize(query), k=5), loaded.search(tokenize(query), k=5)
        assert np.array_equal(a[0], b[0]) and np.allclose(a[1], b[1])
    assert loaded.settings() == {"k1": 1.2, "b": 0.75, "tokenizer": TOKENIZER_VERSION}
    assert not loaded.stale and len(loaded) == len(DOCS)


def test_saved_files_are_plain_arrays_and_json(index, tmp_path):
    index.save(tmp_path)
    with np.load(tmp_path / BM25_FILE, allow_pickle=False) as data:
        assert all(data[name].dtype != object for name in data.files)
    meta = json.loads((tmp_path / VOCAB_FILE).read_text(encoding="utf-8"))
    assert "显存" in meta["terms"] and meta["settings"]["k1"] == 1.2


def test_settings_record_custom_parameters(tmp_path):
    idx = BM25Index.build([["a1", "b2"]], k1=0.9, b=0.4)
    idx.save(tmp_path)
    assert BM25Index.load(tmp_path).settings()["b"] == 0.4


def test_stale_tokenizer_version_is_visible(index, tmp_path):
    index.save(tmp_path)
    meta = json.loads((tmp_path / VOCAB_FILE).read_text(encoding="utf-8"))
    meta["settings"]["tokenizer"] = "old"
    (tmp_path / VOCAB_FILE).write_text(json.dumps(meta), encoding="utf-8")
    assert BM25Index.load(tmp_path).stale


def test_missing_or_corrupt_files_raise_index_corrupt(index, tmp_path):
    with pytest.raises(IndexCorruptError):
        BM25Index.load(tmp_path)
    index.save(tmp_path)
    (tmp_path / BM25_FILE).write_bytes(b"not a zip")
    with pytest.raises(IndexCorruptError):
        BM25Index.load(tmp_path)


def test_inconsistent_vocabulary_raises(index, tmp_path):
    index.save(tmp_path)
    meta = json.loads((tmp_path / VOCAB_FILE).read_text(encoding="utf-8"))
    meta["terms"] = meta["terms"][:-1]
    (tmp_path / VOCAB_FILE).write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(IndexCorruptError):
        BM25Index.load(tmp_path)


def test_with_documents_is_a_build_over_all_of_them():
    from rlhelper.index.lexical import BM25Index

    old = [["ray", "actor", "died"], ["cuda", "oom", "oom"], ["weight", "sync", "timeout", "ray"]]
    new = [["oom", "again", "显存"], ["ray"]]
    full, extended = BM25Index.build(old + new), BM25Index.build(old).with_documents(new)
    assert extended.vocabulary == full.vocabulary and extended.n_docs == 5
    for name in ("indptr", "doc_ids", "idf", "doc_lengths"):
        assert np.array_equal(getattr(extended, name), getattr(full, name)), name
    assert np.allclose(extended.weights, full.weights, rtol=1e-6)
    assert extended.search(["oom"], 5)[0].tolist() == full.search(["oom"], 5)[0].tolist()
