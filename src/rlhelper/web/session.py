"""What a browser session keeps: each answer shown (what a vote on it records and teaches), the
last vote (what a comment goes with), and the last answer that found an entry (a follow-up is
read with its question). Gradio holds it per browser tab (gr.State)."""

from __future__ import annotations

from ..answer.model import Answer


def new_session() -> dict:
    return {"answers": {}, "last_vote": None, "previous": None}


def remember(session: dict, position: int, asked: str, answer: Answer) -> None:
    """Keep the answer shown at `position` of the chat, asked as `asked`, for a vote on it."""
    session["answers"][position] = {
        "query": asked,
        "answer": answer.text,
        "entry_ids": [c.entry_id for c in answer.citations],
        "row": None,  # its feedback row, once voted on
        "learn": learnable(answer),
    }


def learnable(answer: Answer) -> dict | None:
    """What a vote on `answer` teaches the user's question bank: what it searched, and its cited
    lead entry (userbank.py); None when it found no entry."""
    from ..index.userbank import entry_key

    lead = next((h.entry for h in answer.hits if answer.citations and h.entry.id == answer.citations[0].entry_id),
                None)
    if answer.abstained or lead is None:
        return None
    return {"question": answer.normalized_query, "entry": entry_key(lead)}
