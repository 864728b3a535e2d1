"""The language an answer is labelled in: the question's."""

from __future__ import annotations

from ..index.lexical import has_han

ALSO_RELEVANT = {"en": "Also relevant: ", "zh": "另见："}
# When a doc entry and a reported issue's thread both answer, each is introduced as what it is.
DOCS_LEAD = {"en": "The docs: ", "zh": "文档："}
ISSUE_LEAD = {"en": "A reported issue with the same error, and how it was fixed: ", "zh": "报告过同样错误的 issue 及其解决方法："}
HEADING_LEADS = ("", *ALSO_RELEVANT.values(), *DOCS_LEAD.values(), *ISSUE_LEAD.values())


def language_of(query: str) -> str:
    """"zh" for a question written in Chinese (any Han character), else "en": the answer's labels."""
    return "zh" if has_han(query or "") else "en"
