"""Thumbs up/down and comments on the web chat's answers: stored for `rlhelper feedback export`, and
taught to the visitor who voted (a thumbs-up makes the answer's entry lead for its question), as a
suggestion to the operator's bank (learn_from_vote).

Plain functions taking the FeedbackStore / Helper and the browser session explicitly, so tests call
them without a browser. Votes and comments are bounded per client and in total (feedback.py).
What they say is catalogue words (English, keeping their key): the page says them in the language
of the answer voted on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..catalogue import Phrase
from ..errors import RlhelperError
from ..measure.feedback import FeedbackFull, FeedbackRefused, FeedbackStore
from .arguments import RequestError
from .session import new_session

log = logging.getLogger(__name__)

_VOTES = {"Like": 1, "Dislike": -1, "": None}  # what the page sends; "": the vote was taken back
TOO_MANY = Phrase("vote.too_many")


def vote_of(liked) -> int | None:
    if liked is True:
        return 1
    if liked is False:
        return -1
    if liked is None or (isinstance(liked, str) and liked in _VOTES):
        return _VOTES.get(liked)
    raise RequestError(f"a vote is 'Like', 'Dislike' or '' (taken back), not {str(liked)[:50]!r}")


def position_of(index) -> int:
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
    position, vote = position_of(index), vote_of(liked)
    turn = session["answers"].get(position)
    if turn is None:
        return session, Phrase("vote.only_answers")
    if not allowed():
        return session, TOO_MANY
    if vote is None:
        if turn["row"] is not None:
            store.remove(turn["row"])
            turn["row"] = None
        session["last_vote"] = None
        return session, Phrase("vote.removed")
    try:
        if turn["row"] is None:
            turn["row"] = store.record(turn["query"], turn["answer"], turn["entry_ids"], vote)
        else:
            store.change_vote(turn["row"], vote)
    except FeedbackFull as err:
        log.warning("vote not stored: %s", err)
        return session, Phrase("vote.store_full")
    session["last_vote"] = position
    return session, Phrase("vote.thanks", how=Phrase("vote.helpful" if vote > 0 else "vote.not_helpful"))


OPERATOR_SOURCES = ("cli", "chat", "import", "review")  # records no visitor's vote replaces or removes


def learn_from_vote(helper, session: dict | None, index, liked, *, visitors=None, visitor: str | None = None,
                    address: str = "?", learn_for_all: bool = False) -> str:
    """What a vote teaches (issue 31): a thumbs-up makes the answer's lead entry lead for its question,
    a thumbs-down keeps it from leading, taking the vote back undoes that; for the visitor who voted
    (visitors.py: kept in the visitor store, applied to their own searches), and for everyone else
    only once the operator approves it (`rlhelper questions review`), or at once on a server started
    with `--learn-from-votes` (the bank's source "web"; never over the operator's own records).
    `visitor` is the one this request's token names, passed here, never read back from the session:
    votes of one session may arrive at once with different tokens (issue 37).
    Returns a note for the status line ("" when there is nothing to say)."""
    position = index[0] if isinstance(index, list | tuple) else index
    turn = (session or {}).get("answers", {}).get(int(position)) if position is not None else None
    taught = turn.get("learn") if turn else None
    if visitors is None or not taught:
        return ""
    if not visitor:
        if visitors.at_mint_limit(address):  # say which limit, and what can lift it: reloading cannot
            return Phrase("vote.no_visitor_limit", limit=visitors.mints_per_hour)
        return Phrase("vote.no_visitor")
    vote, question, entry = vote_of(liked), taught["question"], taught["entry"]
    bank = helper.user_bank if learn_for_all else None
    try:
        if vote is None:
            earlier = turn.pop("learned_vote", None)
            visitors.bank.take_back(visitor, question, entry)
            if bank is not None and earlier and not visitors.bank.others_hold(visitor, question, entry, earlier):
                bank.forget(question, entry, source="web", vote=earlier)
            return ""
        visitors.bank.record(visitor, address, question, entry, vote, turn.get("filters") or "")
        turn["learned_vote"] = vote
        if bank is not None:
            bank.add(question, entry, vote, "web", keep=OPERATOR_SOURCES)
    except RlhelperError as err:
        log.warning("the vote was not learned: %s", err)
        return Phrase("vote.not_learned", reason=str(err))
    finally:
        visitors.changed(visitor)
    heading = entry.get("heading") or "this entry"
    whom = "all" if bank is not None else "you"  # for everyone, or for the voter until the operator approves it
    return Phrase(f"vote.{'leads' if vote > 0 else 'not_lead'}_for_{whom}", heading=heading)


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
        return session, Phrase("comment.vote_first")
    if not (comment or "").strip():
        return session, Phrase("comment.empty")
    if not allowed():
        return session, TOO_MANY
    try:
        store.set_comment(turn["row"], comment)
    except FeedbackFull as err:
        log.warning("comment not stored: %s", err)
        return session, Phrase("comment.store_full")
    except FeedbackRefused as err:  # too long: said to the writer, who can shorten it
        text = str(err)
        return session, Phrase("comment.refused", reason=f"{text[0].upper()}{text[1:]}")
    return session, Phrase("comment.saved")
