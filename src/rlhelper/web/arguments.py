"""What a visitor sends, checked: the page's events can also be called by hand (Gradio hides the
non-`ask` ones from its API docs and clients, not from raw HTTP), so every argument is checked
for type, length and allowed values, and a bad one is refused with its reason (RequestError).

Also the question links: a question asked again from its query string (?q=...&framework=verl).
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode, urlsplit

MAX_MESSAGE_CHARS = 2_000_000  # a pasted log beyond this is refused (the search reads its tail anyway)
MAX_HISTORY = 2_000  # messages in the chat a question is sent with (1,000 questions)
# What the chat a question is sent with may hold, all messages together: a few hundred answers (a
# pasted log is shown cut, answer/html.py), far from the 200 MB chats that stalled the server.
MAX_HISTORY_CHARS = 4_000_000
LINK_MAX_CHARS = 2000  # a longer message (a whole log) is linked by the error lines it was searched by


class RequestError(ValueError):
    """An argument the page never sends (a hand-made API call): refused with its reason."""


def text_arg(value, what: str, limit: int) -> str:
    """`value` as text of at most `limit` characters ("" for None); RequestError for anything else."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RequestError(f"{what} must be text, not {type(value).__name__}")
    if len(value) > limit:
        raise RequestError(f"{what} is {len(value):,} characters long; the limit is {limit:,}")
    return value


def llm_endpoints(settings: Sequence | None) -> dict:
    """The LLM settings the operator configured, by the name a visitor picks them by: the model's
    name, or `model (host)` when two endpoints serve the same model. Never a URL from the page."""
    named: dict = {}
    for one in settings or ():
        name = one.model if one.model not in named else f"{one.model} ({urlsplit(one.base_url).netloc})"
        named[name] = one
    return named


def checked_ask(helper, endpoints: dict, message, history, framework, collection, llm_name):
    """The arguments of one question, checked as the page would send them: (message, history,
    framework, collection, LLM settings or None). RequestError for anything else."""
    message = text_arg(message, "the message", MAX_MESSAGE_CHARS)
    if history is not None and not isinstance(history, list):
        raise RequestError("the chat history must be a list of messages")
    if history and len(history) > MAX_HISTORY:
        raise RequestError(f"the chat holds {len(history):,} messages; the limit is {MAX_HISTORY:,}: "
                           "start a new chat (the bin icon)")
    if history and (size := history_chars(history)) > MAX_HISTORY_CHARS:
        raise RequestError(f"the chat holds {size:,} characters; the limit is {MAX_HISTORY_CHARS:,}: "
                           "start a new chat (the bin icon)")
    filters = []
    for value, allowed, what in ((framework, helper.frameworks, "framework"),
                                 (collection, helper.collections, "collection")):
        value = text_arg(value, f"the {what}", 200)
        if value and value not in allowed:
            raise RequestError(f"unknown {what} {value!r}: this index has {', '.join(allowed) or 'none'}")
        filters.append(value)
    name = text_arg(llm_name, "the LLM choice", 500)
    if name and name not in endpoints:
        if not endpoints:
            raise RequestError("this server offers no LLM answers (its operator starts it with "
                               "`rlhelper serve --llm ...` to offer one)")
        raise RequestError(f"this server offers no LLM named {name!r}: pick one of {', '.join(map(repr, endpoints))}")
    return message, history, *filters, endpoints.get(name) if name else None


def history_chars(history: list) -> int:
    """Characters in a chat's messages, however Gradio shaped them (text, or a list of typed parts);
    walked without recursion, so a deeply nested hand-made one is only counted."""
    total, todo = 0, [history]
    while todo:
        value = todo.pop()
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, list | tuple):
            todo.extend(value)
        else:
            total += 8
    return total


def filter_value(choice: str | None) -> str | None:
    """Dropdown value -> ask() filter: "" (All) means no filter."""
    return choice or None


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
