"""Reading documents, building entries (split, ids, urls, language) and merging duplicates."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rlhelper.errors import DocumentError
from rlhelper.ingest.entries import (
    NO_HEADINGS,
    build_entries,
    detect_lang,
    entry_id,
    merge_duplicates,
    read_document,
)
from rlhelper.ingest.parse import parse_with_warnings
from rlhelper.tokens import count_tokens

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "docs"


def build(text, fmt="markdown", max_tokens=400, **meta):
    return build_entries(text, collection="c", doc="guide.md", meta={"format": fmt, **meta}, max_tokens=max_tokens)


# --- read_document -------------------------------------------------------------

@pytest.mark.parametrize(
    "name, reason",
    [
        ("binary.png", "binary file (NUL byte at offset 8)"),
        ("control_noise.dat", "binary file"),
        ("latin1.md", "not UTF-8: invalid byte 0xe9 at byte offset 12 (line 3)"),
        ("utf16.md", "UTF-16"),
        ("empty.md", "empty file"),
        ("blank.md", "only whitespace"),
        ("missing.md", "cannot read"),
    ],
)
def test_unreadable_documents_raise_with_the_reason(name, reason):
    with pytest.raises(DocumentError, match=None) as info:
        read_document(FIXTURES / name)
    assert reason in str(info.value)
    assert name in str(info.value)


def test_bom_is_stripped_and_crlf_normalised_keeping_line_numbers():
    text = read_document(FIXTURES / "bom_crlf.md")
    assert text.startswith("# Title\n") and "\r" not in text
    entries, _ = build(text)
    sub = entries[1]
    assert (sub.heading, sub.line_start, sub.line_end) == ("Sub", 5, 7)


# --- build_entries -------------------------------------------------------------

def test_no_headings_gives_paragraph_groups_headed_by_the_title_with_a_warning():
    text = read_document(FIXTURES / "no_headings.txt")
    entries, warnings = build_entries(text, collection="c", doc="notes/no_headings.txt", meta={}, max_tokens=30)
    assert warnings == [NO_HEADINGS]
    assert [(e.line_start, e.line_end) for e in entries] == [(1, 2), (4, 5), (7, 7)]
    assert {e.heading for e in entries} == {"no_headings.txt"}
    assert [e.part for e in entries] == [1, 2, 3] and all(e.parts == 3 for e in entries)
    assert all(e.answerable for e in entries)


def test_unbalanced_fence_is_a_warning_naming_the_line():
    text = read_document(FIXTURES / "unbalanced_fence.md")
    entries, warnings = build_entries(text, collection="c", doc="unbalanced_fence.md", meta={})
    assert warnings == ["unbalanced code fence at line 7: treated as running to the end of the section"]
    assert [e.heading for e in entries] == ["Guide", "Install", "Configure"]
    install = entries[1]
    assert (install.line_start, install.line_end) == (3, 10)


def test_long_sections_split_between_blocks_never_inside_a_fence():
    paragraph = "Weight sync stalls when NCCL picks the wrong interface on a multi-homed node. " * 4
    code = "\n".join(f"export NCCL_SETTING_{i}=value_{i}" for i in range(40))
    text = f"## Fix\n\n{paragraph}\n\n```bash\n{code}\n```\n\n{paragraph}\n\n{paragraph}\n"
    lines = text.split("\n")
    entries, _ = build(text, max_tokens=120)
    assert len(entries) >= 3
    assert all(e.breadcrumb == ["Fix"] and e.anchor == "fix" for e in entries)
    assert [e.part for e in entries] == list(range(1, len(entries) + 1))
    assert all(e.parts == len(entries) for e in entries)
    assert entries[0].line_start == 1 and entries[-1].line_end == len(lines) - 1
    for e in entries:
        # Each part is exactly its lines of the document, and fences are balanced in it.
        assert e.text == "\n".join(lines[e.line_start - 1 : e.line_end])
        assert e.text.count("```") % 2 == 0
    # The code block alone exceeds the budget: it stays whole, in one part.
    [code_part] = [e for e in entries if "```bash" in e.text]
    assert code_part.text.count("export NCCL_SETTING_") == 40
    assert count_tokens(code_part.text) > 120
    assert all(count_tokens(e.text) <= 120 for e in entries if e is not code_part)


def test_a_table_stays_whole_and_the_heading_is_never_alone():
    rows = "\n".join(f"| symptom {i} | cause {i} | [fix](#fix-{i}) |" for i in range(60))
    text = f"## Jump to\n\n| Symptom | Cause | Fix |\n|---|---|---|\n{rows}\n"
    [entry], _ = build(text, max_tokens=100)
    assert (entry.line_start, entry.line_end) == (1, 64)
    assert entry.answerable is False  # rows link to this document's anchors


def test_entry_ids_are_stable_and_repeats_get_a_suffix():
    text = "## Fix\n\nA.\n\n## Fix\n\nB.\n"
    first, _ = build(text)
    again, _ = build(text)
    assert [e.id for e in first] == [e.id for e in again]
    base = entry_id("c", "guide.md", ["Fix"], 1)
    assert [e.id for e in first] == [base, f"{base}-2"]
    assert len(base) == 12 and int(base, 16) >= 0
    # Lines added above (even text before the first heading) do not change an id.
    shifted, _ = build("intro\n\n" + text)
    assert [e.id for e in shifted[1:]] == [base, f"{base}-2"]
    assert shifted[0].heading == "Fix" and shifted[0].id not in (base, f"{base}-2")


def test_urls_titles_and_defaults_from_meta():
    text = "# Guide\n\n## Fix it\n\nDo it.\n"
    meta = {"format": "markdown", "title": "The Guide", "framework": "verl", "repo": "o/r", "repo_path": "docs/g.md"}
    entries, _ = build_entries(text, collection="c", doc="g.md", meta=meta)
    assert entries[1].url == "https://github.com/o/r/blob/main/docs/g.md#fix-it"
    assert entries[1].doc_title == "The Guide" and entries[1].framework == "verl"
    entries, _ = build_entries(text, collection="c", doc="g.md", meta={**meta, "commit": "abc123"})
    assert entries[1].url == "https://github.com/o/r/blob/abc123/docs/g.md#fix-it"
    bare, _ = build_entries(text, collection="user", doc="notes/g.md", meta={})
    assert bare[1].url is None and bare[1].framework == "unknown" and bare[1].doc_title == "Guide"


def test_language_is_decided_per_entry_from_prose_not_code():
    text = "\n".join([
        "## 网络问题",
        "",
        "**现象：** Worker 节点无法连接到 Ray head（GCS）。",
        "",
        "```bash",
        "hostname -I | awk '{print $1}' && ray start --head --port 6379 --dashboard-host 0.0.0.0",
        "```",
        "",
        "## Network",
        "",
        "Workers cannot reach the head node; the 错误 text is quoted from the log.",
    ])
    entries, _ = build(text)
    assert [e.lang for e in entries] == ["zh", "en"]
    assert detect_lang("```\ncode only\n```", default="zh") == "zh"


def test_control_characters_are_stripped_from_entry_text():
    [entry], _ = build("## A\n\nbad \x1b[31mred\x07 text\n")
    assert entry.text == "## A\n\nbad [31mred text"


def test_special_token_strings_are_counted_as_text():
    assert count_tokens('pad_token: "<|endoftext|>"') > 3


MB = 1_000_000


@pytest.mark.parametrize(
    "text, fmt",
    [
        ("`" + " " * MB + "x", "markdown"),                       # one huge line
        (("# " + "[" * 499 + "](" * 250 + "\n") * 1000, "markdown"),  # bracket soup in headings
        (("# " + "`a" * 499 + "\n") * 1000, "webpage"),           # code-span soup in headings
        ("````py\n\n# h\n\n" * (MB // 14), "markdown"),          # 70k unclosed fences
        ((".. _x:\n" + "`a <u>`_ " * 100 + "\n") * (MB // 908), "rst"),  # targets everywhere
        ("a\n====\n\n" * (MB // 8), "rst"),                       # 125k titles
    ],
    ids=["huge-line", "brackets", "code-spans", "unclosed-fences", "targets", "titles"],
)
@pytest.mark.slow
def test_parsing_a_megabyte_of_pathological_text_takes_bounded_time(text, fmt):
    assert len(text) >= 0.9 * MB
    start = time.process_time()  # CPU time: other processes on a busy machine do not count
    sections, warnings = parse_with_warnings(text, fmt)
    assert time.process_time() - start < 20  # linear scanners: about 1-2 s here; quadratic would take hours
    assert sections and len(warnings) <= 11  # unclosed-fence warnings are capped


@pytest.mark.slow
def test_a_megabyte_line_is_split_and_counted_without_crashing():
    # tiktoken's pre-tokenizer overflows its regex stack on a megabyte of spaces.
    entries, _ = build("## A\n\n`" + " " * MB + "x\n")
    assert len(entries) == 1 and count_tokens(entries[0].text) > 1000


# --- merge_duplicates ----------------------------------------------------------

def test_identical_sections_merge_across_heading_levels_and_whitespace():
    one, _ = build_entries("# A\n\n## Timeout\n\nRaise   the\ntimeout.\n", collection="c", doc="a.md", meta={})
    two, _ = build_entries("# B\n\n### Timeout\n\nRaise the timeout.\n\n## Other\n\nx\n", collection="c", doc="b.md", meta={})
    merged = merge_duplicates(one + two)
    timeouts = [e for e in merged if e.heading == "Timeout"]
    assert len(timeouts) == 1 and timeouts[0].doc == "a.md"
    assert timeouts[0].also_at == [
        {"doc": "b.md", "doc_title": "B", "heading": "Timeout", "breadcrumb": ["B", "Timeout"], "line_start": 3, "line_end": 5, "url": None}
    ]
    assert one[1].also_at == []  # inputs are not modified
    # Empty category headings are never "duplicates" of each other.
    empty, _ = build_entries("# X\n\n## Cat\n", collection="c", doc="x.md", meta={})
    assert len(merge_duplicates(empty + empty)) == 4


def test_different_bodies_under_the_same_heading_stay_apart():
    one, _ = build("## Timeout\n\nRaise the timeout.\n")
    two, _ = build("## Timeout\n\nLower the timeout.\n")
    assert len(merge_duplicates(one + two)) == 2


LONG = "Symptoms: training hangs after rollout with timeout errors. Solutions: raise the sync interval, use colocated mode"


def test_a_near_identical_repeat_in_one_document_folds_into_the_fuller_copy():
    text = f"# Guide\n\n## Timeout\n\n{LONG}.\n\n## Other\n\nx\n\n## Timeout\n\n{LONG}, check InfiniBand.\n"
    entries, _ = build(text)
    merged = merge_duplicates(entries)
    timeouts = [e for e in merged if e.heading == "Timeout"]
    assert len(timeouts) == 1 and "InfiniBand" in timeouts[0].text  # the fuller, later copy is kept
    assert [a["line_start"] for a in timeouts[0].also_at] == [3]
    assert [e.heading for e in merged] == ["Guide", "Other", "Timeout"]  # document order is kept


def test_near_identical_sections_of_two_documents_stay_apart():
    one, _ = build_entries(f"## Timeout\n\n{LONG}.\n", collection="c", doc="a.md", meta={})
    two, _ = build_entries(f"## Timeout\n\n{LONG}, check InfiniBand.\n", collection="c", doc="b.md", meta={})
    assert len(merge_duplicates(one + two)) == 2


def test_short_sections_sharing_a_heading_never_fold():
    entries, _ = build("## Fix\n\nRestart ray.\n\n## Other\n\nx\n\n## Fix\n\nRestart ray now.\n")
    assert len([e for e in merge_duplicates(entries) if e.heading == "Fix"]) == 2


def test_seed_verl_faq_and_its_official_copy_merge():
    seeds = json.loads((REPO / "ingest/seeds/manifest.json").read_text())["documents"]
    official = json.loads((REPO / "ingest/official/manifest.json").read_text())["documents"]
    seed_meta = next(d for d in seeds if d["path"].startswith("004_"))
    official_meta = next(d for d in official if d["path"] == "verl/faq.rst")
    a, _ = build_entries(read_document(REPO / "ingest/seeds" / seed_meta["path"]), collection="seeds",
                         doc=seed_meta["path"], meta=seed_meta)
    b, _ = build_entries(read_document(REPO / "ingest/official/verl/faq.rst"), collection="official",
                         doc="verl/faq.rst", meta=official_meta)
    merged = merge_duplicates(a + b)
    wandb = [e for e in merged if e.heading == "How to set proxy only for wandb?"]
    assert len(wandb) == 1 and wandb[0].collection == "seeds"
    assert [x["doc"] for x in wandb[0].also_at] == ["verl/faq.rst"]
    assert len(merged) < len(a) + len(b)


def test_format_names_from_a_manifest():
    entries, _ = build("# A\n\nText.\n", fmt="MD")
    assert entries[0].heading == "A"
    with pytest.raises(DocumentError, match="unknown document format 'pdf'"):
        build("# A\n", fmt="pdf")
