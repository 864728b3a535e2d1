"""The web chat (Gradio): cited answers in the browser. The only module that imports Gradio.

    build_app(helper, feedback_db=None, llm=None) -> gr.Blocks   # the page and its events
    serve(host="127.0.0.1", port=7860, index=None, llm=None)     # `rlhelper serve`, `python ui/app.py`
    start(helper, host, port, feedback_db, llm) -> (app, url)    # non-blocking, for tests and the load test

The handlers are plain functions (`respond`, `record_vote`, `add_comment`)
taking the Helper / FeedbackStore explicitly, so tests call them without a
browser or a server. All HTML comes from render.py, which escapes document and
user text before adding markup; the chatbot shows that HTML as is
(render_markdown=False) and Gradio's sanitiser runs on top of it.

Privacy: binds 127.0.0.1 by default, never a Gradio share link (a public tunnel), analytics, run history
and monitoring off, no extra file paths served, system fonts only (no Google Fonts).

What a visitor can make the server do (anyone who reaches the port: there is no authentication):
- LLM answers go only to the endpoints the operator configured at start (`rlhelper serve --llm ...`);
  a visitor picks one by name or none, never a URL, and a key goes only to the endpoint it was
  configured with. With none configured the page offers no LLM and the API refuses one.
- Every event the page fires can also be called by hand (Gradio hides the non-`ask` ones from its API
  docs and clients, not from raw HTTP), so each handler checks its arguments: type, length, allowed
  values. A bad one is refused with its reason (HTTP 400 for the direct events).
- One answer may take `time_budget` seconds; past it the visitor gets a notice and the worker is
  abandoned (its result dropped). Answers share a pool of CONCURRENCY workers and a queue of at most
  QUEUE_SIZE waiting requests, so one slow question does not stop the others.
- Votes and comments are bounded per client and in total (feedback.py).
"""

from __future__ import annotations

import os

# Before gradio is imported: its analytics read this at import time.
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
# Gradio's queue summarises every finished event with pandas for the monitoring page,
# which is off here; summarising rarely and over few events saves CPU on each answer.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "1000")

import dataclasses  # noqa: E402
import importlib.util  # noqa: E402
import ipaddress  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from urllib.parse import urlencode, urlsplit  # noqa: E402

import gradio as gr  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402

from ..answer import html as render  # noqa: E402
from ..answer import smalltalk
from ..answer.extractive import FRAMEWORK_NAMES, render_markdown
from ..answer.language import language_of  # noqa: E402
from ..answer.model import Answer  # noqa: E402
from ..answer.sources import collections_in_words  # noqa: E402
from ..errors import ConfigError, RlhelperError  # noqa: E402
from ..measure.feedback import MAX_COMMENT_CHARS, FeedbackFull, FeedbackRefused, FeedbackStore, WriteLimiter  # noqa: E402

log = logging.getLogger(__name__)

TOP_K = 5
STREAM_PAUSE = 0.02  # seconds between streamed answer parts: visibly streams, costs no CPU
CONCURRENCY = 4  # answers computed at once; more only queues on a 2-core laptop
QUEUE_SIZE = 128  # requests waiting for a worker; beyond it Gradio answers "the queue is full"
TIME_BUDGET = 60.0  # seconds one answer may take (an LLM-written one included) before it is cut
MAX_MESSAGE_CHARS = 2_000_000  # a pasted log beyond this is refused (the search reads its tail anyway)
MAX_HISTORY = 2_000  # messages in the chat a question is sent with (1,000 questions)
MAX_HTML_CHARS = 2_000_000  # one chat message sent to the browser; a bigger one is shown without whole entries
NO_LLM = ""  # the LLM choice that quotes the docs only
LINK_MAX_CHARS = 2000  # a longer message (a whole log) is linked by the error lines it was searched by
TITLE = "rlhelper — RL training troubleshooting"

EXAMPLES = [
    {"display_text": "Weight sync times out between the trainer and SGLang. How do I fix it?",
     "text": "Weight sync times out between the trainer and SGLang. How do I fix it?"},
    {"display_text": "rollout 阶段显存不足怎么办？",
     "text": "rollout 阶段显存不足怎么办？"},
    {"display_text": "Traceback … torch.OutOfMemoryError: CUDA out of memory",
     "text": (
         "Traceback (most recent call last):\n"
         '  File "/workspace/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 248, in generate_sequences\n'
         "    outputs = self.inference_engine.generate(prompts=vllm_inputs, sampling_params=self.sampling_params)\n"
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
         "of 79.15 GiB of which 1.02 GiB is free."
     )},
]


# -- handlers (plain functions) ---------------------------------------------------------


def new_session() -> dict:
    """Per-browser-session state: what each answer was (for votes), the last vote, and the last
    answer that found an entry (a follow-up is read with its question)."""
    return {"answers": {}, "last_vote": None, "previous": None}


def linked_question(params: dict) -> tuple[str, str, str]:
    """(question, framework, collection) from a link's query string (?q=...&framework=verl):
    a question someone shared, asked as the page opens (which drops filters its index lacks)."""
    def one(name: str) -> str:
        value = params.get(name) or ""
        return str(value[0] if isinstance(value, list) else value).strip()

    return one("q")[:LINK_MAX_CHARS], one("framework"), one("collection")


def question_link(question: str, framework: str | None, collection: str | None) -> str:
    """The query string that asks `question` again with the same filters: a link to share."""
    params = {"q": question, "framework": framework, "collection": collection}
    return "?" + urlencode({key: value for key, value in params.items() if value})


def filter_value(choice: str | None) -> str | None:
    """Dropdown value -> ask() filter: "" (All) means no filter."""
    return choice or None


class RequestError(ValueError):
    """An argument the page never sends (a hand-made API call): refused with its reason."""


def llm_endpoints(settings: Sequence | None) -> dict:
    """The LLM settings the operator configured, by the name a visitor picks them by: the model's
    name, or `model (host)` when two endpoints serve the same model. Never a URL from the page."""
    named: dict = {}
    for one in settings or ():
        name = one.model if one.model not in named else f"{one.model} ({urlsplit(one.base_url).netloc})"
        named[name] = one
    return named


def _text_arg(value, what: str, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RequestError(f"{what} must be text, not {type(value).__name__}")
    if len(value) > limit:
        raise RequestError(f"{what} is {len(value):,} characters long; the limit is {limit:,}")
    return value


def checked_ask(helper, endpoints: dict, message, history, framework, collection, llm_name):
    """The arguments of one question, checked as the page would send them: (message, history,
    framework, collection, LLM settings or None). RequestError for anything else."""
    message = _text_arg(message, "the message", MAX_MESSAGE_CHARS)
    if history is not None and not isinstance(history, list):
        raise RequestError("the chat history must be a list of messages")
    if history and len(history) > MAX_HISTORY:
        raise RequestError(f"the chat holds {len(history):,} messages; the limit is {MAX_HISTORY:,}: "
                           "start a new chat (the bin icon)")
    filters = []
    for value, allowed, what in ((framework, helper.frameworks, "framework"),
                                 (collection, helper.collections, "collection")):
        value = _text_arg(value, f"the {what}", 200)
        if value and value not in allowed:
            raise RequestError(f"unknown {what} {value!r}: this index has {', '.join(allowed) or 'none'}")
        filters.append(value)
    name = _text_arg(llm_name, "the LLM choice", 500)
    if name and name not in endpoints:
        if not endpoints:
            raise RequestError("this server offers no LLM answers (its operator starts it with "
                               "`rlhelper serve --llm ...` to offer one)")
        raise RequestError(f"this server offers no LLM named {name!r}: pick one of {', '.join(map(repr, endpoints))}")
    return message, history, *filters, endpoints.get(name) if name else None


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


def cut_html(budget: float) -> str:
    return render.error_html(
        f"rlhelper stopped working on this answer after {budget:g} s, the time one answer may take on this "
        "server. Try a shorter or more specific question, or a framework filter.")


def _bounded_html(answer: Answer, deadline: float, entry_for) -> str:
    """The final answer's HTML, made in time; without whole entries when it would be too big to send."""
    html = within(deadline, render.answer_html, answer, entry_for=entry_for)
    if len(html) > MAX_HTML_CHARS:  # the sources without their whole entries, no related ones
        html = within(deadline, render.answer_html, dataclasses.replace(answer, hits=[]), entry_for=None)
    if len(html) > MAX_HTML_CHARS:
        html = render.error_html(f"This answer is too large to show ({len(html) / 1e6:.1f} MB of HTML). "
                                 "Ask `rlhelper ask` in a terminal, or narrow the question.")
    return html


def respond(helper, message: str, history: list | None, framework: str | None = None,
            collection: str | None = None, session: dict | None = None,
            llm=None, *, budget: float = TIME_BUDGET) -> Iterator[tuple[list, dict]]:
    """Answer one chat message: yields (history, session) as the answer grows.

    The user's message goes in first, then the answer streams in part by part,
    then the final message adds the sources (or, when nothing matches, the
    related entries). Errors become one readable message, never a traceback.
    `llm`: the LLMSettings of a configured endpoint to write the answer, or None.
    Past `budget` seconds the answer is cut with a notice (an LLM answer falls
    back to the extractive one).
    """
    deadline = time.monotonic() + budget
    history = list(history or [])
    session = session if session is not None else new_session()
    query = message or ""
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
    history.append(_message("assistant", '<div class="rl-answer rl-muted">Searching the docs…</div>'))
    yield history, session
    try:
        answer = within(deadline, helper.ask, query, k=TOP_K, framework=filter_value(framework),
                        collection=filter_value(collection), previous=session.get("previous"))
    except OutOfTime:
        log.warning("answering %r took more than %g s: cut", query[:200], budget)
        history[-1] = _message("assistant", cut_html(budget))
        yield history, session
        return
    except RlhelperError as err:
        history[-1] = _message("assistant", render.error_html(str(err)))
        yield history, session
        return
    except Exception:  # a bug: the traceback goes to the server log, the user gets one line
        log.exception("answering %r failed", query[:200])
        history[-1] = _message("assistant", render.error_html(
            "Something went wrong inside rlhelper; the details are in the server log."))
        yield history, session
        return

    if not answer.abstained:
        session["previous"] = answer
    # Nothing within the filters: the page offers to ask again without them.
    session["filtered_miss"] = query if answer.abstained and (filter_value(framework) or filter_value(collection)) \
        else None
    entry_for = getattr(helper, "entry", None)
    # A follow-up is kept as what was searched: self-contained, for a vote's eval item and the link.
    asked_alone = query if answer.follow_up_of is None else answer.normalized_query
    link = question_link(asked_alone if len(asked_alone) <= LINK_MAX_CHARS else answer.normalized_query,
                         filter_value(framework), filter_value(collection))
    # Under the user's own message, not in the answer: the answer holds doc text only.
    history[-2] = _message("user", render.user_html(query) + render.searched_html(answer) + render.link_html(link))
    if llm is not None and answer.abstained:
        answer = dataclasses.replace(answer, notices=[
            *answer.notices, "No entry matched, so the LLM was not asked: it would have nothing to ground an answer in."])
    try:
        for partial in within(deadline, lambda: list(_streamed_bodies(answer))):
            html = within(deadline, render.answer_html, answer, text=partial, final=False)
            if len(html) > MAX_HTML_CHARS:  # too big to send for a moment's view: the final one comes
                break
            history[-1] = _message("assistant", html)
            yield history, session
            time.sleep(STREAM_PAUSE)

        if llm is not None and not answer.abstained:
            steps = _llm_steps(answer, llm)
            try:
                while (step := within(deadline, next, steps, None)) is not None:
                    html, final_answer = step
                    if final_answer is not None:
                        answer = final_answer
                    if html:
                        history[-1] = _message("assistant", html)
                        yield history, session
            except OutOfTime:  # the extractive answer, made with a few more seconds
                answer = dataclasses.replace(answer, notices=[*answer.notices, (
                    f"The LLM did not finish within {budget:g} s, the time one answer may take on this server; "
                    "showing the extractive answer.")])
                deadline = time.monotonic() + min(10.0, budget)

        html = _bounded_html(answer, deadline, entry_for)
    except OutOfTime:
        log.warning("answering %r took more than %g s: cut", query[:200], budget)
        history[-1] = _message("assistant", cut_html(budget))
        yield history, session
        return
    history[-1] = _message("assistant", html)
    session["answers"][len(history) - 1] = {
        "query": asked_alone,
        "answer": answer.text,
        "entry_ids": [c.entry_id for c in answer.citations],
        "row": None,
        "learn": learnable(answer),
    }
    yield history, session


def _streamed_bodies(answer: Answer) -> Iterator[str]:
    """The answer text growing one part (symptom / cause / fix block) at a time."""
    if answer.abstained or len(answer.parts) < 2:
        return
    for i in range(1, len(answer.parts)):
        yield render_markdown(answer.parts[:i], answer.citations, language_of(answer.query))


# -- the optional LLM hook -------------------------------------------------------------------
# "Write the answer with an LLM": an OpenAI-compatible server the operator configured at start
# rewrites the answer from the same hits (rlhelper.answer.llm checks its citations). Any failure keeps
# the extractive answer and says why. The page never names a URL: see the module docstring.


def llm_available() -> bool:
    return importlib.util.find_spec("rlhelper.answer.llm") is not None


def _llm_steps(answer: Answer, settings) -> Iterator[tuple[str, Answer | None]]:
    """(html, None) while the model writes; finally (html, merged Answer)."""
    def kept(notice: str) -> Answer:
        return dataclasses.replace(answer, notices=[*answer.notices, notice])

    if not llm_available():
        yield "", kept("LLM answers are not available in this install; showing the extractive answer.")
        return
    from ..answer import llm as llm_mod
    from ..answer.extractive import citation_for

    try:
        stream = llm_mod.LLMStream.for_answer(answer, settings)
    except RlhelperError as err:
        yield "", kept(f"{err} Showing the extractive answer.")
        return
    # While streaming, [n] numbers the hits as the model was given them.
    numbered = dataclasses.replace(
        answer, notices=[], citations=[citation_for(h, i) for i, h in enumerate(answer.hits, start=1)])
    try:
        for text in stream.growing():
            yield render.answer_html(numbered, text=text, final=False), None
        final = stream.answer
    except Exception:  # a bug, not an outage (those come back as a fallback notice)
        log.exception("LLM answer failed")
        yield "", kept("The LLM answer failed (details in the server log); showing the extractive answer.")
        return
    yield render.answer_html(final), final


# -- votes ------------------------------------------------------------------------------------


_VOTES = {"Like": 1, "Dislike": -1, "": None}  # what the page sends; "": the vote was taken back
TOO_MANY = "Too many votes and comments from you in the last minute: wait a minute, then try again."


def _vote_of(liked) -> int | None:
    if liked is True:
        return 1
    if liked is False:
        return -1
    if liked is None or (isinstance(liked, str) and liked in _VOTES):
        return _VOTES.get(liked)
    raise RequestError(f"a vote is 'Like', 'Dislike' or '' (taken back), not {str(liked)[:50]!r}")


def _position_of(index) -> int:
    """The history position a vote names: an int, or [row, column] as Gradio sends it."""
    position = index[0] if isinstance(index, list | tuple) and 1 <= len(index) <= 2 else index
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < 1_000_000:
        raise RequestError(f"a vote names a message by its position in the chat, not {str(index)[:50]!r}")
    return position


def record_vote(store: FeedbackStore, session: dict | None, index, liked,
                allowed: Callable[[], bool] = lambda: True) -> tuple[dict, str]:
    """Store (or change, or take back) a thumbs up/down on the answer at `index` of the history.
    RequestError for a payload the page cannot send; `allowed()` says whether this client may write now."""
    session = session if session is not None else new_session()
    position, vote = _position_of(index), _vote_of(liked)
    turn = session["answers"].get(position)
    if turn is None:
        return session, "Only answers can be voted on."
    if not allowed():
        return session, TOO_MANY
    if vote is None:
        if turn["row"] is not None:
            store.remove(turn["row"])
            turn["row"] = None
        session["last_vote"] = None
        return session, "Vote removed."
    try:
        if turn["row"] is None:
            turn["row"] = store.record(turn["query"], turn["answer"], turn["entry_ids"], vote)
        else:
            store.change_vote(turn["row"], vote)
    except FeedbackFull as err:
        log.warning("vote not stored: %s", err)
        return session, "Votes are not being recorded right now (the server's feedback store is full). Sorry."
    session["last_vote"] = position
    thanks = "helpful" if vote > 0 else "not helpful"
    return session, f"Thanks: answer marked {thanks}. Add a comment below if you like (optional)."


def learnable(answer: Answer) -> dict | None:
    """What a vote on `answer` teaches the user's question bank: what it searched, and its cited
    lead entry (userbank.py); None when it found no entry."""
    from ..index.userbank import entry_key

    lead = next((h.entry for h in answer.hits if answer.citations and h.entry.id == answer.citations[0].entry_id),
                None)
    if answer.abstained or lead is None:
        return None
    return {"question": answer.normalized_query, "entry": entry_key(lead)}


def learn_from_vote(helper, session: dict | None, index, liked) -> str:
    """A thumbs-up adds the answer's question to the user's bank for its lead entry, a thumbs-down
    demotes that entry for it, taking the vote back removes what it added. Returns a note for
    the status line ("" when there is nothing to say)."""
    bank = getattr(helper, "user_bank", None)
    position = index[0] if isinstance(index, list | tuple) else index
    turn = (session or {}).get("answers", {}).get(int(position)) if position is not None else None
    taught = turn.get("learn") if turn else None
    if bank is None or not taught:
        return ""
    vote = _vote_of(liked)
    try:
        if vote is None:
            bank.forget(taught["question"], taught["entry"])
            return ""
        bank.add(taught["question"], taught["entry"], vote, "web")
    except RlhelperError as err:
        log.warning("the vote was not learned: %s", err)
        return f" (Not learned: {err})"
    heading = taught["entry"].get("heading") or "this entry"
    if vote > 0:
        return f" “{render.esc(heading)}” will lead for this question from now on."
    return f" “{render.esc(heading)}” will not lead for this question again."


def add_comment(store: FeedbackStore, session: dict | None, comment: str,
                allowed: Callable[[], bool] = lambda: True) -> tuple[dict, str]:
    """Attach a comment to the answer voted on last. A comment over feedback.MAX_COMMENT_CHARS is
    refused with a message (the page's box stops there); a non-text one is a RequestError."""
    session = session if session is not None else new_session()
    if comment is not None and not isinstance(comment, str):
        raise RequestError(f"a comment is text, not {type(comment).__name__}")
    position = session.get("last_vote")
    turn = session["answers"].get(position) if position is not None else None
    if turn is None or turn["row"] is None:
        return session, "Vote on an answer first (thumbs up or down), then add a comment."
    if not (comment or "").strip():
        return session, "The comment is empty."
    if not allowed():
        return session, TOO_MANY
    try:
        store.set_comment(turn["row"], comment)
    except FeedbackFull as err:
        log.warning("comment not stored: %s", err)
        return session, "Comments are not being recorded right now (the server's feedback store is full). Sorry."
    except FeedbackRefused as err:  # too long: said to the writer, who can shorten it
        text = str(err)
        return session, f"Not saved: {text[0].upper()}{text[1:]}."
    return session, "Comment saved with your vote. Thank you."


# -- the page -------------------------------------------------------------------------------

CSS = """
.gradio-container { max-width: 1040px !important; margin: 0 auto !important; }
#rl-header { padding: 8px 2px 0; }
#rl-header h1 { font-size: 1.7rem; font-weight: 700; margin: 0; letter-spacing: -0.01em; }
#rl-header h1 .rl-mark { color: var(--color-accent); }
#rl-header p { margin: 4px 0 0; color: var(--body-text-color-subdued); font-size: 0.95rem; }
#rl-header .rl-stats { font-size: 0.8rem; margin-top: 2px; }
#rl-filters { gap: 10px; align-items: center; margin: 4px 0 2px; }
.rl-filter-note { font-size: 0.8rem; color: var(--body-text-color-subdued); }
#rl-status { min-height: 0; font-size: 0.85rem; color: var(--body-text-color-subdued); }
.rl-answer { font-size: 0.95rem; line-height: 1.55; white-space: normal; }
.rl-answer p { margin: 0.35em 0; }
.rl-answer h3, .rl-answer h4, .rl-answer h5, .rl-answer h6 { margin: 0.8em 0 0.3em; line-height: 1.3;
  font-weight: 700; }
.rl-answer h3 { font-size: 1.08rem; } .rl-answer h4 { font-size: 1.0rem; } .rl-answer h5 { font-size: 0.95rem; }
.rl-body > h3:first-child, .rl-body > h4:first-child, .rl-body > h5:first-child { margin-top: 0.1em; }
.rl-answer ul, .rl-answer ol { margin: 0.3em 0 0.3em 1.3em; padding: 0; }
.rl-answer li.rl-sub { margin-left: 1.2em; list-style-type: circle; }
.rl-answer code { font-size: 0.86em; background: var(--background-fill-secondary); padding: 0.05em 0.3em;
  border-radius: 4px; }
.rl-code { position: relative; margin: 0.5em 0; }
.rl-code pre { background: #0f172a; color: #e2e8f0; padding: 12px 14px; padding-top: 26px; border-radius: 8px;
  overflow-x: auto; font-size: 12.5px; line-height: 1.5; margin: 0; white-space: pre; }
.rl-code pre code { background: transparent; padding: 0; color: inherit; font-size: inherit; }
/* A long code line scrolls inside its box; without this it widened the whole page on a phone. */
.rl-code pre, pre.rl-query, pre.rl-table { contain: inline-size; }
.rl-cite-head, .rl-answer h5, .rl-notices { overflow-wrap: anywhere; }
.rl-copy { position: absolute; z-index: 2; top: 5px; right: 6px; font-size: 11px; padding: 1px 9px; border-radius: 5px;
  background: rgba(255,255,255,0.10); color: #e2e8f0; border: 1px solid rgba(255,255,255,0.25); cursor: pointer; }
.rl-copy:hover { background: rgba(255,255,255,0.22); }
.rl-lang { position: absolute; z-index: 2; top: 6px; left: 12px; font-size: 10.5px; color: #94a3b8; text-transform: uppercase;
  letter-spacing: 0.05em; }
.tok-k { color: #c4b5fd; } .tok-s { color: #86efac; } .tok-c { color: #7c8ba1; font-style: italic; }
.tok-n { color: #fdba74; } .tok-e { color: #fca5a5; font-weight: 600; }
.rl-ref { font-size: 0.72em; margin-left: 1px; } .rl-ref a { text-decoration: none; font-weight: 600; }
.rl-sources { border-top: 1px solid var(--border-color-primary); margin-top: 12px; padding-top: 6px; }
.rl-sources-title { font-size: 0.72rem; text-transform: uppercase; letter-spacing: 0.07em; font-weight: 700;
  color: var(--body-text-color-subdued); margin-bottom: 2px; }
.rl-cite { display: flex; gap: 10px; padding: 7px 0; }
.rl-cite + .rl-cite { border-top: 1px dashed var(--border-color-primary); }
.rl-num { flex: none; width: 22px; height: 22px; border-radius: 50%; background: var(--color-accent-soft);
  color: var(--color-accent); font-weight: 700; font-size: 12px; display: flex; align-items: center;
  justify-content: center; margin-top: 1px; }
.rl-dot { background: var(--background-fill-secondary); color: var(--body-text-color-subdued); }
.rl-cite-main { min-width: 0; flex: 1; }
.rl-cite-head { font-weight: 600; font-size: 0.92rem; }
.rl-cite-link { text-decoration: none; }
.rl-cite-link:hover { text-decoration: underline; }
.rl-sep { color: var(--body-text-color-subdued); font-weight: 400; }
.rl-loc { display: block; font-family: var(--font-mono); font-size: 11.5px; color: var(--body-text-color-subdued);
  overflow-wrap: anywhere; }
.rl-coll { text-decoration: underline dotted; cursor: help; }
.rl-file { font-family: var(--font-mono); font-size: 11.5px; margin-top: 4px; }
.rl-details summary { cursor: pointer; font-size: 0.82rem; color: var(--color-accent); margin-top: 3px;
  width: fit-content; }
.rl-entry { border-left: 3px solid var(--color-accent-soft); padding: 2px 12px; margin-top: 6px;
  max-height: 520px; overflow: auto; }
.rl-muted { color: var(--body-text-color-subdued); font-size: 0.85rem; }
.rl-searched { color: var(--body-text-color-subdued); font-size: 0.8rem; margin-bottom: 6px; overflow-wrap: anywhere; }
/* The searched lines hold a pasted log's longest tokens: they wrap anywhere rather than widen a phone's page. */
.rl-searched code { white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-word; }
.rl-link { font-size: 0.75rem; margin-top: 4px; }
.rl-link a { color: var(--body-text-color-subdued); }
.rl-notices { background: #fffbeb; color: #78350f; border: 1px solid #fcd34d; border-radius: 8px;
  padding: 4px 12px; margin-bottom: 8px; font-size: 0.85rem; }
.rl-notices ul { margin: 0.2em 0 0.2em 1.1em; }
.rl-abstain { background: var(--background-fill-secondary); border-left: 4px solid #94a3b8; border-radius: 8px;
  padding: 8px 14px; }
.rl-error { background: #fef2f2; color: #7f1d1d; border-left: 4px solid #ef4444; border-radius: 8px;
  padding: 8px 12px; }
.rl-table-wrap { overflow-x: auto; margin: 0.4em 0; }
.rl-answer table { border-collapse: collapse; font-size: 0.85rem; }
.rl-answer th, .rl-answer td { border: 1px solid var(--border-color-primary); padding: 3px 8px; text-align: left; }
pre.rl-query, pre.rl-table { white-space: pre-wrap; word-break: break-word; font-size: 12px; max-height: 240px;
  overflow: auto; margin: 0; background: transparent; }
.rl-directive { color: var(--body-text-color-subdued); font-size: 0.88rem; }
/* The Clear (trash) button sits in the chat's top corner: the first message starts below it. */
#rl-chat .message-wrap { padding-top: 34px; }
/* The "scroll to the latest" arrow floated over the answer's text; the pane's scrollbar does its job. */
#rl-chat .scroll-down-button-container { display: none !important; }
/* Example prompts are buttons: framed before any hover, close together. */
#rl-chat button.example { border: 1px solid var(--border-color-accent, #a5b4fc) !important;
  background: var(--background-fill-primary) !important; border-radius: 8px; }
#rl-chat button.example:hover { background: var(--color-accent-soft) !important; }
#rl-chat .placeholder-content { gap: 8px; }
#rl-chat .examples { margin-top: 6px; gap: 8px; }
footer { display: none !important; }
"""

# One delegated listener: the copy buttons in answers are plain HTML without handlers.
HEAD = """
<script>
(function () {
  function fallbackCopy(text) {
    var ta = document.createElement("textarea");
    ta.value = text; ta.style.position = "fixed"; ta.style.opacity = "0";
    document.body.appendChild(ta); ta.select();
    try { document.execCommand("copy"); } catch (e) {}
    document.body.removeChild(ta);
  }
  document.addEventListener("click", function (ev) {
    var path = ev.composedPath ? ev.composedPath() : [ev.target], btn = null;
    for (var i = 0; i < path.length; i++) {
      if (path[i].classList && path[i].classList.contains("rl-copy")) { btn = path[i]; break; }
    }
    if (!btn) return;
    ev.preventDefault(); ev.stopPropagation();
    var code = btn.parentElement && btn.parentElement.querySelector("code");
    if (!code) return;
    var text = code.textContent;
    var done = function () { btn.textContent = "Copied"; setTimeout(function () { btn.textContent = "Copy"; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    } else { fallbackCopy(text); done(); }
  }, true);
  // Gradio labels each chat message with its raw HTML ("bot's message: <div class=...");
  // a screen reader would read the markup. Label it with its text instead.
  var WHO = {bot: "Answer: ", user: "Your message: "};
  function relabel(el) {
    var who = WHO[el.getAttribute("data-testid")];
    if (!who) return;
    var text = who + (el.innerText || el.textContent || "").replace(/\\s+/g, " ").trim();
    if (el.getAttribute("aria-label") !== text) el.setAttribute("aria-label", text);  // unchanged: no new mutation
  }
  // A new question: once its answer starts, scroll the chat so the question is at the top and the
  // answer reads from its start (the chat does not follow the stream down to the last related entry).
  // The question stays pinned there while its answer streams in (the pane can only scroll that far once
  // the answer is long enough), until the final answer is in or the reader scrolls.
  var asked = 0, pinned = null;
  function showNewAnswer() {
    var users = document.querySelectorAll("#rl-chat [data-testid='user']");
    if (users.length < asked) { asked = users.length; pinned = null; return; }  // cleared
    if (users.length > asked) { asked = users.length; pinned = users[users.length - 1]; }
    if (!pinned || !pinned.isConnected) { pinned = null; return; }
    var pane = pinned.closest(".bubble-wrap");
    if (!pane) return;
    pane.scrollTop += pinned.getBoundingClientRect().top - pane.getBoundingClientRect().top - 40;  // below Clear
    var bots = document.querySelectorAll("#rl-chat [data-testid='bot']"), answer = bots[bots.length - 1];
    var after = answer && (pinned.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_FOLLOWING);
    if (after && answer.querySelector(".rl-sources, .rl-abstain, .rl-error, .rl-smalltalk")) pinned = null;
  }
  ["wheel", "touchmove", "keydown"].forEach(function (kind) {
    document.addEventListener(kind, function (ev) {
      if (ev.target && ev.target.closest && ev.target.closest("#rl-chat")) pinned = null;
    }, {passive: true, capture: true});
  });
  new MutationObserver(function () { showNewAnswer(); }).observe(document.documentElement, {subtree: true, childList: true});
  // The box takes focus without scrolling the page; not on a phone, where focus opens the keyboard.
  window.addEventListener("load", function () {
    if (window.innerWidth < 700) return;
    var tries = 0, wait = setInterval(function () {
      var box = document.querySelector("#rl-input textarea");
      if (box || ++tries > 50) clearInterval(wait);
      if (box) box.focus({preventScroll: true});
    }, 100);
  });
  new MutationObserver(function (changes) {
    changes.forEach(function (change) {
      var root = change.target;
      if (root.nodeType !== 1) root = root.parentElement;
      if (!root) return;
      var el = root.closest && root.closest("[data-testid][aria-label]");
      if (el) relabel(el);
      if (root.querySelectorAll) root.querySelectorAll("[data-testid][aria-label]").forEach(relabel);
    });
  }).observe(document.documentElement, {subtree: true, childList: true, characterData: true,
                                        attributes: true, attributeFilter: ["aria-label"]});
})();
</script>
"""

PLACEHOLDER = (
    "### Ask about an RL training problem\n"
    "Paste an error message, a traceback or a question, in English or 中文. "
    "The answer quotes the matching troubleshooting entry and cites the exact section. "
    "A short follow-up (“what about slime?”) is read with your last answered question, and says so."
)


def theme() -> gr.themes.Base:
    # System fonts: the default theme would fetch fonts from Google.
    return gr.themes.Soft(
        primary_hue="indigo",
        neutral_hue="slate",
        font=["ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "sans-serif"],
        font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
    )


class ClientErrorStatus:
    """ASGI middleware: Gradio answers a direct call its handler refused (a gr.Error, whose message it
    sends even with show_error off) with HTTP 500; that is the caller's mistake, so it becomes 400.
    A real server error still answers 500 with {"error": null} (details in the server log)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        held: dict = {}
        body: list[bytes] = []

        async def relay(message):
            if message["type"] == "http.response.start" and message["status"] == 500:
                held["start"] = message
                return
            if "start" not in held or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            data, status = b"".join(body), 500
            try:
                if isinstance(json.loads(data).get("error"), str):
                    status = 400
            except (ValueError, AttributeError):
                pass
            await send({**held["start"], "status": status})
            await send({"type": "http.response.body", "body": data})

        await self.app(scope, receive, relay)


def launch_options(host: str = "127.0.0.1", port: int | None = 7860) -> dict:
    """Keyword arguments for Blocks.launch: local only, private, our look (Gradio 6 takes css/theme here)."""
    return {
        "server_name": host,
        "server_port": port,
        "share": False,
        "inbrowser": False,
        "show_error": False,
        "footer_links": [],
        "run_history": False,  # no per-browser record of questions and answers
        "enable_monitoring": False,
        "ssr_mode": False,
        "mcp_server": False,
        "pwa": False,
        "max_file_size": "1kb",  # the page takes no files; keep the upload route useless
        "app_kwargs": {"middleware": [Middleware(ClientErrorStatus)]},
        "theme": theme(),
        "css": CSS,
        "head": HEAD,
    }


def _header_html(helper) -> str:
    try:
        count = len(helper.entries)
        collections = collections_in_words(helper.collections)
        stats = f"{count:,} entries from {render.esc(collections)} · offline · answers quote the docs verbatim"
    except Exception:  # a helper without these properties (tests): no stats line
        stats = ""
    return (
        '<div id="rl-header"><h1><span class="rl-mark">rl</span>helper</h1>'
        "<p>Troubleshooting for RL post-training of LLMs: verl, SkyRL, slime and RLinf, with SGLang or vLLM "
        "rollouts. Paste an error, a traceback or a question; get the documented fix with numbered citations.</p>"
        f'<p class="rl-stats">{stats}</p></div>'
    )


def reset_feedback():
    """The vote's note, the comment row and box, and the clear-filters offer, as on a fresh page."""
    return "", gr.update(visible=False), "", gr.update(visible=False)


def offer_clear_filters(session):
    return gr.update(visible=bool((session or {}).get("filtered_miss")))


def _choices(label: str, values: list[str]) -> list[tuple[str, str]]:
    """Dropdown choices: "All ..." first, then each value under its docs' spelling (SkyRL, not skyrl)."""
    return [(label, "")] + [(FRAMEWORK_NAMES.get(v, v), v) for v in values]


def _client_keys(request: gr.Request | None) -> tuple[str, ...]:
    """Who a write counts against: the browser session and the address it came from
    (behind a reverse proxy every visitor shares the proxy's address: a bound for them all)."""
    if request is None:
        return ()
    host = getattr(getattr(request, "client", None), "host", None) or "?"
    return (f"session:{getattr(request, 'session_hash', None) or '?'}", f"host:{host}")


def build_app(helper, *, feedback_db: str | Path | None = None, llm: Sequence | None = None,
              time_budget: float = TIME_BUDGET, writes_per_minute: int | None = None) -> gr.Blocks:
    """The chat page for `helper`; votes go to `feedback_db` (default: config.data_dir()/feedback.sqlite3).
    `llm`: the LLMSettings of the endpoints a visitor may have write the answer (none: no LLM option)."""
    store = FeedbackStore(feedback_db)
    endpoints = llm_endpoints(llm)
    limiter = WriteLimiter(**({} if writes_per_minute is None else {"per_minute": writes_per_minute}))

    def refused(err: RequestError) -> gr.Error:
        return gr.Error(f"Refused: {err}.", print_exception=False)

    def ask(message, history, framework, collection, session, llm_name):
        try:
            message, history, framework, collection, settings = checked_ask(
                helper, endpoints, message, history, framework, collection, llm_name)
        except RequestError as err:
            raise refused(err) from None
        yield from respond(helper, message, history, framework, collection, session, settings, budget=time_budget)

    def vote(session, data: gr.EventData, request: gr.Request):
        payload = getattr(data, "_data", None)
        if not isinstance(payload, dict):
            raise refused(RequestError("a vote is an object with index and liked"))
        try:
            session, status = record_vote(store, session, payload.get("index"), payload.get("liked"),
                                          allowed=lambda: limiter.allow(*_client_keys(request)))
        except RequestError as err:
            raise refused(err) from None
        if status.startswith(("Thanks", "Vote removed")):  # recorded: refused or full votes teach nothing
            status += learn_from_vote(helper, session, payload.get("index"), payload.get("liked"))
        return session, status, gr.update(visible=True)

    def comment(session, text, request: gr.Request):
        try:
            session, kept = add_comment(store, session, text, allowed=lambda: limiter.allow(*_client_keys(request)))
        except RequestError as err:
            raise refused(err) from None
        # A refused comment stays in the box, to shorten or send later.
        return session, kept, "" if kept.startswith("Comment saved") else gr.skip()

    def open_link(request: gr.Request):
        question, framework_name, collection_name = linked_question(dict(request.query_params))
        return (question, framework_name if framework_name in helper.frameworks else "",
                collection_name if collection_name in helper.collections else "")

    def ask_linked(message, *rest):
        if message:  # no ?q=: the page opens empty
            yield from ask(message, *rest)
        else:
            yield gr.skip(), gr.skip()

    def example_text(data: gr.EventData):
        value = (getattr(data, "_data", None) or {}).get("value") if isinstance(getattr(data, "_data", None), dict) \
            else None
        text = value.get("text", "") if isinstance(value, dict) else value
        try:
            return _text_arg(text, "an example", MAX_MESSAGE_CHARS)
        except RequestError as err:
            raise refused(err) from None

    with gr.Blocks(title=TITLE, analytics_enabled=False, fill_width=False) as app:
        gr.HTML(_header_html(helper))
        session = gr.State(new_session())
        with gr.Row(elem_id="rl-filters", equal_height=True):
            framework = gr.Dropdown(_choices("All frameworks", helper.frameworks), value="", label="Framework",
                                    show_label=False, container=False, scale=1, min_width=180,
                                    elem_id="rl-framework")
            collection = gr.Dropdown(_choices("All collections", helper.collections), value="",
                                     label="Collection", show_label=False, container=False, scale=1,
                                     min_width=180, elem_id="rl-collection")
            gr.HTML('<div class="rl-filter-note">Filters apply to the next question.</div>', scale=2,
                    min_width=160, padding=False)
        chatbot = gr.Chatbot(
            label="Answers",
            show_label=False,
            height=600,
            render_markdown=False,  # render.py makes the HTML; no second Markdown pass over doc text
            sanitize_html=True,
            allow_tags=False,
            group_consecutive_messages=False,  # one bubble per answer, so a vote points at one answer
            feedback_options=("Like", "Dislike"),
            buttons=[],
            placeholder=PLACEHOLDER,
            examples=EXAMPLES,
            elem_id="rl-chat",
            autoscroll=False,  # the page's script shows each new answer from its start (HEAD)
        )
        textbox = gr.Textbox(
            show_label=False,
            placeholder="Paste an error, a traceback or a question (English or 中文) and press Enter",
            lines=1,  # Enter sends; a pasted traceback keeps its lines and the box grows
            max_lines=12,
            submit_btn="Ask",
            elem_id="rl-input",
            autofocus=False,  # focused by the page's script without scrolling a phone's page down (HEAD)
        )
        status = gr.Markdown("", elem_id="rl-status")
        clear_filters_btn = gr.Button("Clear the filters and ask again", visible=False, size="sm",
                                      elem_id="rl-clear-filters")
        with gr.Row(visible=False, equal_height=True) as comment_row:
            comment_box = gr.Textbox(show_label=False, placeholder="Optional comment on your last vote",
                                     max_length=MAX_COMMENT_CHARS, scale=5, elem_id="rl-comment")
            comment_btn = gr.Button("Save comment", scale=1, size="sm", elem_id="rl-comment-save")
        # The endpoints the operator configured, by name; "" quotes the docs. Without any the choice is
        # hidden and accepts only "", so the `ask` API keeps one shape and refuses an LLM.
        llm_choices = [("Off: quote the docs", NO_LLM)] + [(name, name) for name in endpoints]
        with gr.Accordion("Write the answer with an LLM (optional)", open=False, elem_id="rl-llm",
                          visible=bool(endpoints)):
            gr.Markdown(
                "An OpenAI-compatible model set up by whoever runs this server writes a short answer from "
                "the retrieved entries; rlhelper checks its citations and flags commands found in no source. "
                "When the model finds no answer in the entries, you get \"No matching entry\". Any failure "
                "keeps the extractive answer."
                + ("" if llm_available() else "\n\n*Not available in this install.*")
            )
            llm_choice = gr.Radio(llm_choices, value=NO_LLM, label="Who writes the answer", show_label=False,
                                  interactive=llm_available(), elem_id="rl-use-llm")

        settings = [chatbot, framework, collection, session, llm_choice]
        quiet = {"queue": False, "show_progress": "hidden", "api_visibility": "private"}
        outputs = [chatbot, session]
        # Every way of asking shares one pool of CONCURRENCY workers (concurrency_id), so a question
        # from a link or an example cannot take more than the page's share.
        answering = {"concurrency_limit": CONCURRENCY, "concurrency_id": "ask", "show_progress": "hidden"}
        # The message moves to a hidden box and the input is emptied at once, before the answer:
        # cleared by the answer's own updates, it lost what the user had started typing meanwhile.
        # The hidden box is also what the `ask` API endpoint takes as its message.
        asked = gr.Textbox(visible=False)
        textbox.submit(None, [textbox], [asked, textbox], js="(text) => [text, '']", **quiet).then(  # in the browser
            ask, [asked, *settings], outputs, api_name="ask", **answering).then(
            offer_clear_filters, [session], [clear_filters_btn], **quiet)
        picked = gr.State("")  # an example's text goes straight to the answer, not through the box
        chatbot.example_select(example_text, None, [picked], **quiet).then(
            ask, [picked, *settings], outputs, api_visibility="private", **answering).then(
            offer_clear_filters, [session], [clear_filters_btn], **quiet)
        # A question's link (?q=..., under each question) asks it as the page opens.
        linked = gr.State("")
        app.load(open_link, None, [linked, framework, collection], **quiet).then(
            ask_linked, [linked, *settings], outputs, api_visibility="private", **answering)
        chatbot.clear(new_session, None, [session], queue=False, api_visibility="private")
        # A vote's note and comment box belong to the answer voted on: a new question or Clear removes them.
        feedback_parts = [status, comment_row, comment_box, clear_filters_btn]
        for event in (textbox.submit, chatbot.example_select, chatbot.clear):
            event(reset_feedback, None, feedback_parts, **quiet)
        again = gr.State("")
        clear_filters_btn.click(lambda s: ("", "", (s or {}).get("filtered_miss") or "", gr.update(visible=False)),
                                [session], [framework, collection, again, clear_filters_btn], **quiet).then(
            ask_linked, [again, *settings], outputs, api_visibility="private", **answering)
        chatbot.like(vote, [session], [session, status, comment_row], queue=False, api_visibility="private")
        comment_box.submit(comment, [session, comment_box], [session, status, comment_box], queue=False,
                           api_visibility="private")
        comment_btn.click(comment, [session, comment_box], [session, status, comment_box], queue=False,
                          api_visibility="private")
    app.queue(default_concurrency_limit=CONCURRENCY, max_size=QUEUE_SIZE)
    return app


# -- running it -----------------------------------------------------------------------------


def _warm_up(helper) -> None:
    """Load the embedding model once before the first visitor (and before many threads race to),
    and matplotlib: Gradio imports it on the event loop around the first event (to pin its
    backend), which stalled every open request for 0.6 s under load."""
    try:
        helper.ask("CUDA out of memory", k=1)
    except RlhelperError:
        pass
    try:
        import matplotlib

        matplotlib.get_backend()
    except ImportError:
        pass


def is_loopback(host: str, port: int | None = None) -> bool:
    """Whether binding `host` keeps the server on this machine; ConfigError when it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as err:
        raise ConfigError(f"--host {host!r} cannot be resolved ({getattr(err, 'strerror', None) or err}): pass an "
                          "address such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface).") from None
    return all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def exposure_warning(host: str, port: int, llm: Sequence | None, feedback_path: Path,
                     writes_per_minute: int) -> str:
    """What `serve` prints when it binds beyond loopback: who can reach it, and what they can use."""
    lines = [f"Warning: serving on {host}:{port}, reachable from other machines, with no authentication: anyone "
             "who reaches this port can ask questions, have the LLM below answer, and vote."]
    endpoints = llm_endpoints(llm)
    for name, one in endpoints.items():
        key = (f"the key in ${one.api_key_env}" if os.environ.get(one.api_key_env)
               else f"no key (${one.api_key_env} is unset)")
        lines.append(f"  LLM: visitors may have {name!r} at {one.base_url} write answers; {key} goes there only.")
    if not endpoints:
        lines.append("  LLM: off (`rlhelper serve --llm --llm-base-url URL --llm-model NAME` offers one).")
    lines.append(f"  Feedback: votes and comments are stored in {feedback_path} "
                 f"(at most {writes_per_minute} writes a minute per visitor).")
    lines.append("  Put it behind a reverse proxy with authentication: README, \"Serving beyond this machine\".")
    return "\n".join(lines)


def start(helper, host: str = "127.0.0.1", port: int | None = None, *, feedback_db=None, llm: Sequence | None = None,
          time_budget: float = TIME_BUDGET, writes_per_minute: int | None = None) -> tuple[gr.Blocks, str]:
    """Launch in a background thread; returns (app, local URL). `app.close()` stops it."""
    is_loopback(host, port)  # an unresolvable host says so, not Gradio's "Cannot find empty port"
    app = build_app(helper, feedback_db=feedback_db, llm=llm, time_budget=time_budget,
                    writes_per_minute=writes_per_minute)
    _warm_up(helper)
    try:
        # quiet: Gradio's own banner suggests share=True, a public link this app never makes.
        app.launch(prevent_thread_lock=True, quiet=True, **launch_options(host, port))
    except OSError as err:
        raise ConfigError(f"Cannot serve on {host}:{port} ({err}): pass another --port.") from err
    return app, app.local_url.rstrip("/")


def serve(host: str = "127.0.0.1", port: int = 7860, index=None, *, feedback_db=None, llm: Sequence | None = None,
          time_budget: float = TIME_BUDGET) -> None:
    """Serve the chat until interrupted (`rlhelper serve`). `llm`: the LLMSettings visitors may use."""
    from ..api import Helper
    from ..measure.feedback import WRITES_PER_MINUTE

    loopback = is_loopback(host, port)
    helper = Helper.load(index)
    app, url = start(helper, host, port, feedback_db=feedback_db, llm=llm, time_budget=time_budget)
    if not loopback:
        print(exposure_warning(host, port, llm, FeedbackStore(feedback_db).path, WRITES_PER_MINUTE),
              file=sys.stderr, flush=True)
    llm_note = f"; LLM answers by {', '.join(map(repr, llm_endpoints(llm)))}" if llm else ""
    print(f"rlhelper web chat on {url} ({len(helper.entries):,} entries{llm_note}; Ctrl+C stops it)", flush=True)
    app.block_thread()
