"""The LLM-written answer on the page ("Write the answer with an LLM").

An OpenAI-compatible server the operator configured at start writes the answer from the same
entries (Helper.write checks its citations and words every fallback); this module only turns
what it streams into the chat's HTML. The page never names a URL: see server.py.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator

from ..answer import html as render
from ..answer.llm_client import client_installed
from ..answer.model import Answer
from ..errors import RlhelperError

log = logging.getLogger(__name__)


def llm_available() -> bool:
    """Whether the page may offer LLM answers: the client library is installed."""
    return client_installed()


def _with_notice(answer: Answer, notice: str) -> Answer:
    return dataclasses.replace(answer, notices=[*answer.notices, notice])


def written_steps(helper, answer: Answer, settings) -> Iterator[tuple[str, Answer | None]]:
    """(html, None) while the model writes; finally ("" or html, the Answer to show)."""
    try:
        writing = helper.write(answer, settings)
    except RlhelperError as err:  # the llm extra is missing
        yield "", _with_notice(answer, f"{err} Showing the extractive answer.")
        return
    if not writing.asked:  # no entry to ground it in: the answer as found, saying so
        yield "", writing.answer
        return
    try:
        for text in writing.growing():
            yield render.answer_html(writing.draft, text=text, final=False), None
        final = writing.answer
    except Exception:  # a bug, not an outage (those come back as a fallback notice)
        log.exception("LLM answer failed")
        yield "", _with_notice(answer, "The LLM answer failed (details in the server log); showing the extractive answer.")
        return
    yield render.answer_html(final), final


def out_of_time(answer: Answer, budget: float) -> Answer:
    """The extractive answer, saying the LLM ran past the server's time for one answer."""
    return _with_notice(answer, f"The LLM did not finish within {budget:g} s, the time one answer may take on this "
                                "server; showing the extractive answer.")
