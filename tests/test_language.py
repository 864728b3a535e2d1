"""Everything that is rlhelper's own follows the asker's language (issue 29, point 6): the notices made
in search/ and answer/, the source lines, the collection words, in the page and in the terminal,
while the JSON keeps its English strings; the catalogue itself (catalogue.py)."""

from __future__ import annotations

import copy
import html as html_module
import json
import pickle
import re
import string

import pytest

from rlhelper import catalogue
from rlhelper.answer import html as render
from rlhelper.answer.extractive import build_answer
from rlhelper.cli import terminal
from rlhelper.index.lexical import has_han
from rlhelper.schema import Entry, Hit
from rlhelper.search.query import normalize_query

CHINESE_LOG = (
    "训练到一半报错了，怎么办？\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/verl/verl/workers/actor/dp_actor.py", line 410, in update_policy\n'
    "    loss.backward()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79 GiB\n"
)
# What rlhelper itself said in English to a Chinese question before (issue 29, point 6).
OUR_ENGLISH = ("Weak match", "Pasted log detected", "error line", "matched:", "Also at", "Also in", "Another version",
               "Lines ", "File ", "Link to this question", "Searched for", "Show the whole entry", "community page",
               "Seed guides", "Official docs", "Sources", "Also related", "Copy")


def seed_entry(eid: str = "e1", lang: str = "zh") -> Entry:
    e = Entry(id=eid, collection="seeds", doc="003_0a050bd8009ad8d6.txt", doc_title="verl 排障指南", framework="verl",
              lang=lang, breadcrumb=["verl 排障指南", "训练阶段显存不足"], heading="训练阶段显存不足", anchor="x",
              line_start=10, line_end=20, text="**原因：** 批太大。\n\n**解决方法：**\n```bash\nppo_micro_batch_size=1\n```",
              url=None)
    e.also_at = [{"doc": e.doc, "heading": e.heading, "breadcrumb": [], "line_start": 446, "line_end": 460}]
    e.twins = [{"entry_id": "t", "collection": "official", "doc": "verl/faq.rst", "heading": "OOM in the update step",
                "lang": "en", "breadcrumb": [], "line_start": 30, "line_end": 40,
                "url": "https://github.com/volcengine/verl/blob/main/docs/faq.rst#oom"}]
    return e


def chinese_answer():
    searched = normalize_query(CHINESE_LOG)
    hits = [Hit(1, 0.9, seed_entry(), matched_question="训练时显存不足怎么办"),
            Hit(2, 0.5, seed_entry("e2"), matched_question="显存不足")]
    return build_answer(CHINESE_LOG, searched.text, hits, abstained=False, notices=searched.notices, weak=True)


def visible(html: str) -> str:
    """The text a reader sees, and the tooltips they can hover."""
    tooltips = " ".join(re.findall(r'title="([^"]*)"', html))
    return html_module.unescape(re.sub(r"<[^>]+>", " ", html) + " " + tooltips)


def test_a_chinese_question_hears_only_chinese_from_rlhelper_on_the_page():
    answer = chinese_answer()
    assert answer.notices and answer.weak_match
    page = render.answer_html(answer) + render.searched_html(answer) + render.link_html("?q=x", "zh")
    words = visible(page)
    for english in OUR_ENGLISH:
        assert english not in words, english
    for chinese in ("检测到粘贴的日志", "匹配较弱", "匹配的问题：训练时显存不足怎么办", "另见于 第 446 行", "另有英文版",
                    "此问题的链接", "种子指南", "上游来源不明", "“verl 排障指南” 第 10–20 行"):
        assert chinese in words, chinese
    assert "批太大" in words and "ppo_micro_batch_size" in words  # the quoted doc text stays as written


def test_a_chinese_question_hears_only_chinese_from_rlhelper_in_the_terminal(capsys):
    terminal.print_answer(chinese_answer())
    out, err = capsys.readouterr()
    for english in (*OUR_ENGLISH, "note:", "also at", "also in"):
        assert english not in out + err, english
    assert "提示：检测到粘贴的日志" in err and "另见于" in out and "匹配的问题：" in out


def test_an_english_question_keeps_english_and_the_json_keeps_english_notices():
    searched = normalize_query(CHINESE_LOG)
    answer = chinese_answer()
    assert answer.to_dict()["notices"][0].startswith("Pasted log detected: searched its error signature")
    assert json.loads(json.dumps(answer.to_dict()))["notices"] == [str(n) for n in answer.notices]
    english = build_answer("verl OOM in update_policy", searched.text, [Hit(1, 0.9, seed_entry(lang="en"))],
                           abstained=False, notices=searched.notices, weak=True)
    words = visible(render.answer_html(english))
    assert "Pasted log detected" in words and "Weak match" in words and "Sources" in words and not has_han(
        words.replace("verl 排障指南", "").replace("训练阶段显存不足", "").replace("批太大", "").replace(
            "原因", "").replace("解决方法", ""))


# -- the catalogue --------------------------------------------------------------------------------


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


@pytest.mark.parametrize("key", sorted(catalogue.WORDS))
def test_every_phrase_is_said_in_english_and_chinese_with_the_same_fields(key):
    words = catalogue.WORDS[key]
    assert set(words) == set(catalogue.LANGS), key
    assert fields(words["zh"]) <= fields(words["en"]), key  # Chinese drops English's plural "s" only
    assert fields(words["en"]) - fields(words["zh"]) <= {"s", "left_s"}, key


def test_the_page_words_are_in_both_languages():
    pages = catalogue.page_words()
    assert set(pages) == set(catalogue.LANGS) and pages["en"].keys() == pages["zh"].keys()
    assert all(has_han(text) for text in pages["zh"].values())


def test_a_phrase_is_english_text_that_can_be_said_again_and_survives_a_copy():
    counted = catalogue.Phrase("notice.error_lines", n=2, s="s")
    notice = catalogue.Phrase("notice.log_errors", counted=counted)
    assert notice == "Pasted log detected: searched its error signature (2 error lines, last error first)."
    assert catalogue.in_language(notice, "zh") == "检测到粘贴的日志：检索了其中的报错签名（2 行报错，最后的报错在前）。"
    assert catalogue.in_language("a user's own words", "zh") == "a user's own words"
    for again in (pickle.loads(pickle.dumps(notice)), copy.deepcopy(notice), copy.copy(notice)):
        assert again == notice and catalogue.in_language(again, "zh") == catalogue.in_language(notice, "zh")
    with pytest.raises(KeyError):
        catalogue.say("no.such.key")
