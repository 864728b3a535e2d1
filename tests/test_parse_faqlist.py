"""A FAQ written as one list of bold questions under a heading: one sub-section per question.

Positive cases come from the real slime pages (English and Chinese); negative
cases are the list shapes that must stay whole: step lists, option bullets,
lists with one bold question only, bold titles that are not questions, nested
lists, lists followed by more text. Line numbers were read off the files with
`cat -n`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rlhelper.ingest.entries import build_entries, read_document
from rlhelper.ingest.parse import parse_document, parse_with_warnings

OFFICIAL = Path(__file__).resolve().parent.parent / "ingest" / "official"
MANIFEST = {d["path"]: d for d in json.loads((OFFICIAL / "manifest.json").read_text())["documents"]}


def crumbs(sections):
    return [s.breadcrumb for s in sections]


def official_sections(path: str):
    return parse_document(read_document(OFFICIAL / path), MANIFEST[path]["format"])


def official_entries(path: str, max_tokens: int = 400):
    entries, warnings = build_entries(
        read_document(OFFICIAL / path), collection="official", doc=path, meta=MANIFEST[path], max_tokens=max_tokens
    )
    assert warnings == []
    return entries


# --- the real slime FAQ pages ------------------------------------------------

SLIME_EN_RANGES = [(3, 7), (9, 20), (22, 26), (28, 30), (32, 34), (36, 40), (42, 44),
                   (46, 48), (50, 52), (54, 56), (58, 60), (62, 64), (66, 68)]


def test_slime_qa_gets_one_section_per_question_under_the_faq_heading():
    sections = official_sections("slime/qa.md")
    assert len(sections) == 14
    faq, questions = sections[0], sections[1:]
    # The heading alone is left: a bare category heading, never an answer.
    assert (faq.breadcrumb, faq.line_start, faq.line_end, faq.answerable) == (["FAQ"], 1, 1, False)
    assert [(s.line_start, s.line_end) for s in questions] == SLIME_EN_RANGES
    # each question's anchor is its line: the page's own anchor (#faq) left the reader among thirteen (issue 36)
    assert all(s.answerable and s.anchor == f"L{s.line_start}" and len(s.breadcrumb) == 2 for s in questions)
    assert questions[1].breadcrumb == ["FAQ", "Why is my task stuck on the Ray submission page?"]
    # Markup is removed as a reader sees it; the list number is dropped.
    assert questions[2].heading == (
        "Why did I encounter an Out-of-Memory (OOM) error during training? What is max_tokens_per_gpu for?"
    )
    # Symptom-style items of the same list are entries too.
    assert [s.heading for s in questions[-3:]] == [
        "Sglang shows an an illegal memory access was encountered error.",
        "A JSONDecodeError occurs related to torch compile/inductor.",
        "Gradient becomes NaN or Inf during training.",
    ]


def test_a_question_keeps_its_nested_list_and_its_text_verbatim():
    ray = official_sections("slime/qa.md")[2]
    lines = ray.text.split("\n")
    assert lines[0] == "2.  **Why is my task stuck on the Ray submission page?**"
    assert lines[-1].strip().startswith("* Whether the total number of GPUs")
    assert "--colocate" in ray.text and "rollout_num_gpus" in ray.text
    assert "garbled" not in ray.text and "Out-of-Memory" not in ray.text


def test_slime_zh_qa_items_all_numbered_one_with_full_width_question_marks():
    sections = official_sections("slime/zh/qa.md")
    assert len(sections) == 14
    assert sections[0].breadcrumb == ["常见 Q&A"] and not sections[0].answerable
    questions = sections[1:]
    assert [(s.line_start, s.line_end) for s in questions] == SLIME_EN_RANGES
    assert all(s.anchor == f"L{s.line_start}" for s in questions)
    assert questions[1].breadcrumb == ["常见 Q&A", "为什么我的任务一直卡在 ray 提交的页面上？"]
    # Its nested "- " bullets sit at the item's content column: they stay inside.
    assert "`--colocate`" in questions[1].text
    assert questions[-1].heading == "训练出现 grad NaN 或者 Inf 的情况"


def test_slime_debug_page_bold_issue_titles_without_questions_stay_one_section():
    # "1. **MoE router weights ... become all zeros**" ... "4. **How to diagnose**":
    # bold titles, but not a FAQ; the section keeps its four items together.
    headings = [s.heading for s in official_sections("slime/debug.md")]
    assert "How to diagnose" not in headings and "Missing safetensors shards" not in headings
    assert "INT4 / Compressed-Tensors Quantization Checkpoint Issues" in headings


# --- entries -----------------------------------------------------------------

def test_slime_qa_entries_one_per_question_with_exact_ranges_and_the_page_anchor():
    entries = official_entries("slime/qa.md")
    questions = [e for e in entries if e.answerable]
    assert len(entries) == 14 and len(questions) == 13
    assert [(e.line_start, e.line_end) for e in questions] == SLIME_EN_RANGES
    assert all((e.part, e.parts) == (1, 1) for e in questions)
    assert len({e.id for e in entries}) == 14
    [ray] = [e for e in questions if e.heading == "Why is my task stuck on the Ray submission page?"]
    assert ray.breadcrumb == ["FAQ", "Why is my task stuck on the Ray submission page?"]
    assert (ray.line_start, ray.line_end) == (9, 20)
    assert ray.url == (
        "https://github.com/THUDM/slime/blob/624b824a898ab0ec1fcb4d373004c7f3852bf515/docs/en/get_started/qa.md?plain=1#L9"
    )
    lines = read_document(OFFICIAL / "slime/qa.md").split("\n")
    assert ray.text == "\n".join(lines[8:20])


def test_slime_zh_qa_entries_are_chinese_and_link_the_page_heading():
    entries = official_entries("slime/zh/qa.md")
    questions = [e for e in entries if e.answerable]
    assert len(questions) == 13
    assert {e.lang for e in questions} == {"zh"}
    assert all(e.url.endswith(f"?plain=1#L{e.line_start}") for e in questions)


def test_a_question_over_the_budget_is_split_by_the_budget_rule():
    entries = official_entries("slime/qa.md", max_tokens=60)
    parts = [e for e in entries if e.heading == "Why is my task stuck on the Ray submission page?"]
    assert len(parts) > 1
    assert [e.part for e in parts] == list(range(1, len(parts) + 1))
    assert parts[0].line_start == 9 and parts[-1].line_end == 20
    assert all(a.line_end < b.line_start for a, b in zip(parts, parts[1:], strict=False))
    assert {e.url for e in parts} == {parts[0].url}


# --- the rule, case by case ---------------------------------------------------

def md(*lines):
    return parse_document("\n".join(lines), "markdown")


def test_tight_list_and_bullets_split_and_lead_text_stays_with_the_heading():
    sections = md(
        "## Questions",        # 1
        "",
        "Asked often:",        # 3
        "",
        "- **Why A?**",        # 5
        "  Because.",
        "- **Why B?**",        # 7
        "  Because.",
    )
    assert crumbs(sections) == [["Questions"], ["Questions", "Why A?"], ["Questions", "Why B?"]]
    assert [(s.line_start, s.line_end) for s in sections] == [(1, 3), (5, 6), (7, 8)]
    assert not sections[0].answerable  # a short lead of a section with children


def test_the_next_heading_closes_the_questions_at_any_level():
    sections = md(
        "# Guide",
        "## FAQ",
        "1. **Why A?**",
        "",
        "   a",
        "",
        "2. **Why B?**",
        "",
        "   b",
        "### Deeper",
        "x",
        "## Other",
        "y",
    )
    assert crumbs(sections) == [
        ["Guide"], ["Guide", "FAQ"], ["Guide", "FAQ", "Why A?"], ["Guide", "FAQ", "Why B?"],
        ["Guide", "FAQ", "Deeper"], ["Guide", "Other"],
    ]
    assert [s.anchor for s in sections] == ["guide", "faq", f"L{sections[2].line_start}", f"L{sections[3].line_start}",
                                            "deeper", "other"]


def test_an_html_comment_between_questions_is_invisible_and_keeps_the_list():
    sections = md("# FAQ", "", "- **Why A?**", "", "<!-- TODO: reword -->", "", "- **Why B?**")
    assert crumbs(sections) == [["FAQ"], ["FAQ", "Why A?"], ["FAQ", "Why B?"]]
    assert sections[1].line_end == 3  # the hidden comment ends nothing and belongs to no text


def test_a_fence_inside_an_item_stays_in_it_and_its_lines_are_not_items():
    sections = md(
        "# FAQ",
        "",
        "1. **Why does it hang?**",   # 3
        "",
        "   ```bash",
        "# a shell comment",
        "1. **Not a question?**",
        "",
        "- **Nor this?**",
        "   ```",                      # 10
        "",
        "2. **How do I fix it?**",    # 12
        "",
        "   Restart.",
    )
    assert crumbs(sections) == [["FAQ"], ["FAQ", "Why does it hang?"], ["FAQ", "How do I fix it?"]]
    assert (sections[1].line_start, sections[1].line_end) == (3, 10)
    assert "# a shell comment" in sections[1].text and "```bash" in sections[1].text


@pytest.mark.parametrize(
    "body",
    [
        # Steps with bold names: no question.
        ["1. **Install**", "", "   pip install x", "", "2. **Configure**", "", "   edit y", "", "3. **Run**", "", "   go"],
        # Option bullets: bold, then text on the same line.
        ["- **--colocate?**: share GPUs", "- **--offload?**: move to CPU"],
        # One bold question among plain items.
        ["1. **Why does it fail?**", "", "   a", "", "2. Check the logs.", "", "3. Restart."],
        # Every item must open with a bold title, even when most are questions.
        ["1. **Why A?**", "", "   a", "", "2. **Why B?**", "", "   b", "", "3. Restart."],
        # Bold titles, only half of them questions.
        ["1. **Why A?**", "", "   a", "", "2. **Fix B**", "", "   b"],
        # A single question.
        ["1. **Why A?**", "", "   a"],
        # Nested bold questions under plain top-level steps.
        ["1. Check:", "   - **Why A?**", "   - **Why B?**", "2. Restart:", "   - **Why C?**"],
        # The list does not end the section: the last paragraph would lose its heading.
        ["1. **Why A?**", "", "   a", "", "2. **Why B?**", "", "   b", "", "See also the guide."],
        # Another marker starts another list.
        ["1. **Why A?**", "", "   a", "", "- **Why B?**", "", "  b"],
        # A fence in column 0 after a blank line ends the list (CommonMark).
        ["1. **Why A?**", "", "```", "code", "```", "", "2. **Why B?**", "", "   b"],
        ["1. **Why A?**", "```", "code", "```", "", "2. **Why B?**", "", "   b"],
        # Bold spans that do not make the whole line.
        ["1. **Why** A?", "", "2. **Why** B?"],
        ["1. **Why A?** and **B?**", "", "2. **Why C?** and **D?**"],
    ],
    ids=["steps", "options", "one-bold", "one-plain", "half", "single", "nested", "text-after", "two-lists",
         "column-0-fence", "column-0-fence-tight", "partly-bold", "two-bold-spans"],
)
def test_lists_that_are_not_a_faq_stay_whole(body):
    sections = md("# Page", "", *body)
    assert crumbs(sections) == [["Page"]]
    assert sections[0].line_end == 2 + len(body)


def test_rst_enumerated_faq_list_splits_under_the_title_anchor():
    text = "\n".join([
        "Common Questions",     # 1
        "================",
        "",
        "1. **Why is ``ray`` stuck?**",   # 4
        "",
        "   Check the GPUs::",
        "",
        "      1. **not an item?**",
        "",
        "2. **How do I resume?**",   # 10
        "",
        "   Set ``--load``.",
    ])
    sections = parse_document(text, "rst")
    assert crumbs(sections) == [
        ["Common Questions"], ["Common Questions", "Why is ray stuck?"], ["Common Questions", "How do I resume?"],
    ]
    assert [(s.line_start, s.line_end, s.anchor) for s in sections] == [
        (1, 1, "common-questions"), (4, 8, "L4"), (10, 12, "L10"),
    ]


def test_rst_literal_block_shaped_like_a_faq_stays_whole():
    text = "\n".join([
        "Example",
        "=======",
        "",
        "A FAQ page looks like this::",
        "",
        "   1. **Why A?**",
        "",
        "   2. **Why B?**",
    ])
    assert crumbs(parse_document(text, "rst")) == [["Example"]]


def test_rst_bold_bullets_with_inline_fixes_stay_whole():
    # verl's install.rst "Troubleshooting": bold error, an em dash, the fix.
    headings = [s.heading for s in official_sections("verl/install.rst")]
    assert "Troubleshooting" in headings and "Start over" not in headings


MB = 1_000_000


@pytest.mark.parametrize(
    "text, count",
    [
        ("# FAQ\n\n" + "1. **Why?**\n\n   a\n\n" * (MB // 20), 1 + MB // 20),     # 50k questions
        ("# FAQ\n\n" + "1. **Why?**\n   a\n" * (MB // 17) + "\nEnd.\n", 1),       # fails at the very end
        (("## Q\n\n" + "- **a?**\n" * 50) * (MB // 500), 51 * (MB // 500)),     # 2k short FAQ lists
    ],
    ids=["questions", "late-failure", "many-lists"],
)
@pytest.mark.slow
def test_a_megabyte_of_question_lists_parses_in_bounded_time(text, count):
    assert len(text) >= 0.9 * MB
    start = time.process_time()  # CPU time: other processes on a busy machine do not count
    sections, _ = parse_with_warnings(text, "markdown")
    assert time.process_time() - start < 20  # one pass per section body: 1-3 s here
    assert len(sections) == count
