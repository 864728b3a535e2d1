"""Follow-up messages in a conversation: "what about verl?" after a question about SkyRL.

    is_short(message)                    -> few enough words to lean on the question before it
    has_cue(message)                     -> starts like a follow-up ("what about", "and", "那…呢")
    read_with(message, previous_query)   -> the text to search: the previous question, minus the
                                            framework or engine the message replaces, then the message
    framework_named(message)             -> the one framework it names, searched alone (a filter)
    in_heading(message, entry)           -> whether the entry found is about what the message adds

Searched alone, such a message has too few words to find anything, or finds an entry
that merely names the framework ("Installing SkyRL"). Read with the question before it,
it asks that question again about another framework, engine or detail. The caller
decides when to (api.Helper.ask): a message with a cue always, another short one only
when it matches nothing alone.
"""

from __future__ import annotations

import re

from . import lexical

MAX_WORDS = 8  # a longer message is a question of its own

# How follow-ups start (or, in Chinese, end: "…呢？").
_CUE = re.compile(
    r"^\s*(?:what about|how about|and (?:for|in|on|with|if|what|how)|what if|same (?:for|with|in|on)|"
    r"also|instead|but (?:for|in|on|with)|那么?|如果是|换成|还有)\b|呢\s*[?？]?\s*$",
    re.IGNORECASE,
)
# Names a follow-up can swap: one framework for another, one rollout engine for another.
_GROUPS = [("verl", "skyrl", "slime", "rlinf"), ("sglang", "vllm")]


def _words(text: str) -> list[str]:
    return [w for w in lexical.tokenize(text) if w not in lexical.CHINESE_FUNCTION_WORDS]


def is_short(message: str) -> bool:
    return 0 < len(_words(message)) <= MAX_WORDS


def has_cue(message: str) -> bool:
    return _CUE.search(message) is not None


def read_with(message: str, previous_query: str) -> str:
    """The previous question with the names the message replaces taken out, then the message."""
    named = {w.lower() for w in re.findall(r"[A-Za-z]+", message)}
    for group in _GROUPS:
        if named & set(group):
            previous_query = re.sub(rf"(?i)\b(?:{'|'.join(group)})\b", " ", previous_query)
    return f"{' '.join(previous_query.split())}\n{message.strip()}"


def framework_named(message: str) -> str | None:
    """The one framework a follow-up names ("what about slime?"): the question is now about it."""
    named = {w.lower() for w in re.findall(r"[A-Za-z]+", message)} & set(_GROUPS[0])
    return named.pop() if len(named) == 1 else None


def in_heading(message: str, entry) -> bool:
    """Whether a word of the message is in the entry's headings: the entry is about what the
    message adds ("on multiple nodes?" -> "Weight Sync Failures in Multi-Node"), not merely the
    next-best answer to the previous question ("ok it works now")."""
    heading = set(lexical.tokenize(" ".join([*entry.breadcrumb[1:], entry.heading])))  # not the doc title
    names = {name for group in _GROUPS for name in group}  # a framework name is a filter, not a topic
    return any(w in heading for w in _words(message) if w not in names)


def knows_a_word(message: str, vocabulary) -> bool:
    """Whether the message holds a word the docs use: "thanks" and "bake bread" do not."""
    return any(w in vocabulary for w in _words(message))
