"""Eval metrics on hand-made rankings, the hit matcher, threshold choice, and report writing on a fake Helper."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from rlhelper.errors import ConfigError, QueryError
from rlhelper.measure import baseline, harness, metrics, report, sets
from rlhelper.schema import Entry, Hit

# --- metrics ---------------------------------------------------------------------------


def test_recall_at_k_is_a_hit_rate_over_the_top_k():
    gains = [0, 0, 1, 0, 1]
    assert [metrics.recall_at_k(gains, k) for k in (1, 3, 5)] == [0.0, 1.0, 1.0]
    assert metrics.recall_at_k([], 5) == 0.0


def test_reciprocal_rank_uses_the_first_relevant_hit_within_k():
    assert metrics.reciprocal_rank([0, 1, 1]) == 0.5
    assert metrics.reciprocal_rank([1]) == 1.0
    assert metrics.reciprocal_rank([0] * 10 + [1], k=10) == 0.0


def test_ndcg_is_one_for_a_perfect_ranking_and_follows_the_formula():
    assert metrics.ndcg_at_k([1, 0, 0], n_relevant=1) == 1.0
    assert metrics.ndcg_at_k([1, 1, 0], n_relevant=2) == pytest.approx(1.0)
    # one relevant at rank 2, two expected: (1/log2 3) / (1 + 1/log2 3)
    assert metrics.ndcg_at_k([0, 1], n_relevant=2) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert metrics.ndcg_at_k([0, 0], n_relevant=1) == 0.0
    assert metrics.ndcg_at_k([1], n_relevant=0) == 0.0


def test_ndcg_ideal_is_capped_at_k():
    assert metrics.ndcg_at_k([1, 1], n_relevant=5, k=2) == pytest.approx(1.0)


def test_abstention_scores_positive_class_is_should_abstain():
    abstained = [True, True, False, False, True]
    should = [True, False, True, False, False]
    s = metrics.abstention_scores(abstained, should)
    assert s["abstention_precision"] == pytest.approx(1 / 3)
    assert s["abstention_recall"] == pytest.approx(1 / 2)
    assert s["wrongly_abstained"] == pytest.approx(2 / 3)


def test_abstention_scores_are_none_when_undefined():
    s = metrics.abstention_scores([False, False], [False, False])
    assert s["abstention_precision"] is None and s["abstention_recall"] is None
    assert s["wrongly_abstained"] == 0.0


def test_abstention_separation_is_threshold_free():
    # Perfect separation: every unanswerable item is less confident than every answerable one.
    s = metrics.abstention_separation([0.9, 0.8, 0.7], [0.1, 0.2, 0.3, 0.4, 0.5])
    assert s["abstention_auroc"] == 1.0 and s["wrongly_abstained_at_target"] == 0.0
    # 80 % of 5 unanswerable = 4, the 4th lowest is 0.75: answerable 0.7 and 0.75 fall at or below it.
    s = metrics.abstention_separation([0.9, 0.75, 0.7, 0.95], [0.1, 0.2, 0.3, 0.75, 0.99])
    assert s["wrongly_abstained_at_target"] == pytest.approx(2 / 4)
    # pairs with u < a: 0.9 -> 4, 0.75 -> 3 (+ one tie = 0.5), 0.7 -> 3, 0.95 -> 4; of 20 pairs
    assert s["abstention_auroc"] == pytest.approx((4 + 3.5 + 3 + 4) / 20)


def test_abstention_separation_is_none_without_both_classes():
    s = metrics.abstention_separation([0.5], [])
    assert s == {"abstention_auroc": None, "wrongly_abstained_at_target": None}


# --- matcher ---------------------------------------------------------------------------


def test_normalize_heading_strips_markup_and_folds_case_and_space():
    assert sets.normalize_heading("Error: `ModuleNotFoundError`:  No module named 'sglang'") == \
        "error: modulenotfounderror: no module named 'sglang'"
    assert sets.normalize_heading("**CUDA**  out of   memory") == "cuda out of memory"
    assert sets.normalize_heading("``ray.init`` hangs") == "ray.init hangs"
    assert sets.normalize_heading("显存不足：怎么办") == sets.normalize_heading("显存不足:怎么办")
    assert sets.normalize_heading("gpu_memory_utilization") == "gpu_memory_utilization"


@pytest.mark.parametrize(("actual", "expected", "same"), [
    ("000_17cc8c75aeb7db0e.txt", "000_17cc8c75aeb7db0e.txt", True),
    ("seeds/000_17cc8c75aeb7db0e.txt", "000_17cc8c75aeb7db0e.txt", True),
    ("000_17cc8c75aeb7db0e.txt", "seeds/000_17cc8c75aeb7db0e.txt", True),
    ("000_17cc8c75aeb7db0e.txt", "000_17cc8c75aeb7db0e", True),
    ("official/verl/faq.rst", "verl/faq.rst", True),
    ("official/verl/faq.rst", "skyrl/faq.rst", False),
    ("official/verl/faq.rst", "faq.md", False),
    ("001_4943b08643600789.txt", "000_17cc8c75aeb7db0e.txt", False),
])
def test_doc_matches(actual, expected, same):
    assert sets.doc_matches(actual, expected) is same


def entry(doc="000_a.txt", heading="Fix OOM", lang="en", collection="seeds", also_at=None, part=1) -> Entry:
    return Entry(id=f"{doc}:{heading}:{part}", collection=collection, doc=doc, doc_title="T", framework="verl",
                 lang=lang, breadcrumb=["T", heading], heading=heading, anchor="a", line_start=1, line_end=2,
                 text="...", part=part, also_at=also_at or [])


def test_matching_expected_accepts_the_heading_loosely_and_also_at_locations():
    want = [{"doc": "000_a.txt", "heading": "`Fix`  oom"}]
    assert sets.matching_expected(sets.entry_locations(entry()), want) == {0}
    assert sets.matching_expected(sets.entry_locations(entry(heading="Other")), want) == set()
    assert sets.matching_expected(sets.entry_locations(entry(doc="001_b.txt")), want) == set()
    merged = entry(doc="002_c.txt", heading="Other", also_at=[{"doc": "000_a.txt", "heading": "Fix OOM"}])
    assert sets.matching_expected(sets.entry_locations(merged), want) == {0}


def test_relevance_gains_credit_each_expected_entry_once():
    want = [{"doc": "000_a.txt", "heading": "Fix OOM"}, {"doc": "000_a.txt", "heading": "Lower batch"}]
    ranked = [entry(heading="Other"), entry(part=1), entry(part=2), entry(heading="Lower batch")]
    assert sets.relevance_gains([sets.entry_locations(e) for e in ranked], want) == [0, 1, 0, 1]
    assert sets.distinct_expected(want + [{"doc": "000_a.txt", "heading": "fix  oom"}]) == 2


# --- the harness on a fake Helper ----------------------------------------------------------


ITEMS = [
    {"id": "a1", "split": "dev", "query": "oom in rollout", "kind": "error", "lang": "en",
     "expected": [{"doc": "000_a.txt", "heading": "Fix OOM"}]},
    {"id": "a2", "split": "test", "query": "显存不足", "kind": "question", "lang": "zh",
     "expected": [{"doc": "000_a.txt", "heading": "Fix OOM"}]},
    {"id": "a3", "split": "test", "query": "ray hangs", "kind": "traceback", "lang": "en",
     "expected": [{"doc": "001_b.txt", "heading": "Ray 卡住"}]},
    {"id": "u1", "split": "dev", "query": "best pizza", "kind": "unanswerable", "lang": "en", "expected": []},
    {"id": "u2", "query": "weather", "kind": "unanswerable", "lang": "en", "expected": []},
    {"id": "bad", "split": "test", "query": "!!!", "kind": "error", "lang": "en",
     "expected": [{"doc": "000_a.txt", "heading": "Fix OOM"}]},
]

OOM, RAY, OTHER = entry(), entry(doc="001_b.txt", heading="Ray 卡住", lang="zh"), entry(heading="Other")
# query -> (ranked entries, abstained, confidence), the same in every mode except where noted
ANSWERS = {
    "oom in rollout": ([OOM, OTHER], False, 0.8),
    "显存不足": ([OTHER, OOM], False, 0.5),
    "ray hangs": ([OTHER, OOM], True, 0.2),
    "best pizza": ([OTHER], True, 0.1),
    "weather": ([OTHER], False, 0.45),
}


@dataclass
class FakeHelper:
    entries: list = field(default_factory=lambda: [OOM, RAY, OTHER])
    calls: list = field(default_factory=list)

    def retrieve(self, query, k=10, *, framework=None, collection=None, lang=None, mode="hybrid"):
        self.calls.append((query, mode, collection))
        if query not in ANSWERS:
            raise QueryError("nothing searchable")
        ranked, abstained, confidence = ANSWERS[query]
        if mode == "lexical" and query == "显存不足":  # lexical cannot cross languages
            ranked = [OTHER]
        hits = [Hit(rank=i, score=1 / i, entry=e) for i, e in enumerate(ranked[:k], start=1)]
        return SimpleNamespace(hits=hits, abstained=abstained, confidence=confidence, weak=False)


@pytest.fixture
def eval_file(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(json.dumps(i, ensure_ascii=False) for i in ITEMS) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def result(eval_file):
    return harness.run_eval(eval_file, helper=FakeHelper())


def test_load_eval_set_filters_splits_and_keeps_split_less_items(eval_file):
    assert [i.id for i in sets.load_eval_set(eval_file, split="dev")] == ["a1", "u1", "u2"]
    assert [i.id for i in sets.load_eval_set(eval_file, split="test")] == ["a2", "a3", "u2", "bad"]
    assert len(sets.load_eval_set(eval_file)) == len(ITEMS)


def test_load_eval_set_names_the_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "x", "query": "q", "expected": []}\n{"id": "y"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=":2:"):
        sets.load_eval_set(path)


def test_run_eval_metrics_by_mode(result):
    hybrid = result.metrics("hybrid")
    assert (hybrid["n"], hybrid["n_answerable"], hybrid["n_unanswerable"]) == (6, 4, 2)
    # answerable rankings: a1 rank 1, a2 rank 2, a3 none, bad (unsearchable) none
    assert hybrid["recall@1"] == pytest.approx(1 / 4)
    assert hybrid["recall@3"] == pytest.approx(2 / 4)
    assert hybrid["mrr@10"] == pytest.approx((1 + 0.5) / 4)
    # abstentions: a3 (wrong), u1 (right), bad (wrong: error counts as abstained); u2 answered
    assert hybrid["abstention_precision"] == pytest.approx(1 / 3)
    assert hybrid["abstention_recall"] == pytest.approx(1 / 2)
    assert hybrid["wrongly_abstained"] == pytest.approx(2 / 4)
    assert hybrid["answered_correctly"] == pytest.approx(1 / 4)
    assert hybrid["correct"] == pytest.approx(2 / 6)  # a1 answered right, u1 abstained right
    assert hybrid["errors"] == 1
    assert result.metrics("lexical")["recall@3"] == pytest.approx(1 / 4)


def test_breakdowns_by_doc_lang_kind_and_cross_lingual(result):
    by_doc = result.breakdown("doc")
    assert set(by_doc) == {"000_a.txt", "001_b.txt", "(unanswerable)"}
    assert by_doc["000_a.txt"]["n"] == 3
    assert result.breakdown("lang")["zh"]["recall@3"] == 1.0
    assert set(result.breakdown("kind")) == {"error", "question", "traceback", "unanswerable"}
    cross = result.breakdown("crosslingual")
    # a2 (zh query, en entry) and a3 (en query, zh entry) are cross-lingual
    assert cross["cross-lingual"]["n"] == 2 and cross["same-language"]["n"] == 2


def test_documents_with_the_same_file_name_get_rows_of_their_own(tmp_path):
    items = [{"id": f"p{i}", "query": "oom in rollout", "expected": [{"doc": doc, "heading": "Fix OOM"}]}
             for i, doc in enumerate(["rlinf/faq.rst", "verl/faq.rst", "verl/faq.rst"])]
    path = tmp_path / "pages.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    by_doc = harness.run_eval(path, helper=FakeHelper()).breakdown("doc")
    assert {doc: row["n"] for doc, row in by_doc.items()} == {"rlinf/faq.rst": 1, "verl/faq.rst": 2}


def test_misses_list_what_the_user_would_see_wrong(result):
    assert [r.item.id for r in result.misses("hybrid")] == ["a2", "a3", "u2", "bad"]


def test_to_dict_is_json_and_stable(result):
    data = json.loads(json.dumps(result.to_dict(), ensure_ascii=False))
    assert set(data) >= {"eval_file", "split", "created", "index", "embedder", "k", "modes", "metrics",
                         "breakdowns", "items", "warnings"}
    assert list(data["metrics"]) == ["lexical", "dense", "hybrid"]
    item = data["items"][1]
    assert item["id"] == "a2" and item["cross_lingual"] is True
    assert item["modes"]["hybrid"]["rank"] == 2
    assert item["modes"]["hybrid"]["top"][1]["relevant"] is True
    assert data["items"][-1]["modes"]["hybrid"]["error"] == "nothing searchable"


def test_collections_filter_reaches_the_helper_and_unknown_expected_entries_warn(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"id": "t", "query": "oom in rollout", "expected": [
        {"doc": "000_a.txt", "heading": "No such heading"}]}) + "\n", encoding="utf-8")
    helper = FakeHelper()
    result = harness.run_eval(path, helper=helper, collections=["seeds"], modes=("hybrid",))
    assert helper.calls == [("oom in rollout", "hybrid", ["seeds"])]
    assert result.warnings and "No such heading" in result.warnings[0]


def test_expected_documents_the_index_lacks_are_named_first_with_the_collection_that_holds_them(tmp_path,
                                                                                                  monkeypatch):
    corpus = tmp_path / "ingest"
    (corpus / "official" / "verl").mkdir(parents=True)
    (corpus / "official" / "verl" / "faq.rst").write_text("FAQ\n===\n", encoding="utf-8")
    monkeypatch.setenv("RLHELPER_CORPUS_DIR", str(corpus))
    path = tmp_path / "s.jsonl"
    items = [{"id": f"t{n}", "query": "oom in rollout", "expected": [{"doc": "verl/faq.rst", "heading": f"Q{n}"}]}
             for n in range(12)]
    items.append({"id": "typo", "query": "oom in rollout", "expected": [{"doc": "000_a.txt", "heading": "Fix OOOM"}]})
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    result = harness.run_eval(path, helper=FakeHelper(), modes=("hybrid",))
    note = result.warnings[0]
    assert note.startswith(harness.MISSING_DOCUMENTS) and "verl/faq.rst" in note and "--collection official" in note
    assert f"under {corpus}:" in note
    assert "000_a.txt" not in note  # that document is indexed: its item has a wrong heading, not a missing page
    table = report.format_table(result).splitlines()
    assert table[1] == f"warning: {note}"  # above the figures it explains
    assert sum(line.startswith("warning: ") for line in table) == 1 + report.WARNINGS_SHOWN
    assert table[-1].startswith("... and 3 more warnings")  # 13 item warnings, 10 shown


# --- calibration and baseline ------------------------------------------------------------------


def test_choose_threshold_maximises_correct_abstentions_within_the_budget():
    answerable = [0.9, 0.8, 0.7, 0.6, 0.55] * 4  # 20 items: 1 may be abstained (5 %)
    unanswerable = [0.1, 0.3, 0.5, 0.65]
    t = metrics.choose_threshold(answerable, unanswerable)
    assert all(c >= t for c in answerable)  # no room: abstaining on 0.55 costs 4 answerable items
    assert sum(c < t for c in unanswerable) == 3
    assert 0.5 < t < 0.55


def test_choose_threshold_uses_the_allowed_wrong_abstentions():
    answerable = [0.2] + [0.9] * 19
    t = metrics.choose_threshold(answerable, [0.4])
    assert 0.4 < t < 0.9


def test_regressions_flag_drops_beyond_tolerance_only():
    before = {"recall@1": 0.80, "mrr@10": 0.85, "abstention_precision": None}
    assert baseline.regressions({"recall@1": 0.79, "mrr@10": 0.90, "abstention_precision": 0.1}, before) == []
    bad = baseline.regressions({"recall@1": 0.77, "mrr@10": None}, before)
    assert len(bad) == 2 and bad[0].startswith("recall@1")


def test_baseline_of_holds_the_gated_metrics(result):
    base = baseline.baseline_of(result)
    assert set(base["metrics"]) == set(baseline.GATED_METRICS) and base["mode"] == "hybrid"


# --- output ---------------------------------------------------------------------------------


def test_format_table_shows_modes_and_breakdowns(result):
    text = report.format_table(result)
    assert "Recall@1" in text and "lexical" in text and "hybrid" in text
    assert "By document" in text and "Cross-lingual" in text
    # per group, the share of answerable items abstained on: a3 (000_a) abstained, a1 did not
    header = next(line for line in text.splitlines() if line.startswith("doc "))
    row = next(line for line in text.splitlines() if line.startswith("000_a.txt"))
    assert "wrongly abstained" in header
    column = header.index("wrongly abstained") + len("wrongly abstained")
    assert row[:column].rstrip().endswith(_fmt_slash(result.breakdown("doc", m)["000_a.txt"]["wrongly_abstained"]
                                                     for m in result.modes))


def _fmt_slash(values) -> str:
    return " / ".join(f"{v:.3f}" for v in values)


def test_write_report_writes_markdown_chart_and_json(result, tmp_path):
    paths = report.write_report(result, tmp_path / "reports")
    names = {p.name for p in paths}
    assert {"latest-all.md", "latest-all.png", "latest-all.json"} <= names
    md = (tmp_path / "reports" / "latest-all.md").read_text(encoding="utf-8")
    assert "## Misses (hybrid)" in md and "best pizza" not in md and "weather" in md
    assert "<details><summary>3 test-split misses: for reporting only" in md  # folded, with the warning
    assert md.index("weather") < md.index("<details>")  # split-less items are not test items
    assert "latest-all.png" in md
    png = tmp_path / "reports" / "latest-all.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dated = [p for p in paths if p.suffix == ".md" and not p.name.startswith("latest")]
    assert len(dated) == 1 and dated[0].exists()


def test_chart_adds_an_abstention_panel_only_for_sets_with_unanswerable_items(result, tmp_path):
    from matplotlib.image import imread

    answerable_only = tmp_path / "answerable.jsonl"
    answerable_only.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS if i["expected"]),
                               encoding="utf-8")
    without = harness.run_eval(answerable_only, helper=FakeHelper())
    assert without.metrics("hybrid")["n_unanswerable"] == 0 < result.metrics("hybrid")["n_unanswerable"]
    widths = {name: imread(report.write_chart(r, tmp_path / f"{name}.png")).shape[1]
              for name, r in (("with", result), ("without", without))}
    assert widths["with"] > widths["without"]


def test_thresholds_record_the_helpers_override(eval_file):
    helper = FakeHelper()
    helper.retriever = SimpleNamespace(threshold=0.4)
    result = harness.run_eval(eval_file, helper=helper, modes=("hybrid", "dense"))
    assert result.thresholds == {"hybrid": 0.4, "dense": 0.4}
    assert baseline.baseline_of(result)["abstain_threshold"] == 0.4
    assert "abstain below hybrid 0.400" in report.format_table(result)
