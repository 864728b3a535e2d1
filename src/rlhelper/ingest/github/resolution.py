"""Where an issue's thread holds its fix or its answer, open or closed: each comment weighed by a model
learned from labelled real threads, plus what GitHub itself records.

    found = resolve(thread, notices)     # notices: positions of this thread's comments flagged (boilerplate.py)
    found.fixes                          # [Fix], in thread order: the comments (or body) holding a fix
    found.pull, found.commit             # what closed it, when GitHub recorded it
    found.duplicate_of                   # "Duplicate of #N": the fix is in that thread
    found.resolved, found.is_open

Which comments carry the fix is the learned model's call (resolution_model.py over
signals.comment_features: role, the reporter's confirmation, content, links, replies, place, the
thread's state). A few things are decided by how trackers work, not learned:

* a pull request or a commit that closed the issue is its fix (GitHub records the link);
* a workaround the reporter added to the body ("Update: solved by ...") with something to apply;
* a GitHub App's comment and a comment GitHub shows minimised are no one's answer;
* a comment every sentence of which asks (a question back, a request for logs or versions, even one
  that names a config key in code) answers nothing, and a "+1 / same here" (with or without the log it
  pasted) is agreement: never taken for a fix (`NOT_ANSWERS`);
* at most `MAX_FIXES` comments are quoted, the confirmed ones first, then the likeliest.

A triage account's notice is a feature (`notice`), not an exclusion: the model learned that a
cleanup notice carries nothing, while the same account's summary of what worked does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .boilerplate import POLICY_TERMS, stale_words
from .resolution_model import ResolutionModel, resolution_model
from .signals import MAINTAINERS, SELF_SOLVED, advises, comment_features, role_of
from .text import clean, holds_instructions, split_body

__all__ = ["MAINTAINERS", "Fix", "Resolution", "is_bot", "resolve", "role_of"]

NOT_ANSWERS = ("only_asks", "me_too")  # signals of a comment that is never a fix, whatever else it holds
MAX_FIXES = 2  # quoted per thread: the best ones, shown in thread order
JUDGED_CHARS = 8000  # of a comment judged (and quoted from): a fix is said before the log pasted under it

_DUPLICATE = re.compile(r"\b(?:duplicate of|dup(?:e|licate)?d? (?:of|by)|same as|closing as (?:a )?duplicate of)\s*#(\d{1,7})\b"
                        r"|重复(?:于|了)?\s*#(\d{1,7})|同\s*#(\d{1,7})", re.I)
_BODY_FIX = re.compile(r"^\s*(?:\*\*|#+\s*)?(?:(?:update|edit|solved|solution|workaround|fix(?:ed)?|resolved)\b"
                       r"|更新|临时解决|解决(?:方法|办法|方案)|已解决|解决了)", re.I)


@dataclass
class Fix:
    source: str  # "comment" | "body"
    role: str  # "maintainer" | "contributor" | "reporter" | "other"
    score: float  # the model's probability that it carries the fix (1.0 for a body workaround)
    text: str
    comment: dict | None = None
    confirmed: bool = False
    answers: dict | None = None  # the comment a short reply answers (quoted with it)
    reasons: list[str] = field(default_factory=list)  # the features that pushed it most


@dataclass
class Resolution:
    fixes: list[Fix] = field(default_factory=list)
    pull: dict | None = None  # {"ref": "#540", "url", "title", "body"}
    commit: dict | None = None  # {"ref": "0a1b2c3", "url"}
    duplicate_of: int | None = None
    notices: int = 0  # comments read as notices
    is_open: bool = False

    @property
    def resolved(self) -> bool:
        return bool(self.fixes or self.pull or self.commit)


def is_bot(comment: dict) -> bool:
    """A GitHub App's comment: flagged so by the API or gh, or named so ("[bot]", gh's "app/"). gh's comment
    authors carry no flag and no suffix: those bots are recognised by what they write (boilerplate.py)."""
    author = str(comment.get("author") or "").lower()
    return comment.get("bot") is True or author.endswith("[bot]") or author.startswith("app/")


def judged_comments(thread: dict) -> list[tuple[int, dict, str, str]]:
    """(position, comment, cleaned body, role) of the comments a reader would weigh."""
    reporter = str(thread.get("author") or "")
    out = []
    for position, comment in enumerate(thread.get("comments") or []):
        if not isinstance(comment, dict):
            continue
        body = clean(str(comment.get("body") or "")[:JUDGED_CHARS])
        if not body.strip() or is_bot(comment) or comment.get("minimized"):
            continue
        out.append((position, comment, body, role_of(comment, reporter)))
    return out


def thread_features(thread: dict, notices: set | frozenset = frozenset()):
    """(judged comments, their features, the comments short replies answer): what the model reads."""
    judged = judged_comments(thread)
    comments = [(c, body, role) for _, c, body, role in judged]
    policy = [stale_words(body) for _, _, body, _ in judged]
    flagged = [position in notices or words >= POLICY_TERMS or (words >= 1 and not holds_instructions(body))
               for (position, _, body, _), words in zip(judged, policy, strict=True)]  # is_notice_text, counted once
    rows, answered = comment_features(thread, comments, flagged, policy)
    return judged, rows, answered


def resolve(thread: dict, notices: set | frozenset = frozenset(), model: ResolutionModel | None = None) -> Resolution:
    """The thread's fixes, what closed it, and what it duplicates; `notices` holds the positions of
    its comments the repository-wide pass flagged (boilerplate.Notices); `model`: the shipped one
    unless given (a fit tries its own)."""
    found = Resolution(is_open=str(thread.get("state") or "").lower() != "closed")
    closed_by = thread.get("closed_by") or {}
    if closed_by.get("ref") and not found.is_open:
        if str(closed_by["ref"]).startswith("#"):
            found.pull = closed_by  # with its description, or (an old export) its number only
        else:
            found.commit = closed_by
    judged, rows, answered = thread_features(thread, notices)
    found.notices = sum(1 for row in rows if row["notice"])
    found.duplicate_of = _duplicate_of(thread, [(c, body, role) for _, c, body, role in judged])
    model = model or resolution_model()
    scored = []
    for (_, comment, body, role), row, answers in zip(judged, rows, answered, strict=True):
        p = model.probability(row)
        if p >= model.threshold and not any(row[name] for name in NOT_ANSWERS):
            scored.append(Fix("comment", role, round(p, 4), body, comment, bool(row["confirmed"]), answers,
                              [name for name, value in row.items() if value]))
    body_fix = _body_fix(thread)
    best = sorted(scored, key=lambda f: (not f.confirmed, -f.score))[:MAX_FIXES - (body_fix is not None)]
    order = {id(f): i for i, f in enumerate(scored)}
    found.fixes = ([body_fix] if body_fix else []) + sorted(best, key=lambda f: order[id(f)])
    return found


def _body_fix(thread: dict) -> Fix | None:
    """A workaround the reporter wrote into the issue's body ("Update: solved by ..."), with something
    to apply or an explanation of what worked."""
    body = split_body(thread.get("body"))
    paragraphs = re.split(r"\n\s*\n", body.prose)
    for at, paragraph in enumerate(paragraphs):
        if at and _BODY_FIX.match(paragraph):
            text = "\n\n".join(paragraphs[at:at + 2]).strip()
            instructions = holds_instructions(text) or bool(body.of_kind("script", "code") and at)
            if instructions or advises(text) or SELF_SOLVED.search(text):
                return Fix("body", "reporter", 1.0, text, None, False, None, ["body"])
    return None


def _duplicate_of(thread: dict, comments: list[tuple[dict, str, str]]) -> int | None:
    """"Duplicate of #N" in a comment (or the state reason and label, with a #N to point at)."""
    number = thread.get("number")
    for _, body, _ in comments:
        m = _DUPLICATE.search(body)
        if m:
            target = int(next(g for g in m.groups() if g))
            if target != number:
                return target
    return None
