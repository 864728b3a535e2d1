"""Captured web pages: chrome and footer dropped, companion files parsed as their own Markdown."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlhelper.ingest.parse import EmbeddedSection, detect_format, parse_document, parse_with_warnings

SEEDS = Path(__file__).resolve().parent.parent / "ingest" / "seeds"

CHROME = [
    "Back to skills",
    "SkillHub Club",
    "",
    "demo-skill",
    "",
    "Stars",
    "5,239",
    "Install command",
    "npx skill install demo-skill",
    "Open repository",
    "",
]

PAGE = "\n".join(CHROME + [
    "---",                                  # 12: front matter of the wrapped SKILL.md
    "name: demo-skill",
    "description: Demo.",
    "---",                                  # 15
    "",
    "# Demo Skill",                         # 17
    "",
    "Demo skill for tests.",
    "",
    "## Companion Files",                   # 21
    "",
    "### references/troubleshooting.md",    # 23
    "",
    "```markdown",                          # 25: the outer fence
    "# Demo Troubleshooting",               # 26
    "",
    "## Issue: Crash",                      # 28
    "",
    "Fix:",
    "```bash",                              # 31: an inner fence with a # line
    "# restart the engine",
    "```",                                  # 33
    "",
    "## Issue: Hang",                       # 35
    "",
    "```",                                  # 37: a bare inner opener
    "kill -9 1",
    "```",                                  # 39
    "```",                                  # 40: the outer closer (last bare fence)
    "",
    "demo-skill | SkillHub",                # 42: footer
])


def test_chrome_front_matter_and_footer_are_never_sections():
    sections = parse_document(PAGE, "webpage")
    assert min(s.line_start for s in sections) == 17
    assert max(s.line_end for s in sections) == 39
    assert not any("SkillHub" in s.text or "name: demo-skill" in s.text for s in sections)


def test_companion_file_is_parsed_with_file_line_numbers_under_its_name():
    sections, warnings = parse_with_warnings(PAGE, "webpage")
    assert warnings == []
    by_heading = {s.heading: s for s in sections}
    crash = by_heading["Issue: Crash"]
    assert crash.breadcrumb == [
        "Demo Skill", "Companion Files", "references/troubleshooting.md", "Demo Troubleshooting", "Issue: Crash",
    ]
    assert (crash.line_start, crash.line_end) == (28, 33)
    assert "# restart the engine" in crash.text
    assert isinstance(crash, EmbeddedSection) and crash.embedded_path == "references/troubleshooting.md"
    assert crash.answerable
    hang = by_heading["Issue: Hang"]
    assert (hang.line_start, hang.line_end) == (35, 39)
    # The heading naming the file only holds the file: not an answer itself.
    assert by_heading["references/troubleshooting.md"].answerable is False


def test_unclosed_companion_fence_warns_and_runs_to_the_end():
    page = "\n".join(CHROME + ["# Demo", "", "### notes.md", "", "```markdown", "# Notes", "", "## Tip", "", "Do it."])
    sections, warnings = parse_with_warnings(page, "webpage")
    tip = next(s for s in sections if s.heading == "Tip")
    assert tip.breadcrumb == ["Demo", "notes.md", "Notes", "Tip"]
    assert any("unbalanced code fence at line 16" in w for w in warnings)


@pytest.fixture(scope="module")
def slime_page():
    return parse_document((SEEDS / "002_bd1aab8bc1bcc176.txt").read_text(encoding="utf-8"), "webpage")


def test_slime_chrome_is_not_an_entry(slime_page):
    # Lines 1-74 are SkillHub chrome, 76-84 the front matter, 1338 the footer.
    assert slime_page[0].breadcrumb == ["slime: LLM Post-Training Framework for RL Scaling"]
    assert slime_page[0].line_start == 86
    assert max(s.line_end for s in slime_page) == 1334


def test_slime_companion_troubleshooting_entries_are_answerable(slime_page):
    issues = [s for s in slime_page if s.line_start > 948 and s.heading.startswith("Issue:")]
    assert len(issues) == 15 and all(s.answerable for s in issues)
    crash = issues[0]
    assert crash.breadcrumb == [
        "slime: LLM Post-Training Framework for RL Scaling",
        "Skill Companion Files",
        "references/troubleshooting.md",
        "slime Troubleshooting Guide",
        "Common Issues and Solutions",
        "SGLang Issues",
        "Issue: SGLang Engine Crash",
    ]
    assert (crash.line_start, crash.line_end) == (955, 979)
    assert crash.anchor == "issue-sglang-engine-crash"


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("000_17cc8c75aeb7db0e.txt", "markdown"),
        ("001_4943b08643600789.txt", "rst"),
        ("002_bd1aab8bc1bcc176.txt", "webpage"),
        ("003_0a050bd8009ad8d6.txt", "markdown"),
        ("004_44111c252d7e38ab.txt", "rst"),
    ],
)
def test_detect_format_sniffs_every_seed(name, fmt):
    path = SEEDS / name
    assert detect_format(path, path.read_text(encoding="utf-8")) == fmt


def test_detect_format_by_extension_and_plain_text():
    assert detect_format(Path("a.md"), "") == "markdown"
    assert detect_format(Path("a.MDX"), "") == "mdx"
    assert detect_format(Path("a.rst"), "# looks like markdown") == "rst"
    assert detect_format(Path("a.log"), "# whatever") == "text"
    assert detect_format(Path("a.txt"), "just some words\n\nmore words\n") == "text"
    assert detect_format(Path("a.txt"), "\n".join(CHROME + ["# Title", "", "Body."])) == "webpage"
    assert detect_format(Path("a.txt"), "Title\n=====\n\n.. code-block:: bash\n\n   ls\n") == "rst"
