"""The bilingual glossary: expansion in both directions, and every row backed by the docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlhelper.index.lexical import tokenize
from rlhelper.search.glossary import GLOSSARY, USERS_TERMS, cross_language, expand, matches


def added(query: str) -> list[str]:
    tokens = tokenize(query)
    expanded = expand(tokens)
    assert expanded[: len(tokens)] == tokens  # the query itself is never altered
    return expanded[len(tokens):]


def test_chinese_term_adds_english_tokens():
    assert {"oom", "out", "memory"} <= set(added("rollout 阶段显存不足怎么办"))
    assert {"weight", "sync", "timeout", "timed"} <= set(added("权重同步超时"))


def test_english_term_in_a_chinese_query_adds_chinese_tokens():
    assert {"显存", "存不", "不足"} <= set(added("rollout 的时候 OOM 了"))


def test_identifier_parts_match_terms():
    extra = added("训练时 weight_sync_timeout 太小")
    assert {"权重", "同步", "超时"} <= set(extra)


def test_purely_english_query_gets_no_chinese_tokens():
    extra = added("CUDA out of memory during rollout")
    assert extra == ["oom"]  # the one-token synonym; no bigrams that would favour Chinese pages
    assert not any("\u4e00" <= ch <= "\u9fff" for token in added("Gloo timed out on recv") for ch in token)


def test_an_english_query_gets_its_chinese_terms_apart_for_a_lighter_weight():
    tokens = tokenize("Gloo timed out waiting for recv")
    assert "超时" in cross_language(tokens) and "超时" not in expand(tokens)
    assert cross_language(tokenize("rollout 的时候 OOM 了")) == []  # expand() adds them already
    assert cross_language(tokenize("how do I bake bread")) == []


def test_same_language_single_token_synonyms():
    assert "checkpoint" in added("ckpt 加载失败")
    assert "ckpt" in added("checkpoint not found")
    assert "grad" in added("gradient norm is NaN")


def test_no_duplicates_and_nothing_for_unrelated_queries():
    assert added("TensorDict does not support membership checks") == []
    extra = added("超时 超时 timeout")
    assert len(extra) == len(set(extra)) and "timeout" not in extra
    assert expand([]) == []


def test_multiword_terms_match_only_contiguously():
    assert not [c for c, _ in matches(tokenize("memory is out")) if "out of memory" in GLOSSARY[c].en]
    assert [c for c, _ in matches(tokenize("CUDA out of memory")) if "out of memory" in GLOSSARY[c].en]


# --- every row is justified by the corpus ------------------------------------------


INGEST = Path(__file__).resolve().parent.parent / "ingest"
# Written by users, not by the docs; each of its bigrams is (内存 in verl's Ascend FAQ, 不足 in RLinf's).
COMPOSITES = {"内存不足"}


def _corpus_text() -> str:
    paths = [p for p in INGEST.rglob("*") if p.suffix in {".txt", ".md", ".rst", ".mdx"}]
    return "\n".join(p.read_text(encoding="utf-8") for p in paths)


def _flat(text: str) -> str:
    """Markup and line breaks out, so quotes spanning wrapped lines compare equal."""
    return re.sub(r"\s+", " ", text.replace("\\ ", "").replace("`", "").replace("*", ""))


@pytest.fixture(scope="module")
def corpus():
    text = _corpus_text()
    return {"flat": _flat(text), "tokens": " " + " ".join(tokenize(text)) + " "}


@pytest.mark.parametrize("concept", GLOSSARY, ids=lambda c: c.en[0])
def test_row_terms_occur_in_the_docs(concept, corpus):
    assert concept.evidence and len(concept.en) + len(concept.zh) >= 2
    for term in concept.en + concept.zh:
        tokens = tokenize(term)
        pieces = [[t] for t in tokens] if term in COMPOSITES else [tokens]
        for piece in pieces:
            assert f" {' '.join(piece)} " in corpus["tokens"], term


@pytest.mark.parametrize("concept", GLOSSARY, ids=lambda c: c.en[0])
def test_evidence_quotes_are_verbatim(concept, corpus):
    quotes = re.findall(r"'([^']+)'", concept.evidence)
    assert quotes
    for quote in quotes:
        for fragment in quote.split(" ... "):
            assert _flat(fragment.strip()) in corpus["flat"], fragment


# --- the terms users write that the docs do not (USERS_TERMS) ----------------------------------

QUESTIONS = INGEST / "questions"


def test_a_users_term_adds_the_english_but_never_the_reverse():
    assert "reward" in added("奖励一直是 0 怎么办")
    assert not cross_language(tokenize("reward is always 0"))  # the docs hold no 奖励 to find


@pytest.mark.parametrize("concept", USERS_TERMS, ids=lambda c: c.en[0])
def test_users_terms_are_in_the_english_docs_and_in_the_banks_chinese_questions(concept, corpus):
    bank = _flat("\n".join(p.read_text(encoding="utf-8") for p in QUESTIONS.rglob("*.jsonl")))
    assert concept.one_way and all(f" {' '.join(tokenize(t))} " in corpus["tokens"] for t in concept.en)
    assert all(term in bank for term in concept.zh)
    for quote in re.findall(r"'([^']+)'", concept.evidence):
        assert _flat(quote) in corpus["flat"] or _flat(quote) in bank, quote


def test_a_chinese_question_about_a_reward_finds_the_english_entry(full_index):
    from rlhelper import Helper

    for mode in ("hybrid", "judge"):  # as "reward is always 0" does; it led with the garbled-output entry
        answer = Helper.load(full_index, mode=mode).ask("奖励一直是 0 怎么办")
        assert answer.hits[0].entry.heading == "Rewards are always 0", mode
