"""reStructuredText parsing: adornments, order-defined hierarchy, literal blocks, docutils ids."""

from __future__ import annotations

from rlhelper.ingest.parse import parse_document
from rlhelper.ingest.parse.inline import DocutilsIds, rst_heading_text


def crumbs(sections):
    return [s.breadcrumb for s in sections]


def test_hierarchy_is_the_order_styles_first_appear():
    # "~" first means level 1 here, though "=" is conventional for titles.
    text = "\n".join([
        "Top",
        "~~~",
        "",
        "Mid",
        "***",
        "",
        "Low",
        "===",
        "",
        "Mid again",
        "*********",
        "",
        "Text.",
    ])
    assert crumbs(parse_document(text, "rst")) == [
        ["Top"], ["Top", "Mid"], ["Top", "Mid", "Low"], ["Top", "Mid again"],
    ]


def test_overline_and_underline_is_a_style_of_its_own():
    text = "\n".join([
        "=========",
        " Title",          # an inset title is allowed with an overline
        "=========",
        "",
        "Section",
        "=======",         # same character, no overline: a different, deeper style
        "",
        "Body.",
    ])
    sections = parse_document(text, "rst")
    assert crumbs(sections) == [["Title"], ["Title", "Section"]]
    assert sections[0].line_start == 2  # the title line, not the overline
    assert "=" not in sections[1].text  # adornment lines are blanked in the text


def test_underlines_longer_or_shorter_than_the_title():
    text = "\n".join([
        "A rather long title that outgrows its underline",
        "------",                                  # short but >= 4: a title (docutils warns only)
        "",
        "Short",
        "---------------------------------------",  # longer: fine
        "",
        "Tiny underline",
        "--",                                      # < 4 and shorter than the title: plain text
        "",
        "常见问题",
        "========",                                 # CJK counts double width: 8 columns
    ])
    sections = parse_document(text, "rst")
    assert [s.heading for s in sections] == [
        "A rather long title that outgrows its underline", "Short", "常见问题",
    ]
    assert "Tiny underline" in sections[1].text


def test_code_blocks_are_kept_whole_in_their_section():
    text = "\n".join([
        "Install",               # 1
        "-------",
        "",
        "Run::",                 # 4: a literal block follows
        "",
        "    pip install x",
        "",
        "    pip install y",     # a blank line inside the literal block
        "",
        ".. code-block:: bash",  # 10
        "",
        "   export A=1",
        "",
        "   export B=2",         # 14
        "",
        "Next",
        "----",
    ])
    sections = parse_document(text, "rst")
    assert [s.heading for s in sections] == ["Install", "Next"]
    install = sections[0]
    assert (install.line_start, install.line_end) == (1, 14)
    assert "pip install y" in install.text and "export B=2" in install.text


def test_markdown_headings_inside_rst_nest_under_the_current_section():
    text = "\n".join([
        "FAQ",
        "===",
        "",
        "Env",
        "---",
        "",
        "### Q1: device missing?",
        "",
        "Check it.",
        "",
        "### Q2: driver?",
        "",
        "Update it.",
        "",
        "Debug",
        "-----",
    ])
    sections = parse_document(text, "rst")
    assert crumbs(sections) == [
        ["FAQ"], ["FAQ", "Env"], ["FAQ", "Env", "Q1: device missing?"], ["FAQ", "Env", "Q2: driver?"], ["FAQ", "Debug"],
    ]
    # Sphinx renders them as paragraphs: the anchor is the enclosing section's.
    assert [s.anchor for s in sections] == ["faq", "env", "env", "env", "debug"]


def test_docutils_ids_with_sphinx_fallbacks_in_document_order():
    text = "\n".join([
        "常见问题",
        "========",
        "",
        "See `this <https://x.org>`_ and `that <https://y.org>`__.",  # a named target takes "this"
        "",
        "Ray 调试",
        "--------",
        "",
        "渲染问题",
        "--------",
        "",
        "This",             # "this" is taken by the target above
        "----",
        "",
        "Triton ``compile_module_from_src`` error",
        "----------------------------------------",
    ])
    assert [s.anchor for s in parse_document(text, "rst")] == [
        "id1", "ray", "id2", "id3", "triton-compile-module-from-src-error",
    ]


def test_docutils_ids_register_explicit_targets():
    ids = DocutilsIds()
    assert [ids.register(n) for n in ["Setup", "setup", "数值", "  Ray   Issues "]] == ["setup", "id1", "id2", "ray-issues"]


def test_rst_heading_text_removes_inline_markup():
    assert rst_heading_text("Triton ``compile_module_from_src`` error") == "Triton compile_module_from_src error"
    assert rst_heading_text(":doc:`GSM8K example<../gsm8k>` on `Slurm <https://slurm>`_") == "GSM8K example on Slurm"
    assert rst_heading_text("with the `in` keyword, **strong** and *em*") == "with the in keyword, strong and em"


def test_targets_and_comments_are_not_content():
    text = "\n".join([
        "Guide",
        "=====",
        "",
        "Body.",
        "",
        ".. _next-section:",
        "",
        ".. a comment",
        "   spanning lines",
        "",
        "Next",
        "----",
        "",
        "..",
        "   only a comment here",
    ])
    guide, nxt = parse_document(text, "rst")
    assert (guide.line_start, guide.line_end) == (1, 4)  # the label belongs to what follows
    assert nxt.answerable is False  # a comment is no body


def test_toctree_only_section_is_not_answerable():
    text = "Index\n=====\n\n.. toctree::\n   :maxdepth: 1\n\n   faq\n   install\n"
    [section] = parse_document(text, "rst")
    assert section.answerable is False
