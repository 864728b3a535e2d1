"""twins.py over the real corpora: the same section in another language or version of a page is
linked at ingest, shown once in results (in the asker's language) and named in the answer."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_cli import ask_json, cli_env, rlhelper  # noqa: F401

from rlhelper import Helper
from rlhelper.ingest import twins
from rlhelper.measure import sets
from rlhelper.schema import Entry

GCS_ZH = ("001_4943b08643600789.txt", "无法连接 GCS（ip:port）")
GCS_EN = ("rlinf/faq.rst", "Cannot Connect to GCS at ip:port")
BATCH_EN = ("slime/qa.md", "How is the batch size calculated?")
BATCH_ZH = ("slime/zh/qa.md", "batch size 是如何计算的？")
RESUME_EN = ("slime/qa.md", "How do I resume training?")  # translated freely: no identifier in common
RESUME_ZH = ("slime/zh/qa.md", "如何续训？")


@pytest.fixture(scope="module")
def full(full_index) -> Helper:
    return Helper.load(full_index)


def entry_at(helper: Helper, doc: str, heading: str) -> Entry:
    return next(e for e in helper.entries if e.doc == doc and e.heading == heading)


def twin_places(e: Entry) -> set[tuple[str, str]]:
    return {(t["doc"], t["heading"]) for t in e.twins}


def test_translated_sections_are_linked_both_ways(full):
    assert GCS_EN in twin_places(entry_at(full, *GCS_ZH))
    assert GCS_ZH in twin_places(entry_at(full, *GCS_EN))
    assert BATCH_ZH in twin_places(entry_at(full, *BATCH_EN))
    assert RESUME_ZH in twin_places(entry_at(full, *RESUME_EN))
    for e in full.entries:
        for t in e.twins:
            assert t["doc"] != e.doc  # another document, never a section of its own
            back = full.entry(t["entry_id"])
            assert (e.doc, e.heading) in twin_places(back) and back.framework == e.framework


def test_the_seed_documents_have_no_twins_among_themselves(seeds_index):
    assert not any(e.twins for e in Helper.load(seeds_index).entries)


def test_one_similar_heading_does_not_make_two_pages_twins():
    def entry(doc, heading, text, lang="en"):
        return Entry(id=f"{doc}#{heading}", collection="c", doc=doc, doc_title=doc, framework="verl", lang=lang,
                     breadcrumb=[heading], heading=heading, anchor=heading, line_start=1, line_end=2, text=text)

    pages = [entry("a.md", "Debugging", "use ray debug"), entry("a.md", "OOM", "lower micro_batch_size 4"),
             entry("b.md", "Debugging Tips", "use ray debug"), entry("b.md", "Slurm", "sbatch --nodes 2 job.sh")]
    vectors = np.eye(4, dtype=np.float32)
    vectors[2] = vectors[0]  # the one matching pair: same text, same vector
    assert twins.link(pages, vectors) == 0 and not any(e.twins for e in pages)
    pages[3] = entry("b.md", "Out of memory", "lower micro_batch_size 4")
    vectors[3] = vectors[1]
    assert twins.link(pages, vectors) == 2  # two sections in order: twin pages
    assert twin_places(pages[0]) == {("b.md", "Debugging Tips")}


def test_a_weaker_pair_is_linked_only_in_order_between_twin_sections():
    """Page a holds sections A, w, C, D; page b the same, with w's copy only weakly similar
    (above GAP_MATCH, below MATCH): linked where it sits between A and C, not after C."""
    def entry(doc, n):
        return Entry(id=f"{doc}#{n}", collection="c", doc=doc, doc_title=doc, framework="slime", lang="en",
                     breadcrumb=[str(n)], heading=str(n), anchor=str(n), line_start=n, line_end=n, text=str(n))

    weak = np.sqrt(2 * twins.GAP_MATCH + 0.02)  # the cosine that puts the pair just above GAP_MATCH
    unit = np.eye(6, dtype=np.float32)
    a, c, d = unit[0], unit[2], unit[3]
    w_in_a = weak * unit[1] + np.sqrt(1 - weak**2) * unit[4]
    w_in_b = weak * unit[1] + np.sqrt(1 - weak**2) * unit[5]

    def linked(page_b: list) -> list[Entry]:
        pages = [entry("a.md", n) for n in range(4)] + [entry("b.md", n) for n in range(4)]
        assert twins.link(pages, np.array([a, w_in_a, c, d, *page_b], dtype=np.float32))
        return pages

    in_order = linked([a, w_in_b, c, d])
    assert twin_places(in_order[1]) == {("b.md", "1")}
    out_of_order = linked([a, c, w_in_b, d])
    assert not out_of_order[1].twins and twin_places(out_of_order[2]) == {("b.md", "1")}  # C still linked


def test_a_section_is_shown_once_in_the_askers_language(full):
    english = full.ask("Failed to connect to GCS at address 10.0.0.3:6379 within 5 seconds")
    assert (english.hits[0].entry.doc, english.hits[0].entry.heading) == GCS_EN
    assert english.citations[0].twins[0]["doc"] == GCS_ZH[0] and english.citations[0].lang == "en"
    chinese = full.ask("多机训练时 worker 节点连不上 head 节点的 GCS 地址怎么办")
    shown = [(h.entry.doc, h.entry.heading) for h in chinese.hits]
    assert GCS_ZH in shown and GCS_EN not in shown
    for answer in (english, chinese):
        places = [(h.entry.doc, h.entry.heading) for h in answer.hits]
        assert not any(twin_places(h.entry) & set(places) for h in answer.hits)  # never both copies


def test_a_language_filter_keeps_the_copy_it_allows(full):
    answer = full.ask("Failed to connect to GCS at address 10.0.0.3:6379 within 5 seconds", lang="zh")
    assert (answer.hits[0].entry.doc, answer.hits[0].entry.heading) == GCS_ZH


def test_a_follow_up_does_not_offer_the_twin_of_what_it_quoted(full):
    first = full.ask("Failed to connect to GCS at address 10.0.0.3:6379 within 5 seconds")
    follow = full.ask("and in chinese?", previous=first)
    assert GCS_ZH not in {(h.entry.doc, h.entry.heading) for h in follow.hits}


def test_json_and_text_name_the_twin(full_index):
    answer = ask_json(full_index, "Failed to connect to GCS at address 10.0.0.3:6379 within 5 seconds")
    [twin] = answer["citations"][0]["twins"]
    assert (twin["doc"], twin["heading"], twin["lang"]) == (*GCS_ZH, "zh")
    assert answer["hits"][0]["twins"] == answer["citations"][0]["twins"]
    assert json.dumps(twin, ensure_ascii=False)
    text = rlhelper("ask", "--index", str(full_index), "Failed to connect to GCS at address 10.0.0.3:6379").stdout
    assert f"Also in 中文: {GCS_ZH[1]}  " in text and GCS_ZH[0] not in text  # a seed by its title, not its file


def test_the_eval_counts_a_hit_on_a_twin(full):
    shown = entry_at(full, *GCS_EN)
    gains = sets.relevance_gains([sets.entry_locations(shown)], [{"doc": GCS_ZH[0], "heading": GCS_ZH[1]}])
    assert gains == [1]


def test_info_lists_the_twin_pages(full_index, seeds_index):
    from rlhelper.ingest.status import index_info, render_info

    info = index_info(full_index)
    assert info.twins["001_4943b08643600789.txt ~ rlinf/faq.rst"] >= 10
    assert "001_4943b08643600789.txt ~ rlinf/faq.rst" in render_info(info)
    assert index_info(seeds_index).twins == {} and "twins" not in render_info(index_info(seeds_index))
