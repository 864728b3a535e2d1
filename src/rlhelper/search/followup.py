"""Follow-up messages in a conversation: "what about verl?" after a question about SkyRL.

    is_short(message)                    -> few enough words to lean on the question before it
    has_cue(message)                     -> starts like a follow-up ("what about", "and", "那…呢"),
                                            points back ("that", "the same", "这个") or is only a name
    names_only(message)                  -> its only words are framework or engine names ("sglang?")
    read_with(message, previous_query)   -> the text to search: the previous question, minus the
                                            framework or engine the message replaces, then the message
    framework_named(message)             -> the one framework it names, searched alone (a filter)
    in_heading(message, entry)           -> whether the entry found is about what the message adds
    about(question, entry)               -> whether an entry's headings name the question's problem

Searched alone, such a message has too few words to find anything, or finds an entry
that merely names the framework ("Installing SkyRL"). Read with the question before it,
it asks that question again about another framework, engine or detail. The caller
decides when to (api.Helper.ask): a message with a cue always, another short one only
when it matches nothing alone.
"""

from __future__ import annotations

import re

from ..index import lexical
from . import glossary

MAX_WORDS = 8  # a longer message is a question of its own

# How follow-ups start (or, in Chinese, end: "…呢？").
_CUE = re.compile(
    r"^\s*(?:what about|how about|and|what if|same|also|instead|but (?:for|in|on|with)|那么?|如果是|换成|还有)\b|"
    r"呢\s*[?？]?\s*$",
    re.IGNORECASE,
)
# A fragment that only adds a circumstance ("on multiple nodes?", "with tp=8?", "在多机上呢"): it
# continues the question before, it asks nothing alone.
_FRAGMENT = re.compile(r"^\s*(?:on|with|in|for|using|under|without|when|during|at|across|在|用|使用)\b", re.IGNORECASE)
MAX_FRAGMENT_WORDS = 4
# Words that point back at the question before: "that", "the same", "the slime equivalent",
# "…then?", "这个". A short message holding one has nothing to search without what it points at.
_POINTS_BACK = re.compile(
    r"\b(?:that|this|these|those|same|equivalent|instead)\b|\b(?:too|then|tho|though)\s*[?？.!]*\s*$|"
    r"这个|这几个|这些|那个|同样|一样",
    re.IGNORECASE,
)
# Names a follow-up can swap: one framework for another, one rollout engine for another, one phase
# for another ("what about training?" after a rollout OOM: search/phase.py reads the phase from words).
_GROUPS = [("verl", "skyrl", "slime", "rlinf"), ("sglang", "vllm"), ("rollout", "generation", "training")]
_NAMES = frozenset(name for group in _GROUPS[:2] for name in group)


def _words(text: str) -> list[str]:
    return [w for w in lexical.tokenize(text) if w not in lexical.CHINESE_FUNCTION_WORDS]


def is_short(message: str) -> bool:
    return 0 < len(_words(message)) <= MAX_WORDS


def has_cue(message: str) -> bool:
    """Starts like a follow-up, points back at the question before, or is only a name ("skyrl?")."""
    return bool(_CUE.search(message) or _POINTS_BACK.search(message)) or names_only(message) or is_fragment(message)


def is_fragment(message: str) -> bool:
    """A few words that start with a preposition ("on multiple nodes?"): a circumstance added to the
    question before, not a question of its own."""
    return bool(_FRAGMENT.search(message)) and len(_words(message)) <= MAX_FRAGMENT_WORDS


def names_only(message: str) -> bool:
    """Whether the message's only words are framework or engine names ("and with sglang?"):
    alone it asks nothing, so it can only mean the question before, moved there."""
    words = _words(message)
    return bool(words) and all(w in _NAMES for w in words)


def read_with(message: str, previous_query: str, searched_in: str | None = None) -> str:
    """The previous question with the names the message replaces taken out, then the message.

    `searched_in`: the framework whose docs alone are searched, named only because the previous
    question found nothing anywhere. Then the message's cue and that name are left out ("what about
    slime?" adds nothing the filter does not say): every entry there names it, and its Installation
    section most of all, which was quoted as if it answered. (After an answered question the name
    stays: it helps rank that framework's entries among near ties; the follow-up set's dev split lost
    R@1 0.742 -> 0.710 without it.)"""
    named = {w.lower() for w in re.findall(r"[A-Za-z]+", message)}
    for group in _GROUPS:
        if named & set(group):
            previous_query = re.sub(rf"(?i)\b(?:{'|'.join(group)})\b", " ", previous_query)
    # The cue ("what about", "and", "那…呢") says the message continues the conversation; it is not
    # part of the problem, and searched it found "about" and "what" in unrelated entries: "reward is
    # always 0" + "what about slime?" led with slime's "Custom Reward Function", not "Reward Collapse".
    message = _CUE.sub(" ", message)
    if searched_in:
        message = re.sub(rf"(?i)\b{re.escape(searched_in)}\b", " ", message)
    if not _words(message):
        return " ".join(previous_query.split())
    return f"{' '.join(previous_query.split())}\n{' '.join(message.split())}"


def names_a_phase(message: str) -> bool:
    """Whether the message swaps the phase by a bare word ("what about training?"): then the
    question's phase is not held for it."""
    return bool({w.lower() for w in re.findall(r"[A-Za-z]+", message)} & set(_GROUPS[2]))


def framework_named(message: str) -> str | None:
    """The one framework a follow-up names ("what about slime?"): the question is now about it."""
    named = {w.lower() for w in re.findall(r"[A-Za-z]+", message)} & set(_GROUPS[0])
    return named.pop() if len(named) == 1 else None


def in_heading(message: str, entry) -> bool:
    """Whether a word of the message is in the entry's headings: the entry is about what the
    message adds ("on multiple nodes?" -> "Weight Sync Failures in Multi-Node"), not merely the
    next-best answer to the previous question ("ok it works now")."""
    heading = set(lexical.tokenize(" ".join([*entry.breadcrumb[1:], entry.heading])))  # not the doc title
    return any(same_word(w, h) for w in _words(message) if w not in _NAMES for h in heading)  # a name is a filter


def about(question: str, entry) -> bool:
    """Whether the entry's headings name what the question is about: half of its words at least, in
    the docs' words as well as the user's (a glossary term counts as its concept: "out of memory" is
    the heading's "OOM"). "reward is always 0" and slime's "Issue: Reward Collapse" (reward, 1 of 2).
    Such an entry, found when a follow-up moves the question to another framework, is a weak answer
    there, not "no entry on it" above a list that shows it; one shared word of many ("weights" in
    "Weights & Biases tables" and "Stale Weights in Async Mode") is not."""
    heading = lexical.tokenize(" ".join([*entry.breadcrumb[1:], entry.heading]))
    order = [w for w in _words(question) if w not in _NAMES and w not in _GROUPS[2]]  # filters, not the problem
    words = set(order)
    if not words:
        return False
    # A term's words are matched as the term: "maxed out" and "illegal memory access" are no OOM.
    said, written = glossary.terms_in(order), glossary.terms_in(heading)
    in_terms = set().union(*said.values()) if said else set()
    covered = set().union(*(said[c] for c in said.keys() & written.keys()))
    covered |= {w for w in words - in_terms if any(same_word(w, h) for h in heading)}
    return len(covered & words) * 2 >= len(words)


MIN_STEM = 5  # letters a shorter word must have to stand for a longer one ("fail", "time" are in too many)


def same_word(said: str, written: str) -> bool:
    """One word, as a user says it and a heading writes it: "nodes" for "node", "multiple" for
    "multi" (Multi-Node; the tokenizer already stems "nodes"): one starts with the other, of MIN_STEM letters at least."""
    if said == written:
        return True
    short, long_ = sorted((said, written), key=len)
    return len(short) >= MIN_STEM and short.isalpha() and long_.startswith(short)


def knows_a_word(message: str, vocabulary) -> bool:
    """Whether the message holds a word the docs use: "thanks" and "bake bread" do not."""
    return any(w in vocabulary for w in _words(message))
