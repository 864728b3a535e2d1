"""One question answered in the chat: `respond` yields the chat as the answer grows, within the
answer's time budget, and keeps in the browser session what a vote on it will need.

Errors become one readable message, never a traceback. All HTML comes from answer/html.py, which
escapes document and user text before adding markup.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator

from ..answer import html as render
from ..answer import smalltalk
from ..answer.extractive import render_markdown
from ..answer.language import language_of
from ..answer.model import Answer
from ..catalogue import Phrase, say
from ..errors import RlhelperError
from .arguments import LINK_MAX_CHARS, filter_value, question_link
from .llm_view import out_of_time, written_steps
from .session import MAX_FOLLOWED_CHARS, kept_for_follow_up, new_session, remember

log = logging.getLogger(__name__)

TOP_K = 5
STREAM_PAUSE = 0.02  # seconds between streamed answer parts: visibly streams, costs no CPU
TIME_BUDGET = 60.0  # seconds one answer may take (an LLM-written one included) before it is cut
MAX_HTML_CHARS = 2_000_000  # one chat message sent to the browser; a bigger one is shown without whole entries


def _message(role: str, html: str) -> dict:
    return {"role": role, "content": html}


class OutOfTime(Exception):
    """The answer's time budget ran out."""


def within(deadline: float, fn: Callable, *args, **kwargs):
    """fn(*args, **kwargs) in a worker thread; OutOfTime when it has not returned by `deadline`
    (time.monotonic()). A Python thread cannot be stopped: a late one finishes in the background
    and its result is dropped, but the request (and its place in the queue) is free at once."""
    box: dict = {}
    done = threading.Event()

    def work():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, daemon=True, name="rlhelper-answer").start()
    if not done.wait(max(0.0, deadline - time.monotonic())):
        raise OutOfTime
    if "error" in box:
        raise box["error"]
    return box["value"]


def cut_html(budget: float, lang: str = "en") -> str:
    return render.error_html(Phrase("error.out_of_time", budget=budget), lang)


def _bounded_html(answer: Answer, deadline: float, entry_for) -> str:
    """The final answer's HTML, made in time; without whole entries when it would be too big to send."""
    html = within(deadline, render.answer_html, answer, entry_for=entry_for)
    if len(html) > MAX_HTML_CHARS:  # the sources without their whole entries, no related ones
        html = within(deadline, render.answer_html, dataclasses.replace(answer, hits=[]), entry_for=None)
    if len(html) > MAX_HTML_CHARS:
        html = render.error_html(Phrase("error.too_large", mb=len(html) / 1e6), language_of(answer.query))
    return html


def respond(helper, message: str, history: list | None, framework: str | None = None,
            collection: str | None = None, session: dict | None = None,
            llm=None, *, budget: float = TIME_BUDGET, own_votes=None) -> Iterator[tuple[list, dict]]:
    """Answer one chat message: yields (history, session) as the answer grows.

    The user's message goes in first, then the answer streams in part by part,
    then the final message adds the sources (or, when nothing matches, the
    related entries). Errors become one readable message, never a traceback.
    `llm`: the LLMSettings of a configured endpoint to write the answer, or None.
    Past `budget` seconds the answer is cut with a notice (an LLM answer falls
    back to the extractive one). `own_votes`: the visitor's own votes (visitors.py), for this
    visitor's search alone.
    """
    deadline = time.monotonic() + budget
    history = list(history or [])
    session = session if session is not None else new_session()
    query = message or ""
    lang = language_of(query)  # of everything rlhelper says around the answer
    if not query.strip():
        history.append(_message("assistant", render.error_html(
            "The query is empty: paste an error message, a traceback or a question.")))
        yield history, session
        return
    history.append(_message("user", render.user_html(query)))
    if (courtesy := smalltalk.reply(query)) is not None:  # "thanks": a word back, no search, same topic kept
        history.append(_message("assistant", f'<div class="rl-answer rl-smalltalk"><p>{render.esc(courtesy)}</p></div>'))
        yield history, session
        return
    history.append(_message("assistant", f'<div class="rl-answer rl-muted">{render.esc(say("answer.searching", lang))}</div>'))
    yield history, session
    try:
        answer = within(deadline, helper.ask, query, k=TOP_K, framework=filter_value(framework),
                        collection=filter_value(collection), previous=session.get("previous"), own_votes=own_votes)
    except OutOfTime:
        log.warning("answering %r took more than %g s: cut", query[:200], budget)
        history[-1] = _message("assistant", cut_html(budget, lang))
        yield history, session
        return
    except RlhelperError as err:
        history[-1] = _message("assistant", render.error_html(str(err), lang))
        yield history, session
        return
    except Exception:  # a bug: the traceback goes to the server log, the user gets one line
        log.exception("answering %r failed", query[:200])
        history[-1] = _message("assistant", render.error_html(Phrase("error.bug"), lang))
        yield history, session
        return

    # What a follow-up reads with: the last question searched, answered or not ("what about slime?"
    # after a no-match asks that question of slime's docs).
    session["previous"] = kept_for_follow_up(answer)
    # Nothing within the filters: the page offers to ask again without them (a long log by what was
    # searched in it, which is what a search of it finds again).
    again = query if len(query) <= MAX_FOLLOWED_CHARS else answer.normalized_query[:MAX_FOLLOWED_CHARS]
    session["filtered_miss"] = again if answer.abstained and (filter_value(framework) or filter_value(collection)) \
        else None
    # A follow-up is kept as what was searched: self-contained, for a vote's eval item and the link.
    asked_alone = query if answer.follow_up_of is None else answer.normalized_query
    link = question_link(asked_alone if len(asked_alone) <= LINK_MAX_CHARS else answer.normalized_query,
                         filter_value(framework), filter_value(collection))
    # Under the user's own message, not in the answer: the answer holds doc text only.
    history[-2] = _message("user", render.user_html(query) + render.searched_html(answer)
                           + render.link_html(link, lang))
    try:
        for partial in within(deadline, lambda: list(_streamed_bodies(answer))):
            html = within(deadline, render.answer_html, answer, text=partial, final=False)
            if len(html) > MAX_HTML_CHARS:  # too big to send for a moment's view: the final one comes
                break
            history[-1] = _message("assistant", html)
            yield history, session
            time.sleep(STREAM_PAUSE)

        if llm is not None:
            steps = written_steps(helper, answer, llm)
            try:
                while (step := within(deadline, next, steps, None)) is not None:
                    html, final_answer = step
                    if final_answer is not None:
                        answer = final_answer
                    if html:
                        history[-1] = _message("assistant", html)
                        yield history, session
            except OutOfTime:  # the extractive answer, made with a few more seconds
                answer = out_of_time(answer, budget)
                deadline = time.monotonic() + min(10.0, budget)

        html = _bounded_html(answer, deadline, helper.entry)
    except OutOfTime:
        log.warning("answering %r took more than %g s: cut", query[:200], budget)
        history[-1] = _message("assistant", cut_html(budget, lang))
        yield history, session
        return
    history[-1] = _message("assistant", html)
    filters = ", ".join(f"{name} {value}" for name, value in (("framework", filter_value(framework)),
                                                               ("collection", filter_value(collection))) if value)
    remember(session, len(history) - 1, asked_alone, answer, filters)
    yield history, session


def _streamed_bodies(answer: Answer) -> Iterator[str]:
    """The answer text growing one part (symptom / cause / fix block) at a time."""
    if answer.abstained or len(answer.parts) < 2:
        return
    for i in range(1, len(answer.parts)):
        yield render_markdown(answer.parts[:i], answer.citations, language_of(answer.query))
