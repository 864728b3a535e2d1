"""What a browser session keeps: each answer shown (what a vote on it records and teaches), the
last vote (what a comment goes with), the last answer that found an entry (a follow-up is read
with its question), the question to ask again without filters, and who the visitor is
(visitors.py). Gradio holds it per browser tab (gr.State), in the server's memory.

Bounded by bytes (issue 31): an answer keeps what a vote on it needs, not the question it was
asked with (a pasted 2 MB log is cut to what the feedback store keeps); the follow-up's answer
keeps its searched text and its entries, not the raw question; and the oldest answers are let go
past MAX_ANSWERS or MAX_SESSION_BYTES (a vote on one of those says it can no longer be voted on).
"""

from __future__ import annotations

import dataclasses

from ..answer.model import Answer
from ..measure.feedback import MAX_ANSWER_CHARS, MAX_QUERY_CHARS

MAX_ANSWERS = 200  # answers of one session that can still be voted on
MAX_SESSION_BYTES = 512 * 1024  # roughly, what one session's answers hold
MAX_FOLLOWED_CHARS = MAX_QUERY_CHARS  # the searched text a follow-up is read with


def new_session(visitor: str | None = None) -> dict:
    return {"answers": {}, "last_vote": None, "previous": None, "filtered_miss": None, "visitor": visitor}


def kept_for_follow_up(answer: Answer) -> Answer:
    """`answer` as a follow-up needs it: what was searched (bounded) and the entries found, without
    the raw question and the answer's text."""
    return dataclasses.replace(answer, query=answer.query if len(answer.query) <= MAX_FOLLOWED_CHARS else "",
                               normalized_query=answer.normalized_query[:MAX_FOLLOWED_CHARS], text="", parts=[],
                               notices=[])


def turn_bytes(turn: dict) -> int:
    learn = turn.get("learn") or {}
    return (len(turn["query"]) + len(turn["answer"]) + sum(len(i) for i in turn["entry_ids"])
            + len(learn.get("question", "")) + 200)


def remember(session: dict, position: int, asked: str, answer: Answer, filters: str = "") -> None:
    """Keep the answer shown at `position` of the chat, asked as `asked` (with `filters`, in words),
    for a vote on it; let the oldest go past the session's bounds."""
    answers = session["answers"]
    answers[position] = {
        "query": asked[:MAX_QUERY_CHARS],
        "answer": answer.text[:MAX_ANSWER_CHARS],
        "entry_ids": [c.entry_id for c in answer.citations][:20],
        "row": None,  # its feedback row, once voted on
        "learn": learnable(answer),
        "filters": filters[:200],
    }
    total = sum(turn_bytes(t) for t in answers.values())
    while len(answers) > MAX_ANSWERS or (total > MAX_SESSION_BYTES and len(answers) > 1):
        oldest = min(answers)
        total -= turn_bytes(answers.pop(oldest))
        if session.get("last_vote") == oldest:
            session["last_vote"] = None


def learnable(answer: Answer) -> dict | None:
    """What a vote on `answer` teaches the user's question bank: what it searched, and its cited
    lead entry (userbank.py); None when it found no entry, or searched more than a question's length."""
    from ..index.bankrecord import MAX_QUESTION_CHARS
    from ..index.lastanswer import entry_key

    lead = next((h.entry for h in answer.hits if answer.citations and h.entry.id == answer.citations[0].entry_id),
                None)
    if answer.abstained or lead is None or len(answer.normalized_query) > MAX_QUESTION_CHARS:
        return None
    return {"question": answer.normalized_query, "entry": entry_key(lead)}
