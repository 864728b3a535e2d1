"""Hybrid retrieval on a real index: fusion weights, framework preference, one hit per section, abstention."""

from __future__ import annotations

import pytest

from rlhelper.api import Helper
from rlhelper.errors import QueryError
from rlhelper.search import retrieve
from rlhelper.search.query import normalize_query


@pytest.fixture(scope="module")
def helper(seeds_index) -> Helper:
    return Helper.load(seeds_index)


def test_a_pasted_error_finds_its_entry_first(helper):
    hit = helper.search("ValueError: reward_spec field is required", k=3)[0]
    assert hit.entry.heading == "Error: reward_spec field is required"
    assert hit.lexical_rank == 1


def test_hybrid_uses_both_rankings_and_weighs_lexical_more(helper):
    r = helper.retriever
    normalized = normalize_query("Weight sync timed out between the trainer and the inference engine")
    ranking = r.rank(normalized, r.allowed_mask())
    assert ranking.lex_ids and ranking.dense_ids
    fused = dict(ranking.fused)
    lex_first, dense_first = ranking.lex_ids[0], ranking.dense_ids[0]
    if lex_first != dense_first:  # first place in BM25 alone outweighs first place in the embedder alone
        lex_only = retrieve.LEXICAL_WEIGHT / (retrieve.RRF_K + 1)
        assert fused[lex_first] >= lex_only * 0.999


def test_a_named_framework_is_preferred_without_hiding_others(helper):
    question = "rollout runs out of GPU memory, which setting do I lower?"
    for framework in ("verl", "skyrl"):
        hinted = helper.search(f"{framework}: {question}", k=30)
        assert hinted[0].entry.framework == framework
        assert {h.entry.framework for h in hinted} - {framework}, "a hint boosts; it never filters"


def test_a_long_sections_parts_come_back_as_one_hit(helper):
    split = [e for e in helper.entries if e.parts > 1 and e.answerable]
    assert split, "the seeds have sections long enough to be split"
    for entry in split[:4]:
        hits = helper.search(entry.heading, k=10)
        keys = [(h.entry.doc, h.entry.anchor, tuple(h.entry.breadcrumb)) for h in hits]
        assert len(keys) == len(set(keys))


@pytest.mark.parametrize("query", [
    "What is the best recipe for sourdough bread with rye flour?",
    "hello",
    "今天北京天气怎么样",
])
def test_off_topic_text_abstains_but_keeps_related_hits(helper, query):
    result = helper.retrieve(query)
    assert result.abstained
    assert result.hits  # the nearest entries are still listed as related
    assert result.confidence < retrieve.load_threshold("hybrid", helper.index.embedder_id)


@pytest.mark.parametrize("query", [
    "RuntimeError: wake_up timed out after 60s",
    "torch.OutOfMemoryError: CUDA out of memory during generation",
    "NCCL error: unhandled system error",
])
def test_documented_errors_are_answered(helper, query):
    result = helper.retrieve(query)
    assert not result.abstained and result.confidence > 0.5


def test_lexical_and_dense_modes_use_one_retriever_each(helper):
    query = "Gloo timed out waiting for recv operation"
    lexical = helper.retriever.search(query, mode="lexical")
    dense = helper.retriever.search(query, mode="dense")
    assert all(h.dense_rank is None for h in lexical.hits)
    assert all(h.lexical_rank is None for h in dense.hits)
    assert lexical.signals is not None and dense.signals is not None  # both judged by the same evidence


def test_filters_restrict_every_mode(helper):
    for mode in retrieve.MODES:
        hits = helper.search("out of memory", k=8, framework="verl", mode=mode)
        assert hits and all(h.entry.framework == "verl" for h in hits)
        assert all(h.entry.lang == "zh" for h in helper.search("显存", k=5, lang="zh", mode=mode))


def test_unknown_mode_and_unsearchable_queries_are_refused(helper):
    with pytest.raises(QueryError, match="mode"):
        helper.retrieve("oom", mode="magic")
    for bad in ("", "   \n\t", "\x00\x01\x02\x03" * 50):
        with pytest.raises(QueryError):
            helper.retrieve(bad)


def test_bytes_are_decoded_and_other_types_refused(helper):
    assert helper.search(b"RuntimeError: wake_up timed out after 60s", k=1)[0].entry.heading.endswith("Xs")
    with pytest.raises(QueryError, match="must be text"):
        helper.retrieve(42)


def test_a_tracebacks_framework_frame_steers_to_that_frameworks_entry(helper):
    log = ('(TaskRunner pid=12345) Traceback (most recent call last):\n'
           '  File "/home/u/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 248, in generate_sequences\n'
           '    outputs = self.inference_engine.generate(prompts=vllm_inputs)\n'
           'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.')
    assert helper.search(log, k=1)[0].entry.heading == "OOM during rollout (vLLM)"
