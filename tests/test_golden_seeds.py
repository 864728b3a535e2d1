"""Golden tests: the entries of every seed document, checked against the files by hand.

Counts are (answerable, total) entries at the default budget of 400 tokens.
Line ranges were read off the files (`cat -n`): line_start is the heading
line, line_end the last non-blank body line before the next heading (thematic
breaks and rst adornments excluded).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from rlhelper.ingest.entries import build_entries, merge_duplicates, read_document

SEEDS = Path(__file__).resolve().parent.parent / "ingest" / "seeds"
MANIFEST = {d["path"][:3]: d for d in json.loads((SEEDS / "manifest.json").read_text())["documents"]}


@cache
def entries_of(key: str):
    meta = MANIFEST[key]
    entries, warnings = build_entries(read_document(SEEDS / meta["path"]), collection="seeds", doc=meta["path"], meta=meta)
    assert warnings == []
    return entries


def find(key: str, heading: str, part: int = 1):
    found = [e for e in entries_of(key) if e.heading == heading and e.part == part]
    assert len(found) == 1, f"{heading!r}: {len(found)} entries"
    return found[0]


@pytest.mark.parametrize(
    "key, answerable, total",
    [("000", 100, 130), ("001", 12, 17), ("002", 71, 100), ("003", 16, 23), ("004", 15, 19)],
)
def test_entry_counts(key, answerable, total):
    entries = entries_of(key)
    assert (sum(e.answerable for e in entries), len(entries)) == (answerable, total)


# (doc, heading, part) -> (breadcrumb below the document title, line_start, line_end, answerable)
SAMPLES = {
    # 000: Markdown; "## N." categories are bare headings, "---" rules end no section.
    ("000", "Quick Diagnosis", 1): ([], 7, 38, False),
    ("000", "1. Installation Issues", 1): ([], 42, 42, False),
    ("000", "Error: ModuleNotFoundError: No module named 'sglang'", 1): (["1. Installation Issues"], 44, 56, True),
    ("000", "Weight sync takes >10s", 1): (["4. Weight Sync Issues"], 278, 295, True),
    ("000", "Check GPU Status", 1): (["10. Debugging Commands"], 604, 608, True),
    ("000", "29. Getting Help", 1): ([], 1695, 1714, True),
    # 001: Chinese rst, "=" / "-" / "~" styles, underlines shorter and longer than titles.
    ("001", "常见问题", 1): (None, 1, 4, False),
    ("001", "断点调试方法", 1): ([], 6, 6, False),
    ("001", "使用 Ray 分布式调试器（推荐）", 1): (["断点调试方法"], 9, 45, True),
    ("001", "使用 Ray 分布式调试器（推荐）", 2): (["断点调试方法"], 47, 57, True),
    ("001", "RuntimeError: The MUJOCO_EGL_DEVICE_ID environment variable must be an integer between 0 and 0 (inclusive), got 1.", 1): (["渲染问题"], 95, 119, True),
    ("001", "无法连接 GCS（ip:port）", 1): (["网络问题"], 145, 161, True),
    ("001", "数值精度 / 推理后端", 1): (["CUDA 问题"], 215, 223, True),
    # 002: web capture; SKILL.md sections, then the companion files.
    ("002", "slime: LLM Post-Training Framework for RL Scaling", 1): (None, 86, 88, True),
    ("002", "Workflow 1: Standard GRPO Training", 1): ([], 172, 174, False),
    ("002", "Sample Object", 1): (["Skill Companion Files", "references/api-reference.md", "slime API Reference", "Core Data Structures"], 575, 577, True),
    ("002", "Sample Object", 2): (["Skill Companion Files", "references/api-reference.md", "slime API Reference", "Core Data Structures"], 579, 619, True),
    ("002", "references/troubleshooting.md", 1): (["Skill Companion Files"], 946, 946, False),
    ("002", "Issue: Checkpoint Loading Fails", 1): (["Skill Companion Files", "references/troubleshooting.md", "slime Troubleshooting Guide", "Common Issues and Solutions", "Checkpoint Issues"], 1260, 1282, True),
    ("002", "Constraint Reference", 1): (["Skill Companion Files", "references/troubleshooting.md", "slime Troubleshooting Guide"], 1320, 1328, True),
    # 003: Markdown without repository attribution.
    ("003", "Reward Hacking and Training Instability", 1): ([], 3, 3, False),
    ("003", "Reward increases but eval quality drops", 1): (["Reward Hacking and Training Instability"], 5, 28, True),
    ("003", "\"KeyError: 'prompt'\"", 1): (["Data Issues"], 146, 151, True),
    ("003", "Inconsistent behavior across nodes", 1): (["Multi-Node Issues"], 180, 186, True),
    # 004: rst with "=", "-", "^" styles; "Illegal memory access" is back at the "-" level.
    ("004", "Frequently Asked Questions", 1): (None, 1, 4, False),
    ("004", "\"Unable to register worker with raylet\"", 1): (["Ray related"], 15, 22, True),
    ("004", "NotImplementedError: TensorDict does not support membership checks with the in keyword.", 1): (["Install related"], 64, 99, True),
    ("004", "Illegal memory access", 1): ([], 102, 105, True),
    ("004", "Triton compile_module_from_src error", 2): ([], 119, 142, True),
}


@pytest.mark.parametrize("key, heading, part", list(SAMPLES), ids=[f"{k}-{h[:30]}-{p}" for k, h, p in SAMPLES])
def test_sampled_entries(key, heading, part):
    middle, line_start, line_end, answerable = SAMPLES[key, heading, part]
    entry = find(key, heading, part)
    title = entries_of(key)[0].breadcrumb[0]
    expected = [title] if middle is None else [title, *middle, heading]
    assert entry.breadcrumb == expected
    assert (entry.line_start, entry.line_end, entry.answerable) == (line_start, line_end, answerable)


def test_entry_text_is_the_cited_lines():
    lines = (SEEDS / MANIFEST["000"]["path"]).read_text(encoding="utf-8").split("\n")
    entry = find("000", "Error: ModuleNotFoundError: No module named 'sglang'")
    assert entry.text == "\n".join(lines[43:56])
    rst = find("004", "\"Unable to register worker with raylet\"")
    assert "^^^" not in rst.text and rst.text.startswith('"Unable to register worker with raylet"\n')


def test_markdown_anchors_are_github_slugs_and_every_jump_link_resolves():
    assert find("000", "1. Installation Issues").anchor == "1-installation-issues"
    assert find("000", "Weight sync takes >10s").anchor == "weight-sync-takes-10s"
    # The Quick Diagnosis table links to sections of the same page by slug.
    table = find("000", "Quick Diagnosis").text
    targets = set(re.findall(r"\]\(#([^)]+)\)", table))
    anchors = {e.anchor for e in entries_of("000")}
    assert len(targets) == 26 and targets <= anchors


def test_rst_anchors_are_docutils_ids():
    assert find("004", "Frequently Asked Questions").anchor == "frequently-asked-questions"
    assert find("004", "\"Unable to register worker with raylet\"").anchor == "unable-to-register-worker-with-raylet"
    assert find("004", "Triton compile_module_from_src error").anchor == "triton-compile-module-from-src-error"
    assert find("004", "NotImplementedError: TensorDict does not support membership checks with the in keyword.").anchor == (
        "notimplementederror-tensordict-does-not-support-membership-checks-with-the-in-keyword"
    )
    # Chinese-only titles get Sphinx's id1, id2, ... in document order.
    assert [find("001", h).anchor for h in ["常见问题", "断点调试方法", "渲染问题", "网络问题", "数值精度 / 推理后端"]] == [
        "id1", "id2", "id3", "id4", "id5",
    ]
    assert find("001", "使用 Ray 分布式调试器（推荐）").anchor == "ray"


def test_urls():
    assert find("004", "Illegal memory access").url == (
        "https://github.com/volcengine/verl/blob/1b4af4440fc491c1c940068fc84e0be5dc42f314/docs/faq/faq.rst#illegal-memory-access"
    )
    assert find("003", "Inconsistent behavior across nodes").url is None
    # A companion file links to its own file, next to SKILL.md in the repository.
    crash = [e for e in entries_of("002") if e.heading == "Issue: SGLang Engine Crash"]
    assert [e.url for e in crash] == [
        "https://github.com/Orchestra-Research/AI-Research-SKILLs/blob/main/06-post-training/slime/SKILL.md#issue-sglang-engine-crash",
        "https://github.com/Orchestra-Research/AI-Research-SKILLs/blob/main/06-post-training/slime/references/troubleshooting.md#issue-sglang-engine-crash",
    ]


def test_slime_page_chrome_and_footer_are_not_entries():
    entries = entries_of("002")
    assert min(e.line_start for e in entries) == 86  # lines 1-84: chrome and front matter
    assert max(e.line_end for e in entries) == 1334  # line 1338: "slime-rl-training | SkillHub"
    assert not any("SkillHub" in e.text for e in entries)


def test_slime_repeats_fold_into_their_fullest_copy():
    # SKILL.md and references/*.md repeat sections, and each repeat adds or changes a
    # line (Weight Sync Timeout lists two fixes in SKILL.md, three in the reference):
    # near-identical copies in one document fold into the fullest, listing the others.
    entries = entries_of("002")
    assert len([e for e in entries if e.heading == "Issue: Weight Sync Timeout"]) == 2
    merged = merge_duplicates(entries)
    assert len(merged) == len(entries) - 10
    folded = {e.line_start: (e.heading, [a["line_start"] for a in e.also_at]) for e in merged if e.also_at}
    assert folded == {
        477: ("Supported Models", [927]),
        533: ("Resources", [937, 1330]),
        553: ("Architecture Overview", [110]),
        721: ("Buffered Data Source (Off-Policy)", [397]),
        899: ("Async-Specific Parameters", [265]),  # the copy with "Colocated mode is NOT supported"
        955: ("Issue: SGLang Engine Crash", [417]),
        999: ("Issue: Weight Sync Timeout", [433]),
        1041: ("Issue: OOM During Training", [446]),
        1090: ("Issue: Slow Data Loading", [462]),
    }
    # Sections that only share a heading stay apart (the parts of a long section, too).
    assert {e.heading for e in merged} == {e.heading for e in entries}


def test_languages():
    assert {e.lang for e in entries_of("001")} == {"zh"}
    assert {e.lang for k in ("000", "002", "003", "004") for e in entries_of(k)} == {"en"}
