"""Markdown/MDX parsing: headings vs code fences, tables, setext, front matter, slugs."""

from __future__ import annotations

from rlhelper.ingest.parse import parse_document, parse_with_warnings
from rlhelper.ingest.parse.inline import GithubSlugger, github_slug, markdown_heading_text


def crumbs(sections):
    return [s.breadcrumb for s in sections]


def by_heading(sections, heading):
    [found] = [s for s in sections if s.heading == heading]
    return found


def test_hash_lines_inside_backtick_and_tilde_fences_are_not_headings():
    text = "\n".join([
        "# Guide",            # 1
        "",
        "## Setup",           # 3
        "",
        "```bash",            # 5
        "# not a heading",
        "## nor this",
        "```",                # 8
        "",
        "~~~python",          # 10
        "# still code",
        "~~~",                # 12
        "",
        "## Next",            # 14
    ])
    sections = parse_document(text, "markdown")
    assert crumbs(sections) == [["Guide"], ["Guide", "Setup"], ["Guide", "Next"]]
    setup = by_heading(sections, "Setup")
    assert (setup.line_start, setup.line_end) == (3, 12)
    assert "# not a heading" in setup.text and "# still code" in setup.text


def test_a_fence_closes_only_with_the_same_character_and_at_least_its_length():
    text = "\n".join([
        "## A",
        "````markdown",
        "```python",          # shorter: content, not a closer
        "# inside",
        "```",
        "~~~",                # other character: content
        "# still inside",
        "````",               # the real closer
        "## B",
    ])
    sections, warnings = parse_with_warnings(text, "markdown")
    assert [s.heading for s in sections] == ["A", "B"]
    assert (sections[0].line_start, sections[0].line_end) == (1, 8)
    assert warnings == []


def test_backtick_fence_info_with_a_backtick_is_not_a_fence():
    # CommonMark: "```a`b" is inline code, so the heading after it is real.
    sections = parse_document("## A\n```a`b\n## B\n", "markdown")
    assert [s.heading for s in sections] == ["A", "B"]


def test_indented_fences_in_list_items_hide_their_hash_lines():
    text = "## Fix\n\n1. Check logs:\n   ```bash\n   # grep the worker log\n   ```\n2. Retry\n"
    sections = parse_document(text, "markdown")
    assert [s.heading for s in sections] == ["Fix"]
    assert sections[0].line_end == 7


def test_unclosed_fence_ends_at_the_next_lone_heading_with_a_warning():
    text = "\n".join([
        "# Guide",        # 1
        "",
        "## Install",     # 3
        "",
        "```bash",        # 5: never closed
        "pip install x",
        "# a shell comment, code not heading",
        "",
        "## Configure",   # 9: alone between blank lines -> real heading
        "",
        "Set it.",        # 11
    ])
    sections, warnings = parse_with_warnings(text, "markdown")
    assert [s.heading for s in sections] == ["Guide", "Install", "Configure"]
    install = by_heading(sections, "Install")
    assert (install.line_start, install.line_end) == (3, 7)
    assert warnings == ["unbalanced code fence at line 5: treated as running to the end of the section"]


def test_tables_stay_whole_in_one_section():
    text = "## Backends\n\n| GPU | SM |\n|-----|----|\n| A100 | 80 |\n| H100 | 90 |\n\nAfter.\n"
    [section] = parse_document(text, "markdown")
    assert "| A100 | 80 |\n| H100 | 90 |" in section.text
    assert (section.line_start, section.line_end) == (1, 8)


def test_setext_headings_and_rules():
    text = "Title\n=====\n\nIntro text.\n\nPart\n----\n\nBody.\n\n---\n\nMore body.\n"
    sections = parse_document(text, "markdown")
    assert crumbs(sections) == [["Title"], ["Title", "Part"]]
    part = sections[1]
    # The underline is blanked in the text; a thematic break is not a heading.
    assert part.text.split("\n")[:2] == ["Part", ""]
    assert (part.line_start, part.line_end) == (6, 13)


def test_a_rule_after_a_list_is_not_a_setext_heading():
    sections = parse_document("## A\n\n- one\n- two\n---\n\ntext\n", "markdown")
    assert [s.heading for s in sections] == ["A"]


def test_line_end_skips_trailing_blank_lines_and_rules():
    text = "## A\n\nBody.\n\n---\n\n## B\n\nMore.\n"
    first = parse_document(text, "markdown")[0]
    assert (first.line_start, first.line_end) == (1, 3)
    assert first.text == "## A\n\nBody."


def test_front_matter_is_hidden_and_its_title_heads_the_breadcrumb():
    text = '---\ntitle: "Troubleshooting"\n---\n\nIntro.\n\n## Timeouts\n\nRaise it.\n'
    sections = parse_document(text, "mdx")
    assert crumbs(sections) == [["Troubleshooting"], ["Troubleshooting", "Timeouts"]]
    assert sections[0].line_start == 5 and "title:" not in sections[0].text


def test_mdx_imports_and_jsx_tags_are_not_headings_and_keep_their_text():
    text = "\n".join([
        "import { Callout } from 'fumadocs-ui/components/callout'",
        "",
        "## Ray <Badge>new</Badge>",
        "",
        '<Callout type="warn">',
        "Do not use Ray 2.47.",
        "</Callout>",
    ])
    sections = parse_document(text, "mdx")
    assert [s.heading for s in sections] == ["Ray new"]
    assert "Do not use Ray 2.47." in sections[0].text
    assert "import" not in "\n".join(s.text for s in sections)


def test_heading_text_drops_inline_markup_but_keeps_code_text():
    assert markdown_heading_text("Error: `ModuleNotFoundError: No module named 'sglang'`") == (
        "Error: ModuleNotFoundError: No module named 'sglang'"
    )
    assert markdown_heading_text("**Bold** and *em* [link](#x) `snake_case_name`") == "Bold and em link snake_case_name"
    assert markdown_heading_text(r"\*literal\* and __dunder__ ~~old~~") == "*literal* and dunder old"
    assert markdown_heading_text("unclosed `tick  and   spaces") == "unclosed `tick and spaces"


def test_atx_closing_hashes_and_hashtags():
    sections = parse_document("## Title ##\n#hashtag is text\n### C# tips\n", "markdown")
    assert [s.heading for s in sections] == ["Title", "C# tips"]


def test_github_slugs():
    assert github_slug("1. Installation Issues") == "1-installation-issues"
    assert github_slug("22. Pause/Continue Generation Errors") == "22-pausecontinue-generation-errors"
    assert github_slug("Issue: Loss Explosion / NaN") == "issue-loss-explosion--nan"
    assert github_slug("Ray >= 2.48.0") == "ray--2480"
    assert github_slug("使用 Ray（推荐）") == "使用-ray推荐"
    slugger = GithubSlugger()
    assert [slugger.slug("Resources") for _ in range(3)] == ["resources", "resources-1", "resources-2"]


def test_anchors_are_unique_per_document():
    sections = parse_document("## Fix\n\na\n\n## Fix\n\nb\n", "markdown")
    assert [s.anchor for s in sections] == ["fix", "fix-1"]


def test_sections_without_a_body_or_only_a_lead_are_not_answerable():
    text = "\n".join([
        "# Guide",
        "",
        "Common fixes are below.",      # a short lead of a section with children
        "",
        "## Category",                  # empty
        "",
        "### Real entry",
        "",
        "Do this.",
        "",
        "## Jump table",
        "",
        "| Symptom | Go to |",
        "|---|---|",
        "| OOM | [Memory](#memory) |",
        "| NaN | [Training](#training) |",
    ])
    answerable = {s.heading: s.answerable for s in parse_document(text, "markdown")}
    assert answerable == {"Guide": False, "Category": False, "Real entry": True, "Jump table": False}


def test_control_characters_and_long_lines_do_not_break_parsing():
    text = "## A\x1b[31m\n\x00\x07 body " + "x" * 200_000 + "\n## B\n"
    sections = parse_document(text, "markdown")
    assert [s.heading for s in sections] == ["A[31m", "B"]
