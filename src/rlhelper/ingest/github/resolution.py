"""Where a closed issue's thread holds its fix: each comment (and the body, and the closing pull
request or commit) judged by what it is, not only by who wrote it.

    found = resolve(thread, notices)     # notices: positions of this thread's comments flagged (boilerplate.py)
    found.fixes                          # [Fix], in thread order: the comments (or body) holding a fix
    found.pull, found.commit             # what closed it, when GitHub recorded it
    found.duplicate_of                   # "Duplicate of #N": the fix is in that thread
    found.resolved

Fixes are found wherever trackers show them: a maintainer's reply with a command; the reporter's
own "solved it by ..."; another user's workaround that the reporter then confirmed ("works now",
"thanks, fixed", 解决了, 可以了); a workaround the reporter added to the issue's body ("Update:
..."). What counts, per comment (weights in `WEIGHTS`, the reasons beside them):

* who wrote it: a maintainer's word counts most; the reporter's only when it explains how they
  solved it (their "thanks" is a confirmation, not a fix);
* what it holds: code, config, flags or a command a reader can apply (text.holds_instructions),
  the vocabulary of advice or of a diagnosis, in English and Chinese;
* what happened after it: the reporter confirmed it, or said it still fails; the API's approving
  and doubting reactions;
* where it is: the last substantive reply before the close is more often the fix; a comment
  after the close is more often someone else's new trouble;
* what it is not: a question back ("could you share the full log?"), a "+1 / same here", a notice
  (boilerplate.py), a bot's, a comment GitHub shows minimised.

A short reply ("Yes, simply ...") is kept with the comment it answers, so it can be quoted with
its question. A thread is resolved when a comment or the body holds a fix, or a pull request or
a commit closed it; a thread whose only replies are notices is not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .boilerplate import is_notice_text
from .text import clean, holds_instructions, split_body

MAINTAINERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
FIX = 1.5  # a candidate scoring this much holds a fix
MAX_FIXES = 2  # quoted per thread: the best ones, shown in thread order
SHORT_REPLY = 280  # characters: a reply this short is quoted with the comment it answers
JUDGED_CHARS = 8000  # of a comment judged (and quoted from): a fix is said before the log pasted under it

# Score parts (see the module docstring); set by reading what each kind of comment scores,
# so that a maintainer's command, a confirmed workaround and a reporter's explained fix pass
# FIX, and "looking into it", "could you share the log?" and "+1" do not.
WEIGHTS = {
    "maintainer": 1.0,  # the project's word
    "other": 0.4,  # another user's experience
    "reporter": 0.0,  # the reporter's comment is a fix only when it explains one ("self_solved")
    "instructions": 1.2,
    "advice": 0.6,
    "confirmed": 2.0,  # the reporter said it worked
    "thanked": 0.8,  # the reporter only thanked
    "denied": -1.5,  # the reporter said it still fails
    "self_solved": 1.6,
    "asks": -1.2,  # a question back, and nothing to apply
    "me_too": -3.0,
    "acknowledges": -0.8,  # "Thanks @x, we'll add a note": a maintainer thanking whoever fixed it
    "tiny": -0.8,  # a few characters and nothing to apply
    "last_before_close": 0.3,
    "after_close": -0.5,
    "approving": 0.4,  # per log2(1 + approving reactions)
    "doubting": -0.6,
}

_ADVICE = re.compile(
    r"\b(?:try|set|use|upgrade|downgrade|install|reinstall|pin|update|change|add|remove|delete|disable|enable"
    r"|increase|decrease|reduce|lower|raise|switch|replace|pass|specify|make sure|instead|workaround"
    r"|you (?:need|have|should|can|must|could)|should (?:be|use|set)|because|caused by|the (?:cause|reason|problem|issue)"
    r" (?:is|was)|(?:is|was|has been|been) (?:fixed|resolved|supported)|fixed (?:in|by)|resolved (?:in|by)|expected"
    r"|by design|intended|not a bug|not supported|known issue)\b"
    r"|设置|改成|改为|升级|降级|安装|重装|尝试|试试|修改|添加|加上|删除|去掉|关闭|开启|打开|使用|换成|指定|调小|调大|减小|增大"
    r"|需要|应该|原因|因为|修复|已修复|预期|不支持|已知问题", re.I)
_CONFIRMED = re.compile(
    r"\b(?:it |that |this )?(?:works?|worked|working)(?: now| for me| fine| well| perfectly)?\b(?![^.\n]{0,12}\?)"
    r"|\b(?:that |this |it )?(?:did it|did the trick|fixed it|solved it|helps?|helped)\b|\b(?:solved|resolved|fixed)\b|\bproblem (?:is )?gone\b"
    r"|\bno longer\b|\bsuccess(?:fully)?\b"
    r"|解决了|已解决|可以了|好了|成功了|搞定|没问题了|跑通了|正常了|有效", re.I)
# "Still" in "it works now, still slow though" does not deny: a strong confirmation wins.
_STRONGLY_CONFIRMED = re.compile(r"\b(?:works? now|solved|resolved|fixed)\b|解决了|可以了", re.I)
_THANKED = re.compile(r"\bthanks?\b|\bthank you\b|\bthx\b|\bappreciate|谢谢|感谢|多谢", re.I)
_DENIED = re.compile(
    r"\bstill\b|\b(?:does|did|do)(?:n't|n’t| not) (?:work|help|fix|solve)|\bnot (?:working|solved|fixed|help)"
    r"|\bsame (?:error|issue|problem)\b|\bno luck\b|\bwill try\b|\blet me try\b"
    r"|还是|仍然|依然|不行|没用|无效|没有解决|未解决|我试试|试一下", re.I)
_SELF_SOLVED = re.compile(
    r"\bI (?:have |just |finally )?(?:solved|fixed|resolved|found|figured)\b|\b(?:solved|fixed|resolved) (?:it|this|the)\b"
    r"|\b(?:solved|fixed|resolved|worked around|got it (?:working|running))(?: it| this)? (?:by|with|after|via)\b"
    r"|\bturn(?:s|ed) out\b|\bthe (?:problem|issue|cause|reason|culprit) (?:was|is)\b|\bit was (?:because|caused)\b"
    r"|\bwas caused by\b|\bmy (?:bad|mistake)\b|\bworkaround\b|\bsolution\b"
    r"|我(?:已经|终于)?解决|解决(?:方法|办法|方案)|原来是|发现是|问题(?:出)?在|原因是|是因为|通过.{1,40}解决|改成.{1,60}后", re.I)
_ASKS = re.compile(
    r"[?？]\s*$|\b(?:could|can|would) you (?:please )?(?:share|provide|post|paste|send|give|upload|attach|show)"
    r"|\bplease (?:share|provide|post|paste|attach|send|give|upload)\b|\bwhat (?:is|are|was) (?:your|the)\b"
    r"|请提供|请贴|请发|能否提供|可以提供|麻烦(?:提供|发)|发一下", re.I | re.M)
_ME_TOO = re.compile(
    r"^\W*(?:\+1|same(?: here| issue| problem| error| for me)?|me too|i (?:have|got|met|encounter(?:ed)?|see) the same"
    r"(?: issue| problem| error)?|any (?:update|progress|news)|同样的问题|我也(?:遇到了?|是|有)(?:这个问题)?|同问|\+1)\W*$",
    re.I)
# "+1, would love X support", "same here on 4 GPUs", "我也遇到了，求解决": agreement, not an answer.
_ME_TOO_LEAD = re.compile(r"^\W*(?:\+1\b|same (?:here|issue|problem|error)\b|me too\b|同样的问题|同问|我也遇到|我也是)", re.I)
_THANKS_LEAD = re.compile(r"^\W*(?:thanks?\b|thank you\b|感谢|谢谢)", re.I)
_CODE_TOKEN = re.compile(r"`([^`\n]{2,120})`|(?<![\w-])(--[A-Za-z][\w-]{1,60}(?:[= ][^\s,;]+)?)"
                         r"|\b([a-z_]\w*(?:\.\w+){1,8}\s*=\s*[^\s,;]+)|\b([\w.-]{2,60}(?:==|>=|<=)[\w.]+)")
_CODE_LIKE = re.compile(r"[-_.=/:\d]")
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")
_DUPLICATE = re.compile(r"\b(?:duplicate of|dup(?:e|licate)?d? (?:of|by)|same as|closing as (?:a )?duplicate of)\s*#(\d{1,7})\b"
                        r"|重复(?:于|了)?\s*#(\d{1,7})|同\s*#(\d{1,7})", re.I)
_BODY_FIX = re.compile(r"^\s*(?:\*\*|#+\s*)?(?:(?:update|edit|solved|solution|workaround|fix(?:ed)?|resolved)\b"
                       r"|更新|临时解决|解决(?:方法|办法|方案)|已解决|解决了)", re.I)
_QUOTE = re.compile(r"^\s*>\s?(.*)$")
_MENTION = re.compile(r"@([A-Za-z0-9][\w-]{0,38})")


@dataclass
class Fix:
    source: str  # "comment" | "body"
    role: str  # "maintainer" | "reporter" | "other"
    score: float
    text: str
    comment: dict | None = None
    confirmed: bool = False
    answers: dict | None = None  # the comment a short reply answers (quoted with it)
    reasons: list[str] = field(default_factory=list)


@dataclass
class Resolution:
    fixes: list[Fix] = field(default_factory=list)
    pull: dict | None = None  # {"ref": "#540", "url", "title", "body"}
    commit: dict | None = None  # {"ref": "0a1b2c3", "url"}
    duplicate_of: int | None = None
    notices: int = 0  # comments left out as notices

    @property
    def resolved(self) -> bool:
        return bool(self.fixes or self.pull or self.commit)


def role_of(comment: dict, reporter: str) -> str:
    author = str(comment.get("author") or "")
    if reporter and author.lower() == reporter.lower():
        return "reporter"
    return "maintainer" if str(comment.get("association") or "").upper() in MAINTAINERS else "other"


def is_bot(comment: dict) -> bool:
    """A GitHub App's comment: flagged so by the API or gh, or named so ("[bot]", gh's "app/"). gh's comment
    authors carry no flag and no suffix: those bots are recognised by what they write (boilerplate.py)."""
    author = str(comment.get("author") or "").lower()
    return comment.get("bot") is True or author.endswith("[bot]") or author.startswith("app/")


def resolve(thread: dict, notices: set | frozenset = frozenset()) -> Resolution:
    """The thread's fixes, what closed it, and what it duplicates; `notices` holds the positions of
    its comments the repository-wide pass flagged (boilerplate.Notices)."""
    found = Resolution()
    closed_by = thread.get("closed_by") or {}
    if closed_by.get("ref"):
        ref = str(closed_by["ref"])
        if ref.startswith("#") and closed_by.get("title"):
            found.pull = closed_by
        elif ref.startswith("#"):
            found.pull = closed_by  # a pull request without its description (an old export): still what closed it
        else:
            found.commit = closed_by
    reporter = str(thread.get("author") or "")
    comments = []
    for position, comment in enumerate(thread.get("comments") or []):
        body = clean(str(comment.get("body") or "")[:JUDGED_CHARS])
        if not body.strip() or is_bot(comment) or comment.get("minimized"):
            continue
        if position in notices or is_notice_text(body):
            found.notices += 1
            continue
        comments.append((comment, body, role_of(comment, reporter)))
    found.duplicate_of = _duplicate_of(thread, comments)
    scored = _score_comments(comments, str(thread.get("closed_at") or ""))
    body_fix = _body_fix(thread)
    if body_fix is not None:
        scored.append(body_fix)
    fixes = [f for f in scored if f.score >= FIX]
    best = sorted(fixes, key=lambda f: (not f.confirmed, -f.score))[:MAX_FIXES]
    order = {id(f): i for i, f in enumerate(scored)}
    found.fixes = sorted(best, key=lambda f: (f.source != "body", order[id(f)]))
    return found


def _score_comments(comments: list[tuple[dict, str, str]], closed_at: str) -> list[Fix]:
    fixes = []
    substantive = [i for i, (_, body, role) in enumerate(comments)
                   if role != "reporter" and not _ME_TOO.match(body.strip()) and (not closed_at or
                                                                                  str(comments[i][0].get("created_at") or "") <= closed_at)]
    last = substantive[-1] if substantive else None
    verdicts = reporter_verdicts(comments)
    for i, (comment, body, role) in enumerate(comments):
        reasons = [role]
        score = WEIGHTS[role]
        instructions = holds_instructions(body)
        stripped = body.strip()
        if instructions:
            score += WEIGHTS["instructions"]
            reasons.append("instructions")
        prose = split_body(body).prose
        advice = advises(prose)
        if advice:
            score += WEIGHTS["advice"]
            reasons.append("advice")
        if role == "reporter":
            if self_solved(body, prose, instructions) and not _repeats_earlier(comments, i):
                score += WEIGHTS["self_solved"]
                reasons.append("self_solved")
            else:  # their logs, config and answers to questions are the problem's, not a fix
                fixes.append(Fix("comment", role, 0.0, body, comment, False, None, [*reasons, "no_solution"]))
                continue
        if role != "reporter" and _THANKS_LEAD.match(stripped) and not instructions:
            score += WEIGHTS["acknowledges"]
            reasons.append("acknowledges")
        if len(stripped) < 160 and (_ME_TOO.match(stripped) or _ME_TOO_LEAD.match(stripped)) and not instructions:
            score += WEIGHTS["me_too"]
            reasons.append("me_too")
        elif _ASKS.search(prose) and not advice:
            # A request for logs or versions: what it names in code is what to send, not what to do.
            score += WEIGHTS["asks"] - (WEIGHTS["instructions"] if instructions else 0.0)
            reasons.append("asks")
        if not instructions and len(stripped) < 15:
            score += WEIGHTS["tiny"]
            reasons.append("tiny")
        verdict = verdicts.get(i)
        if verdict:
            score += WEIGHTS[verdict]
            reasons.append(verdict)
        reactions = comment.get("reactions") or {}
        up, down = int(reactions.get("up") or 0), int(reactions.get("down") or 0)
        score += WEIGHTS["approving"] * math.log2(1 + up) + WEIGHTS["doubting"] * math.log2(1 + down)
        if i == last:
            score += WEIGHTS["last_before_close"]
            reasons.append("last_before_close")
        if closed_at and str(comment.get("created_at") or "") > closed_at:
            score += WEIGHTS["after_close"]
            reasons.append("after_close")
        answers = _answered(comments, i) if role != "reporter" and len(stripped) <= SHORT_REPLY else None
        fixes.append(Fix("comment", role, round(score, 3), body, comment, verdict == "confirmed", answers, reasons))
    return fixes


def advises(prose: str) -> bool:
    """Advice or a diagnosis in a sentence that is not a question ("是否开启了 multi_turn？" asks)."""
    for sentence in _SENTENCE.findall(prose):
        sentence = sentence.strip()
        if not sentence or sentence.endswith(("?", "？")) or _ASKS.search(sentence):
            continue
        if _ADVICE.search(sentence):
            return True
    return False


def self_solved(body: str, prose: str, instructions: bool | None = None) -> bool:
    """The reporter says how they solved it: a solution's words, and a command or an explanation
    (a bare "solved, thanks" confirms someone else's fix instead)."""
    instructions = holds_instructions(body) if instructions is None else instructions
    if _SELF_SOLVED.search(prose):
        return instructions or len(body.strip()) > 40
    return instructions and bool(_CONFIRMED.search(prose))  # "setting `X=1` works now", of their own finding


def _code_words(text: str) -> set[str]:
    """The words of a comment's code, flags and settings: what it tells a reader to type."""
    return {word.lower().strip(".,;:") for groups in _CODE_TOKEN.findall(text) for token in groups if token
            for word in token.split() if len(word) > 1}


def _repeats_earlier(comments: list[tuple[dict, str, str]], j: int, only: int | None = None) -> bool:
    """Comment j only repeats what an earlier comment by someone else told to type ("--torch 2.5.1
    fixed the install, thanks"): a confirmation of that comment, not a fix of its own. A comment
    that adds a setting of its own (the diagnosis's `ray status`, then its own `ray start
    --address=...`) is its author's fix."""
    mine = _code_words(comments[j][1])
    if not mine:
        return False
    author = str(comments[j][0].get("author") or "").lower()
    earlier = [only] if only is not None else range(j)
    told = set()
    for k in earlier:
        if str(comments[k][0].get("author") or "").lower() != author:
            told |= _code_words(comments[k][1])
    return bool(mine & told) and not any(_CODE_LIKE.search(word) for word in mine - told)


def reporter_verdicts(comments: list[tuple[dict, str, str]]) -> dict[int, str]:
    """What the reporter said of the comments before theirs: comment index -> "confirmed", "thanked"
    or "denied". Each of their replies speaks of the comment it quotes or @mentions, else of the
    latest earlier comment by someone else that told them something to do (a "thanks, we'll add it
    to the FAQ" after the fix is not what they tried), else of the latest one by someone else."""
    verdicts: dict[int, str] = {}
    for j, (_, body, role) in enumerate(comments):
        if role != "reporter":
            continue
        prose = split_body(body).prose
        if self_solved(body, prose) and not _repeats_earlier(comments, j):
            continue  # their own fix: it speaks of no one else's
        if _DENIED.search(prose) and not _STRONGLY_CONFIRMED.search(prose):
            verdict = "denied"
        elif _CONFIRMED.search(prose):
            verdict = "confirmed"
        elif _THANKED.search(prose):
            verdict = "thanked"
        else:
            continue
        target = _addressed(comments, j)
        if target is None:
            others = [k for k in range(j) if comments[k][2] != "reporter"]
            told = [k for k in others if holds_instructions(comments[k][1])
                    or (advises(split_body(comments[k][1]).prose) and not _THANKS_LEAD.match(comments[k][1].strip()))]
            target = (told or others or [None])[-1]
        if target is not None and comments[target][2] != "reporter":
            verdicts.setdefault(target, verdict)
    return verdicts


def _addressed(comments: list[tuple[dict, str, str]], j: int) -> int | None:
    """The comment that comment j answers when it says so: it quotes one, or @mentions its author."""
    body = comments[j][1]
    quoted = " ".join(m.group(1).strip() for line in body.split("\n") if (m := _QUOTE.match(line)) and m.group(1).strip())
    if len(quoted) >= 12:
        for k in range(j - 1, -1, -1):
            if quoted[:60] in " ".join(comments[k][1].split()):
                return k
    for name in _MENTION.findall(body):
        for k in range(j - 1, -1, -1):
            if str(comments[k][0].get("author") or "").lower() == name.lower():
                return k
    return None


def _answered(comments: list[tuple[dict, str, str]], i: int) -> dict | None:
    """The comment a short reply answers: the one it quotes or names, else the nearest earlier
    comment by someone else that asks something. None when it answers the issue itself."""
    if any(_QUOTE.match(line) for line in comments[i][1].split("\n")):
        return None  # it quotes its question already
    k = _addressed(comments, i)
    if k is None:
        author = str(comments[i][0].get("author") or "").lower()
        for j in range(i - 1, -1, -1):
            if str(comments[j][0].get("author") or "").lower() != author:
                k = j
                break
    if k is None or not re.search(r"[?？]|\b(?:how|what|why|which|whether|is there|can i|should i)\b|怎么|如何|是否|能不能|吗",
                                  comments[k][1], re.I):
        return None
    return comments[k][0]


def _body_fix(thread: dict) -> Fix | None:
    """A workaround the reporter wrote into the issue's body ("Update: solved by ...")."""
    body = split_body(thread.get("body"))
    paragraphs = re.split(r"\n\s*\n", body.prose)
    for at, paragraph in enumerate(paragraphs):
        if at and _BODY_FIX.match(paragraph):
            text = "\n\n".join(paragraphs[at:at + 2]).strip()
            score = WEIGHTS["maintainer"]  # the reporter's own account of what worked
            instructions = holds_instructions(text) or bool(body.of_kind("script", "code") and at)
            score += WEIGHTS["instructions"] if instructions else 0.0
            score += WEIGHTS["advice"] if advises(text) or _SELF_SOLVED.search(text) else 0.0
            return Fix("body", "reporter", round(score, 3), text, None, False, None, ["body"])
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
