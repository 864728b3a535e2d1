"""One ranking for docs and threads (search/tradeoff.py), both shown when both fit (answer/extractive.py),
a thread's own confidence bands (search/confidence.py) and thread expectations in eval sets (measure/)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from rlhelper.answer.extractive import build_answer, cited_hits, cited_positions
from rlhelper.measure.sets import ANY_HEADING, load_eval_set, relevance_gains
from rlhelper.measure.tradeoff import Ranked, fit
from rlhelper.schema import Entry, Hit
from rlhelper.search import tradeoff
from rlhelper.search.confidence import ConfidenceModel, Signals
from rlhelper.search.query import normalize_query
from rlhelper.search.tradeoff import MAX_FACTOR, TradeoffModel, save_model, tradeoff_model


def doc(eid: str = "d", framework: str = "verl") -> Entry:
    return Entry(id=eid, collection="seeds", doc="guide.md", doc_title="Guide", framework=framework, lang="en",
                 breadcrumb=["Guide", "OOM in rollout"], heading="OOM in rollout", anchor="oom", line_start=1,
                 line_end=4, text="## OOM in rollout\n\n**Fix:** lower `gpu_memory_utilization`.")


def thread(eid: str = "t", framework: str = "verl", number: int = 7) -> Entry:
    return Entry(id=eid, collection="github:acme/verl", doc=f"issues/{number}", doc_title=f"Reported issue verl#{number}",
                 framework=framework, lang="en", breadcrumb=["Rollout OOM at step 3"], heading="Rollout OOM at step 3",
                 anchor="", line_start=1, line_end=6, kind="issue", url=f"https://github.example/acme/verl/issues/{number}",
                 text="Rollout OOM at step 3\n\n**Symptom:**\nOOM.\n\n**Maintainer's fix:** @m\n\n> Set `free_cache=1`.")


# --- both shown ---------------------------------------------------------------------------------------


def test_a_thread_that_answers_beside_a_doc_entry_is_quoted_after_it_as_what_it_is():
    hits = [Hit(1, 1.0, thread()), Hit(2, 0.9, doc())]
    answer = build_answer("oom in rollout", "oom in rollout", hits, abstained=False, companion=1)
    assert [c.kind for c in answer.citations] == ["doc", "issue"]  # the docs first
    assert "### The docs: OOM in rollout [1]" in answer.text
    assert "### A reported issue with the same error, and how it was fixed: Rollout OOM at step 3 [2]" in answer.text
    assert [p.kind for p in answer.parts] == ["fix", "symptom", "maintainer_fix"]
    zh = build_answer("rollout 显存不足", "rollout 显存不足", hits, abstained=False, companion=1)
    assert "### 文档：OOM in rollout [1]" in zh.text and "报告过同样错误的 issue 及其解决方法：" in zh.text


def test_without_a_companion_a_close_thread_is_only_related():
    hits = [Hit(1, 1.0, doc()), Hit(2, 0.97, thread())]
    assert [h.entry.kind for h in cited_hits(hits)] == ["doc"]
    answer = build_answer("oom in rollout", "oom in rollout", hits, abstained=False)
    assert [c.kind for c in answer.citations] == ["doc"] and answer.runners_up()[0].entry.kind == "issue"


def test_cited_positions_is_what_cited_hits_does():
    assert cited_positions([1.0, 0.995, 0.5], [False, False, True]) == [0, 1]  # a tie, as before
    assert cited_positions([1.0, 0.85], [True, False], companion=1) == [1, 0]
    assert cited_positions([1.0, 0.85], [True, False]) == [0]
    assert cited_positions([], []) == []


def test_another_frameworks_thread_says_whose_tracker_it_is_from():
    hits = [Hit(1, 1.0, thread(framework="slime"))]
    answer = build_answer("verl rollout OOM", "verl rollout OOM", hits, abstained=False,
                          named_frameworks={"verl": 0.8}, indexed_frameworks=["verl", "slime"])
    assert any("this fix is from a reported issue of slime's tracker" in n for n in answer.notices)


# --- the trade-off -------------------------------------------------------------------------------------


def test_the_tradeoff_is_read_from_the_users_file_first_and_bounded(tmp_path, monkeypatch):
    target = tmp_path / "ranking.json"
    monkeypatch.setenv("RLHELPER_RANKING_FILE", str(target))
    save_model(TradeoffModel({"bias": math.log(1.5), "is_log": math.log(2.0)}), target)
    model = tradeoff_model()
    assert model.issue_factor(normalize_query("how do I resume?")) == pytest.approx(1.5)
    log = normalize_query('Traceback (most recent call last):\n  File "a.py", line 1\nValueError: bad shard')
    assert log.is_log and model.issue_factor(log) == pytest.approx(3.0)
    save_model(TradeoffModel({"bias": 9.0, "is_log": 0.0}), target)
    assert tradeoff_model().issue_factor() == MAX_FACTOR  # a file cannot make threads swamp everything
    target.write_text("{not json")
    tradeoff._load.cache_clear()
    shipped = TradeoffModel.from_dict(json.loads(tradeoff.PACKAGED_FILE.read_text()))
    assert tradeoff_model().weights == shipped.weights  # a damaged file falls back to the shipped one


def test_the_fit_keeps_the_factor_that_quotes_the_most_right_entries():
    # Two thread reports whose thread is second behind a doc entry (at 0.85 and 0.7 of its score), and a
    # doc question whose doc entry leads a thread by 10 %. The first thread and the doc entry are plain
    # answers on their own (`fits`), so each is quoted beside the other kind while in the top 3; the second
    # thread is not, so it is quoted only when it leads or ties (within 1 %): from 0.99/0.7 on, where the doc
    # question's doc entry, behind its thread, is still quoted beside it. The fit takes the smallest such factor.
    ranked = [Ranked("threads", [(1, 1.0), (2, 0.85)], frozenset({2}), frozenset({2}), False, frozenset({2})),
              Ranked("threads", [(1, 1.0), (3, 0.7)], frozenset({3}), frozenset({3}), False, frozenset()),
              Ranked("seeds", [(4, 1.0), (5, 0.9)], frozenset({4}), frozenset({5}), False, frozenset({4}))]
    model, figures = fit(ranked)
    factor = model.factor(is_log=False)
    assert 0.99 / 0.7 <= factor < 1.0 / 0.7
    assert figures["threads"]["fitted"] == {"n": 2, "quoted": 1.0, "recall@1": 0.5, "recall@3": 1.0}
    assert figures["seeds"]["fitted"] == {"n": 1, "quoted": 1.0, "recall@1": 0.0, "recall@3": 1.0}


# --- a thread's own bands ------------------------------------------------------------------------------


def test_a_thread_at_the_top_is_judged_against_its_own_bands():
    model = ConfidenceModel(weights=[1.0, 0, 0, 0, 0], bias=0.0, thresholds={"hybrid": 0.3},
                            weak_ceilings={"hybrid": 0.4},
                            kind_bands={"issue": {"thresholds": {"hybrid": 0.5}, "weak_ceilings": {"hybrid": 0.8}}})
    assert model.threshold("hybrid") == 0.3 and model.threshold("hybrid", "issue") == 0.5
    assert not model.weak(0.6, "hybrid") and model.weak(0.6, "hybrid", "issue")
    assert model.threshold("dense", "issue") == 0.5  # a mode without its own band: the kind's hybrid one
    again = ConfidenceModel.from_dict(model.to_dict())
    assert again.kind_bands == model.kind_bands and again.threshold("hybrid", "issue") == 0.5
    assert model.confidence(Signals(0.5, 0, 0, 0)) == again.confidence(Signals(0.5, 0, 0, 0))


# --- thread expectations in eval sets ------------------------------------------------------------------


def test_an_eval_item_may_expect_a_thread_by_repository_and_number(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps({"id": "t1", "split": "dev", "query": "q", "kind": "error",
                                "expected": [{"repo": "acme/verl", "number": 7}]}) + "\n")
    [item] = load_eval_set(path)
    assert item.expected[0]["heading"] == ANY_HEADING and item.answerable
    from rlhelper.measure.sets import entry_locations

    right, other_number = thread(number=7), thread(number=8)
    other_repo = replace(thread(number=7), collection="github:acme/verl-fork")
    gains = relevance_gains([entry_locations(e) for e in (other_number, other_repo, right)], item.expected)
    assert gains == [0, 0, 1]
