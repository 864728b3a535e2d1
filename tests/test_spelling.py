"""spelling.py: misspelt query words matched to the index's vocabulary, one edit away."""

from __future__ import annotations

import pytest

from rlhelper import Helper
from rlhelper.search.query import normalize_query
from rlhelper.search.spelling import Corrector

VOCABULARY = {"memory", "illegal", "access", "function", "called", "timeout", "timed", "norm", "gpu",
              "flash_attn", "nccl", "reward", "rewards"}


@pytest.mark.parametrize(("typed", "meant"), [
    ("memroy", ["memory"]),      # two letters swapped
    ("ilegal", ["illegal"]),     # a letter dropped
    ("acess", ["access"]),
    ("functon", ["function"]),
    ("rewarf", ["reward"]),      # a letter changed
    ("rewardss", ["rewards"]),   # a letter added
])
def test_one_edit_away_is_corrected(typed, meant):
    assert Corrector(VOCABULARY).corrections(typed) == meant


@pytest.mark.parametrize("typed", [
    "memory",      # known
    "acesss",      # two edits from "access"
    "nrom",        # under five letters: too many neighbours
    "flash_atn",   # identifiers match exactly or not at all
    "显存不够",
    "kubernetes",  # nothing near it
])
def test_what_is_left_alone(typed):
    assert Corrector(VOCABULARY).corrections(typed) == []


@pytest.mark.parametrize(("typed", "near"), [
    ("taken", "token"), ("pausing", "parsing"), ("stage", "stale"), ("switched", "switche"),
    ("passe", "parse"),  # the tokenizer's "passes" without its plural s
])
def test_an_english_word_the_docs_do_not_use_is_not_a_typo(typed, near):
    assert Corrector({near}).corrections(typed) == []
    assert Corrector({near}, is_word=lambda word: False).corrections(typed) == [near]  # the dictionary decides


def test_a_misspelt_question_is_answered_not_abstained(seeds_index):
    helper = Helper.load(seeds_index)
    answer = helper.ask("out of memroy durnig rolout with vlm")
    assert not answer.abstained and answer.citations[0].heading == "OOM during rollout (vLLM)"
    terms = helper.retriever.rank(normalize_query("out of memroy durnig rolout"),
                                   helper.retriever.allowed_mask()).terms
    tokens, words = terms.as_meant()  # what the abstention signals weigh
    assert {"memory", "during", "rollout"} <= set(words) and "memroy" not in tokens


def test_a_misspelt_question_finds_its_entry(seeds_index):
    helper = Helper.load(seeds_index)
    assert helper.search("ilegal memroy acess", k=1)[0].entry.heading == "Illegal memory access"
    retriever = helper.retriever
    terms = retriever.rank(normalize_query("ilegal memroy acess"), retriever.allowed_mask()).terms
    assert {"illegal", "memory", "access"} <= set(terms.extra)  # searched as hints; the typed words stay
    assert {"ilegal", "memroy", "acess"} <= set(terms.words)


def test_a_misspelt_framework_name_still_points_at_its_framework(seeds_index):
    helper = Helper.load(seeds_index)
    assert helper.search("weight sync timeout", k=1)[0].entry.framework != "slime"
    hinted = [hit.entry.framework for hit in helper.search("weight sync timeout in skime", k=3)]
    assert hinted[0] == "slime" and hinted.count("slime") >= 2, hinted  # SkyRL's exact match may stay third
    retriever = helper.retriever
    terms = retriever.rank(normalize_query("gloo timeout in rilnf"), retriever.allowed_mask()).terms
    assert terms.misspelt_frameworks() == {"rlinf": 0.5}
