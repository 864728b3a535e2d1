"""render.py: document text becomes safe HTML; only http(s) links; code blocks highlighted."""

from __future__ import annotations

import dataclasses
import html as html_module
import inspect
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rlhelper.answer import html as render
from rlhelper.answer import markup
from rlhelper.answer.extractive import build_answer, citation_for
from rlhelper.answer.model import RELATED_SHOWN
from rlhelper.schema import Entry, Hit

EVIL = (Path(__file__).parent / "hostile" / "evil.md").read_text(encoding="utf-8")
# Every tag render.py itself writes; anything else in the output came from a document.
OUR_TAGS = {"p", "br", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre", "div", "span", "button", "a",
            "sup", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "blockquote", "hr",
            "details", "summary", "s"}


def tags(html: str) -> set[str]:
    return {t.lower() for t in re.findall(r"<\s*/?\s*([a-zA-Z][\w-]*)", html)}


def hrefs(html: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', html)


def entry(text: str, url: str | None = "https://github.com/o/r/blob/main/f.md#x", eid: str = "e1") -> Entry:
    return Entry(id=eid, collection="seeds", doc="guide.md", doc_title="Guide", framework="verl", lang="en",
                 breadcrumb=["Guide", "Errors", "Weight sync"], heading="Weight sync", anchor="x",
                 line_start=10, line_end=20, text=text, url=url)


# -- hostile text ---------------------------------------------------------------------


def test_hostile_document_is_text_only():
    html = render.markdown_html(EVIL)
    assert tags(html) <= OUR_TAGS - {"details", "summary"}
    for literal in ("&lt;script&gt;alert(&#x27;xss-script&#x27;)&lt;/script&gt;", "&lt;img src=x onerror=alert(1)&gt;",
                    "&lt;iframe", "&lt;svg onload", "[click](javascript:alert(1))"):
        assert literal in html
    assert all(h.startswith(("https://", "http://")) for h in hrefs(html))
    assert "javascript:" not in "".join(hrefs(html))
    # No attribute of ours carries an event handler; the words only occur escaped, as text.
    assert not re.search(r"<[^>]*\son\w+\s*=", html)


def test_unsafe_links_stay_literal_and_safe_ones_are_links():
    html = render.inline("[a](javascript:alert(1)) [b](data:text/html,x) [c](https://ok.example/p?q=1&r=2) [d](#anchor)")
    assert "[a](javascript:alert(1))" in html and "[b](data:text/html,x)" in html
    assert hrefs(html) == ["https://ok.example/p?q=1&amp;r=2"]
    assert "d" in html and "#anchor" not in html  # a relative link keeps its label only


def test_quote_in_url_cannot_break_out_of_the_attribute():
    html = render.inline('[x](https://e.com/"onmouseover="alert(1))')
    assert not re.search(r"<a[^>]*onmouseover", html)
    assert render.safe_url('https://e.com/"x') is None


def test_safe_url():
    assert render.safe_url("https://docs.example.com/a#b") == "https://docs.example.com/a#b"
    assert render.safe_url("HTTP://x.org") == "HTTP://x.org"
    for bad in ("javascript:alert(1)", " javascript:alert(1)", "data:text/html,x", "file:///etc/passwd",
                "//evil.example", "/etc/passwd", "https://", "https://a b", "vbscript:x", None, ""):
        assert render.safe_url(bad) is None, bad


def test_images_are_never_loaded():
    html = render.markdown_html("![pixel](https://example.com/p.png)")
    assert "<img" not in html and "![pixel](https://example.com/p.png)" in html


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>\"'`*_[]()!#|:-=\n /ajvscriptimgonerr=1.:~")), max_size=200))
def test_any_text_yields_only_our_tags(text):
    html = render.markdown_html(text)
    assert tags(html) <= OUR_TAGS
    assert not re.search(r"<[^>]*\son\w+\s*=", html)
    assert all(h.lower().startswith(("https://", "http://")) for h in hrefs(html))


# -- markup that must work ---------------------------------------------------------------


def test_fenced_code_is_highlighted_with_language_class_and_copy_button():
    html = render.markdown_html("Run:\n\n```python\nimport os  # why\nx = 'a<b'\n```\n")
    assert '<pre><code class="language-python">' in html
    assert '<span class="tok-k">import</span>' in html
    assert '<span class="tok-c"># why</span>' in html
    assert "&#x27;a&lt;b&#x27;" in html
    assert 'class="rl-copy"' in html


def test_preformatted_text_keeps_its_indentation_through_gradios_cleandoc():
    # gr.Chatbot runs inspect.cleandoc on each message, stripping indentation shared by lines 2+.
    yaml_fix = "1. Increase timeout:\n   ```yaml\n   generator:\n     engine_init_kwargs:\n       wake_timeout: 120\n   ```"
    traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    g()\nKeyError: 'a'"
    for html in (render.markdown_html(yaml_fix), render.user_html(traceback)):
        assert inspect.cleandoc(html) == html
    code = re.search(r"<code[^>]*>(.*?)</code>", render.markdown_html(yaml_fix)).group(1)
    assert html_module.unescape(re.sub(r"<[^>]+>", "", code)) == "generator:\n  engine_init_kwargs:\n    wake_timeout: 120"
    assert html_module.unescape(render.user_html(traceback)).endswith("    g()\nKeyError: 'a'</pre>")


def test_wrapped_lines_are_one_paragraph_but_labels_and_hard_breaks_keep_their_line():
    html = render.markdown_html("Install with\nuv, see `the docs\n<https://x.io/a>`_ first.\n\n"
                                "**Cause:** a\n**Fix:** b\n\nline one  \nline two\\\nline three")
    assert '<p>Install with uv, see <a href="https://x.io/a"' in html  # the wrapped rst link is whole again
    assert "<p><strong>Cause:</strong> a<br><strong>Fix:</strong> b</p>" in html
    assert "<p>line one<br>line two<br>line three</p>" in html


def test_rst_code_block_and_literal_block():
    rst = "Fix it::\n\n    export NCCL_TIMEOUT=1800\n\n.. code-block:: bash\n   :linenos:\n\n   ray stop\n\nAfter."
    html = render.markdown_html(rst)
    assert html.count('class="rl-code"') == 2
    assert "<p>Fix it:</p>" in html
    assert "NCCL_TIMEOUT=" in html and ":linenos:" not in html
    assert '<code class="language-bash">' in html
    assert "<p>After.</p>" in html


def test_headings_lists_tables_and_inline_markup():
    md = ("## Weight sync\n\nTitle\n=====\n\n- one `x`\n- **two** see https://ex.com/a.\n\n1. first\n2. second\n\n"
          "| a | b |\n|---|---|\n| `c` | d |\n")
    html = render.markdown_html(md)
    assert "<h4>Weight sync</h4>" in html and "<h4>Title</h4>" in html
    assert "<ul><li>one <code>x</code></li><li><strong>two</strong> see " in html
    assert 'href="https://ex.com/a"' in html and "a</a>." in html  # trailing period is not part of the URL
    assert "<ol><li>first</li><li>second</li></ol>" in html
    assert "<th>a</th>" in html and "<td><code>c</code></td>" in html


def test_rst_titles_directives_literal_blocks_and_grid_tables():
    rst = ("Section\n~~~~~~~\n\n.. note:: Before upgrading\n\n   Run ``ray stop``.\n\n"
           ".. image:: https://example.com/p.png\n   :width: 10\n\n.. _target:\n\n.. a comment\n   on two lines\n\n"
           "+---+---+\n| a | b |\n+---+---+\n\nExample ::\n\n  x = 1\n")
    html = render.markdown_html(rst)
    assert html.startswith("<h4>Section</h4>")  # a ~ underline is a title, not a code fence
    assert '<p class="rl-directive"><strong>Note: Before upgrading</strong></p><p>Run <code>ray stop</code>.</p>' in html
    assert '<p class="rl-directive">.. image:: https://example.com/p.png</p>' in html and "width" not in html
    assert "target" not in html and "comment" not in html and "two lines" not in html
    assert '<pre class="rl-table">+---+---+&#10;| a | b |&#10;+---+---+</pre>' in html
    assert "<p>Example</p>" in html and "<pre><code>x = 1</code></pre>" in html
    for fence in ("```", "~~~"):  # a Markdown fence right under a line is no title underline
        fenced = render.markdown_html(f"Run:\n{fence}\nray stop\n{fence}\n")
        assert fenced.startswith("<p>Run:</p>") and "<pre><code>ray stop</code></pre>" in fenced


def test_a_section_cut_from_inside_a_list_item_is_text_not_code():
    html = render.markdown_html("    Saves one file per `rollout`.\n\n      More text, indented deeper.\n")
    assert html == "<p>Saves one file per <code>rollout</code>.</p><p>More text, indented deeper.</p>"


def test_relative_links_keep_their_label_and_an_encoded_quote_is_no_link():
    html = render.markdown_html("[guide](docs/guide.md) [x](https://e.com/%22onmouseover=%22alert(1)) "
                                "`doc <../faq.rst>`_ `bad <javascript:alert(1)>`_ ~~old~~")
    assert html.startswith("<p>guide [x](") and "<p>guide [x](" in html  # labels only, no anchors
    assert "<a " not in html.split("[x](")[0] and "doc `bad &lt;javascript:alert(1)&gt;`_" in html
    assert "<s>old</s>" in html


def test_code_is_highlighted_by_its_language_and_left_plain_without_one():
    bash = markup.highlight('pip install x  # why\necho "RuntimeError"\nexport T=1800  # 30 minutes', "sh")
    assert '<span class="tok-c"># why' in bash and '<span class="tok-k">echo</span>' in bash
    assert bash.endswith('<span class="tok-c"># 30 minutes</span>')  # a comment on the last line too
    assert markup.highlight("x < 1", "no-such-language") == "x &lt; 1"
    assert markup.highlight("RuntimeError: boom", "") == "RuntimeError: boom"
    assert "<span" not in markup.highlight("import os\n" * 3000, "python")  # too long to colour


def test_rst_inline_link_and_literal():
    html = render.inline("see `docs <https://ray.io/x>`__ and ``ray stop``")
    assert '<a href="https://ray.io/x" target="_blank" rel="noopener noreferrer">docs</a>' in html
    assert "<code>ray stop</code>" in html


def test_citation_markers_link_to_the_cited_section_only_when_known():
    html = render.inline("Raise the timeout [1]. Also [2]. arr[1] stays.", {1: "https://u.example/#a"})
    assert '<sup class="rl-ref"><a href="https://u.example/#a"' in html
    assert "Also [2]." in html and "arr[1] stays" in html


def test_user_message_is_escaped_and_cut():
    assert render.user_html("<b>hi</b>") == "<p>&lt;b&gt;hi&lt;/b&gt;</p>"
    long = render.user_html("x" * 5000)
    assert "3,000 more characters not shown" in long and long.count("x") < 2100
    assert render.user_html("Traceback\n  File x\nError").startswith('<pre class="rl-query">')


# -- whole answers -------------------------------------------------------------------------


def test_answer_html_has_numbered_sources_with_expandable_entries():
    e = entry("**Cause:** slow net.\n\n**Solution:**\n```yaml\nweight_sync_timeout: 120\n```")
    answer = build_answer("weight sync timed out", "weight sync timed out", [Hit(1, 0.9, e)], abstained=False,
                          notices=["Query truncated to 1,000,000 bytes <b>"])
    html = render.answer_html(answer)
    assert 'class="rl-notices"' in html and "truncated" in html and "&lt;b&gt;" in html
    assert '<span class="rl-num">1</span>' in html
    assert 'href="https://github.com/o/r/blob/main/f.md#x"' in html
    assert "Guide <span class=\"rl-sep\">›</span> Errors <span class=\"rl-sep\">›</span> Weight sync" in html  # a short heading
    assert "Lines 10–20 of “Guide”" in html and "guide.md" not in html.split("rl-file")[1][:80]  # by its title (issue 36)
    assert "<details" in html and "Show the whole entry" in html
    assert '<code class="language-yaml">' in html


def test_a_twin_is_named_under_the_source_with_its_language_and_link():
    e = entry("Raise the timeout.")
    e.twins = [{"entry_id": "z1", "collection": "seeds", "doc": "zh/guide.md", "heading": "权重同步<超时>", "lang": "zh",
                "breadcrumb": ["指南"], "line_start": 7, "line_end": 9, "url": "https://github.com/o/r/blob/main/zh.md#y"},
               {"entry_id": "v2", "collection": "seeds", "doc": "old/guide.md", "heading": "Weight sync", "lang": "en",
                "breadcrumb": [], "line_start": 3, "line_end": 4, "url": "javascript:alert(1)"}]
    answer = build_answer("weight sync", "weight sync", [Hit(1, 0.9, e), Hit(2, 0.5, entry("other", eid="e2"))],
                          abstained=False)
    sources = render.answer_html(answer)
    assert ('Also in 中文: <a href="https://github.com/o/r/blob/main/zh.md#y" target="_blank" '
            'rel="noopener noreferrer">权重同步&lt;超时&gt;</a> (zh/guide.md, line 7)') in sources
    assert "Another version: Weight sync (old/guide.md, line 3)" in sources  # an unsafe URL: the label only
    assert "javascript:" not in sources


def test_partial_answer_has_no_sources_yet():
    e = entry("**Cause:** a\n\n**Solution:** b")
    answer = build_answer("q", "q", [Hit(1, 0.9, e)], abstained=False)
    html = render.answer_html(answer, text="partial", final=False)
    assert "partial" in html and "rl-sources" not in html


def test_abstained_answer_says_so_and_lists_related_entries():
    answer = build_answer("q", "q", [Hit(1, 0.1, entry("text", eid="a")), Hit(2, 0.05, entry("t", None, "b"))],
                          abstained=True)
    html = render.answer_html(answer)
    assert "No matching entry in the docs." in html
    assert "Related entries" in html and html.count('class="rl-cite"') == 2
    assert 'class="rl-num"' not in html  # related entries are not numbered citations


def test_runners_up_are_listed_under_an_answer_but_not_numbered():
    hits = [Hit(1, 0.9, entry("**Fix:** do it", eid="best")), Hit(2, 0.5, entry("<b>other</b>", eid="second")),
            *[Hit(n, 0.4 - n / 100, entry("x", eid=f"more{n}")) for n in range(3, 8)]]
    answer = build_answer("q", "q", hits, abstained=False)
    html = render.answer_html(answer)
    sources, related = html.split("Also related (not quoted above)")
    assert sources.count('class="rl-cite"') == 1 and '<span class="rl-num">1</span>' in sources
    assert related.count('class="rl-cite"') == RELATED_SHOWN and 'class="rl-num"' not in related
    assert "<b>other</b>" not in html  # the related entry's text is escaped too
    assert "Also related" not in render.answer_html(build_answer("q", "q", hits[:1], abstained=False))


def test_citation_without_url_is_plain_text():
    e = entry("body", url=None)
    answer = build_answer("q", "q", [Hit(1, 0.9, e)], abstained=False)
    assert "<a " not in render.sources_html(answer.citations, lambda _id: e)


def test_error_html_escapes():
    assert "&lt;script&gt;" in render.error_html("<script>")


def test_a_source_is_named_by_title_heading_and_upstream_with_file_and_lines_in_its_detail():
    e = entry("Raise the timeout.", url="https://github.com/acme/skills/blob/main/docs/slime/references/trouble.md#oom")
    e.doc, e.doc_title = "002_bd1aab8bc1bcc176.txt", "slime-rl-training (SkillHub capture)"
    e.breadcrumb = ["slime: LLM Post-Training", "Skill Companion Files", "references/trouble.md", "Memory Issues",
                    "Issue: OOM During Training"]
    html = render.sources_html([citation_for(Hit(1, 0.9, e), 1)], lambda _: e)
    head = html.split('class="rl-cite-head">')[1].split("</div>")[0]
    assert ">slime-rl-training (SkillHub capture) <span class=\"rl-sep\">›</span> Issue: OOM During Training<" in head
    assert "Skill Companion Files" not in head.split('">', 2)[-1]  # the five levels are only the tooltip
    assert 'title="slime-rl-training (SkillHub capture) › slime: LLM Post-Training › Skill Companion Files' in head
    location = html.split('class="rl-loc">')[1].split("<details")[0]
    assert location.startswith("acme/skills · docs/slime/references/trouble.md · ")
    assert 'title="Seed guides: troubleshooting pages gathered from the frameworks&#x27; and community repositories and ' \
        'captures">seeds<' in location
    assert "002_bd1aab8bc1bcc176" not in location
    details = html.split("<details")[1]
    assert "Lines 10–20 of “slime-rl-training (SkillHub capture)”" in details
    assert "002_bd1aab8bc1bcc176" not in html  # a storage name says nothing to a reader (issue 29, point 3)


def test_a_short_heading_keeps_its_parent_and_a_page_off_github_names_its_host():
    from rlhelper.answer.sources import collection_note, short_trail, upstream

    assert short_trail("verl FAQ", ["verl FAQ", "Checkpoints", "Solution"]) == ["verl FAQ", "Checkpoints", "Solution"]
    assert short_trail("Guide", ["Guide", "A", "B", "Weight sync timed out"]) == ["Guide", "Weight sync timed out"]
    assert upstream("https://docs.example.org/faq/#oom") == "docs.example.org/faq"
    assert upstream(None) == ""
    assert collection_note("official").startswith("Official docs") and "mine" in collection_note("mine")


# -- rendering what users saw flattened or cut (issue 20, point 8) ----------------------------------


def test_a_bulleted_list_right_under_a_paragraph_line_stays_a_list():
    html = render.markdown_html("**Common mismatches:**\n- Different batch size\n- Different learning rate\n\n"
                                "Wrapped text\n2019. was a year, not a list item")
    assert "<ul><li>Different batch size</li><li>Different learning rate</li></ul>" in html
    assert "<p><strong>Common mismatches:</strong></p>" in html
    assert "<ol" not in html


def test_searched_for_is_cut_at_a_word_with_an_ellipsis():
    words = " ".join(f"reserved{i} by PyTorch" for i in range(40))
    answer = build_answer("log\nlines", words, [], abstained=True)
    shown = re.search(r"<code>(.*)</code>", render.searched_html(answer)).group(1)
    assert shown.endswith(" …") and len(shown) <= 302
    assert words.startswith(shown[:-2]) and words[len(shown) - 2] == " "  # the last word is whole


def test_also_in_another_language_is_not_said_of_the_same_title():
    e = entry("Raise the timeout.")
    e.heading = "Weight sync"
    same = {"entry_id": "z1", "collection": "seeds", "doc": "zh/guide.md", "heading": "Weight  sync", "lang": "zh",
            "breadcrumb": [], "line_start": 7, "line_end": 9, "url": None}
    english_title = {**same, "heading": "Weight sync timeout (NCCL)"}
    chinese_title = {**same, "heading": "权重同步超时"}
    e.twins = [same, english_title, chinese_title]
    html = render.answer_html(build_answer("weight sync", "weight sync", [Hit(1, 0.9, e)], abstained=False))
    assert html.count("Also in 中文") == 1 and "权重同步超时" in html and "NCCL" not in html


# -- a Chinese question is answered with Chinese labels (issue 20, point 6) ------------------------


def test_a_chinese_question_gets_chinese_labels_and_an_english_one_english():
    e = entry("**Cause:** slow net.\n\n**Fix:**\n```yaml\nweight_sync_timeout: 120\n```")
    zh = build_answer("weight sync 超时怎么办", "weight sync 超时怎么办", [Hit(1, 0.9, e), Hit(2, 0.5, entry("x", eid="e2"))],
                      abstained=False)
    assert "**原因** [1]" in zh.text and "**解决方法** [1]" in zh.text and "**Cause**" not in zh.text
    html = render.answer_html(zh, entry_for=lambda _: e)
    for chinese in ("来源", "查看完整条目", "其他相关条目", ">复制<", "“Guide” 第 10–20 行"):
        assert chinese in html, chinese
    assert "Show the whole entry" not in html and ">Sources<" not in html
    assert "slow net." in html  # the quoted doc text stays as written

    en = build_answer("weight sync timed out", "weight sync timed out", [Hit(1, 0.9, e)], abstained=False)
    assert "**Cause** [1]" in en.text and "来源" not in render.answer_html(en)
    nothing = build_answer("这个报错怎么办", "这个报错怎么办", [Hit(1, 0.1, e)], abstained=True)
    assert nothing.text.startswith("文档中没有") and "文档中没有匹配的条目" in render.answer_html(nothing)


def test_a_seed_is_named_by_its_title_and_says_when_it_has_no_upstream(capsys):
    """Issue 29, point 3: no storage name ("003_0a050bd8009ad8d6.txt") reaches the page or the terminal."""
    from rlhelper.answer.sources import NO_UPSTREAM, place
    from rlhelper.cli import terminal
    from rlhelper.schema import Hit

    e = entry("Lower gpu_memory_utilization.", url=None)
    e.doc, e.doc_title = "003_0a050bd8009ad8d6.txt", "verl Troubleshooting"
    e.also_at = [{"doc": e.doc, "heading": e.heading, "breadcrumb": [], "line_start": 446, "line_end": 460}]
    e.twins = [{"entry_id": "t", "collection": "seeds", "doc": "001_4943b08643600789.txt", "heading": "权重同步",
                "lang": "zh", "breadcrumb": [], "line_start": 166, "line_end": 170, "url": None}]
    page = render.answer_html(build_answer("q", "q", [Hit(1, 0.9, e), Hit(2, 0.5, e)], abstained=False))
    assert "0a050bd8" not in page and "4943b086" not in page
    assert "Lines 10–20 of “verl Troubleshooting”" in page and "Also at line 446" in page
    assert NO_UPSTREAM in page
    terminal.print_hit_rows([Hit(1, 0.9, e)])
    printed = capsys.readouterr().out
    assert "0a050bd8" not in printed and "“verl Troubleshooting”, lines 10–20" in printed
    assert place("verl/faq.rst", 3, 9) == "verl/faq.rst, lines 3–9"
    assert place("003_0a050bd8009ad8d6.txt", 3) == ""  # no readable name: the caller leaves it out


def test_a_place_is_named_by_its_pages_title_and_a_page_with_no_link_says_where_to_read_it(capsys):
    """Issue 36, point 4: "Also at verl/faq.rst, line 27" named by a local path a page its row names by
    repository path; a verl community page's lead had no link and said nothing of where to read it."""
    from rlhelper.cli import terminal
    from rlhelper.schema import Hit

    e = entry("Lower gpu_memory_utilization.", url=None)
    e.doc, e.doc_title = "003_0a050bd8009ad8d6.txt", "verl Troubleshooting"
    e.also_at = [{"doc": "verl/faq.rst", "doc_title": "verl FAQ", "heading": e.heading, "breadcrumb": [],
                  "line_start": 27, "line_end": 30, "url": None}]
    answer = build_answer("q", "q", [Hit(1, 0.9, e)], abstained=False)
    for lang, also, read in (("en", "Also at “verl FAQ”, line 27", "read the whole section under “Show the whole entry”"),
                             ("zh", "另见于 “verl FAQ”，第 27 行", "完整内容见下方“查看完整条目”")):
        page = render.answer_html(dataclasses.replace(answer, query="q" if lang == "en" else "怎么办"),
                                  entry_for=lambda _: e)
        assert also in page and "verl/faq.rst" not in page, lang
        assert read in page, lang
    # Without the entry below the row, nothing is promised there.
    bare = render.answer_html(dataclasses.replace(answer, hits=[]), entry_for=None)
    assert "Show the whole entry" not in bare and "no known upstream" in bare
    terminal.print_sources(answer)  # the terminal names the place the same way
    assert "Also at “verl FAQ”, lines 27–30" in capsys.readouterr().out
