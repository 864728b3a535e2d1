"""What one comment of a thread is, as numbers a model can weigh: who wrote it, what it holds, what
happened after it, where it is, and what thread it is in.

    rows = comment_features(thread, comments)     # comments: [(position, comment, body, role)]
    rows[i]["instructions"], rows[i]["confirmed"], ...   (each in [0, 1]; FEATURES names them all)

The signals are the ones trackers show to a reader, in English and Chinese:

* who: the comment's author association (a maintainer, a contributor, another user) or the
  reporter; a comment that the repository-wide pass flagged as a notice (boilerplate.py), or that
  speaks a stale policy's words;
* what it holds: code, config, flags or a command (text.holds_instructions), advice or a diagnosis,
  a question back, a "+1", a thank-you, a pasted log, links to docs, code, pull requests or issues;
* what happened after it: the reporter confirmed it, thanked, or said it still fails (a reply speaks
  of the comment it quotes or @mentions, else of the latest one that told them something to do);
  approving and doubting reactions;
* where it is: first reply, last comment, the last substantive reply before the close, after the close;
* the thread: open, or closed as not planned.

How much each counts is learned from labelled threads (resolution_model.py), not set here.
Every pattern is anchored or bounded; a comment is read for at most JUDGED_CHARS.
"""

from __future__ import annotations

import math
import re

from .text import holds_instructions, split_body

MAINTAINERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
SHORT_REPLY = 280  # characters: a reply this short is quoted with the comment it answers

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
    r"|\bI (?:realized|realised|figured out|understand now)\b"
    r"|我(?:已经|终于)?解决|解决(?:方法|办法|方案)|原来是|发现是|问题(?:出)?在|原因是|是因为|通过.{1,40}解决|改成.{1,60}后"
    r"|(?:可以|基本)?确认是|后来(?:想明白|发现|解决)|想明白了|搞明白了", re.I)
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
_QUOTE = re.compile(r"^\s*>\s?(.*)$")
_MENTION = re.compile(r"@([A-Za-z0-9][\w-]{0,38})")


# A promise, not an answer: "looking into it", "we're going to work on it", "会跟进".
_PENDING = re.compile(r"\b(?:look(?:ing)? into|tak(?:e|ing) a look|(?:will|'ll|going to) (?:check|investigate|look|work on|fix)"
                      r"|investigating|working on (?:it|this|a fix)|on our (?:list|radar|roadmap)|stay tuned|in progress)\b"
                      r"|跟进|在看|看一下|排查中|稍后|正在(?:修复|处理|开发|排查)|会(?:尽快)?(?:修复|处理|支持)", re.I)
_INLINE_CODE = re.compile(r"`[^`\n]{1,300}`")
_URL = re.compile(r"https?://[^\s)>\]\"']{1,300}", re.I)
_DOC_URL = re.compile(r"readthedocs|/docs?/|//docs\.|\.md\b|\.rst\b|\.html?\b|/wiki", re.I)
_PR_REF = re.compile(r"\b(?:PR|pull request)\s*#?\d{1,7}\b|\b(?:fixed|resolved|closed) (?:in|by|via) #\d{1,7}\b", re.I)
_HASH_REF = re.compile(r"(?<![\w/&])#\d{1,7}\b")

# The features, in the order the model's weights are stored. Each is in [0, 1].
FEATURES = (
    "maintainer", "contributor", "reporter", "notice", "policy_words", "notice_with_advice",
    "instructions", "advice", "asks", "only_asks", "pending", "me_too", "acknowledges", "tiny", "brief",
    "self_solved",
    "repeats_earlier", "approved", "confirmed", "denied", "approving", "doubting",
    "first_reply", "last_comment", "last_before_close", "after_close", "length", "log_only",
    "doc_link", "code_link", "pr_link", "issue_link", "pointer", "quotes", "short_answer", "thread_open",
    "not_planned",
)
POINTER_CHARS = 300  # a comment this short with a link points somewhere: a doc page, a script, a PR, an issue
BRIEF_CHARS = 80  # a comment this short with nothing to apply, no advice and no link: "Looking into it."


def role_of(comment: dict, reporter: str) -> str:
    """"reporter", "maintainer" (OWNER, MEMBER, COLLABORATOR), "contributor" or "other"."""
    author = str(comment.get("author") or "")
    if reporter and author.lower() == reporter.lower():
        return "reporter"
    association = str(comment.get("association") or "").upper()
    if association in MAINTAINERS:
        return "maintainer"
    return "contributor" if association == "CONTRIBUTOR" else "other"


def comment_features(thread: dict, comments: list[tuple[dict, str, str]], notices: list[bool],
                     policy: list[int]) -> tuple[list[dict], list[dict | None]]:
    """Per comment (as resolve() keeps them: (comment, cleaned body, role)), its features, and the
    comment a short reply answers (or None). `notices`: flagged as a notice; `policy`: how many
    stale-policy phrases it holds."""
    closed_at = str(thread.get("closed_at") or "")
    is_open = str(thread.get("state") or "").lower() != "closed"
    substantive = [i for i, (c, body, role) in enumerate(comments)
                   if role != "reporter" and not notices[i] and not _ME_TOO.match(body.strip())
                   and (not closed_at or str(c.get("created_at") or "") <= closed_at)]
    last_substantive = substantive[-1] if substantive else None
    verdicts = reporter_verdicts(comments)
    rows, answered = [], []
    for i, (comment, body, role) in enumerate(comments):
        stripped = body.strip()
        split = split_body(body)
        prose = split.prose
        instructions = holds_instructions(body)
        advice = advises(prose)
        asks = bool(_ASKS.search(prose)) and not advice
        # "Same here", alone or with the log it pasted: agreement, whatever the log's length.
        me_too = len(prose.strip()) < 160 and bool(_ME_TOO.match(stripped) or _ME_TOO_LEAD.match(stripped)) \
            and not instructions
        reactions = comment.get("reactions") or {}
        up, down = _count(reactions.get("up")), _count(reactions.get("down"))
        verdict = verdicts.get(i)
        repeats = role == "reporter" and _repeats_earlier(comments, i)
        answers = _answered(comments, i) if role != "reporter" and len(stripped) <= SHORT_REPLY else None
        answered.append(answers)
        text = body[:4000]
        links = _links(text)
        rows.append({
            "maintainer": float(role == "maintainer"),
            "contributor": float(role == "contributor"),
            "reporter": float(role == "reporter"),
            "notice": float(notices[i]),
            "policy_words": min(policy[i], 3) / 3,
            "notice_with_advice": float(notices[i] and (instructions or advice)),
            "instructions": float(instructions),
            "advice": float(advice),
            "asks": float(asks),
            "only_asks": float(asks and only_asks(prose)),
            "me_too": float(me_too),
            "acknowledges": float(role != "reporter" and bool(_THANKS_LEAD.match(stripped)) and not instructions),
            "tiny": float(not instructions and len(stripped) < 15),
            "pending": float(not me_too and bool(_PENDING.search(prose[:2000]))),
            "brief": float(len(stripped) < BRIEF_CHARS and not (instructions or advice or any(links))),
            # Repeating the flag someone else suggested confirms their answer; it is no solution of one's own.
            "self_solved": float(role == "reporter" and not repeats and self_solved(body, prose, instructions)),
            "repeats_earlier": float(repeats),
            # The reporter approved of it: "works now" (confirmed) or only thanked. Few threads show a
            # confirmation in words a pattern knows, so the two share a feature, and "confirmed" adds to it.
            "approved": float(verdict in ("confirmed", "thanked")),
            "confirmed": float(verdict == "confirmed"),
            "denied": float(verdict == "denied"),
            "approving": min(1.0, math.log2(1 + up) / 4),
            "doubting": min(1.0, math.log2(1 + down) / 4),
            "first_reply": float(i == 0),
            "last_comment": float(i == len(comments) - 1),
            "last_before_close": float(i == last_substantive and not is_open),
            "after_close": float(bool(closed_at) and str(comment.get("created_at") or "") > closed_at),
            "length": min(1.0, math.log1p(len(stripped)) / math.log1p(4000)),
            "log_only": float(bool(split.of_kind("log")) and not instructions),
            "doc_link": float(links[0]),
            "code_link": float(links[1]),
            "pr_link": float(links[2]),
            "issue_link": float(links[3]),
            "pointer": float(any(links) and len(stripped) <= POINTER_CHARS),
            "quotes": float(any(_QUOTE.match(line) for line in stripped.split("\n")[:200])),
            "short_answer": float(answers is not None),
            "thread_open": float(is_open),
            "not_planned": float(str(thread.get("state_reason") or "").lower() == "not_planned"),
        })
    return rows, answered


def _links(text: str) -> list[bool]:
    """Links to docs, code, pull requests, issues: the URLs found once, then told apart by their paths."""
    urls = _URL.findall(text) if "http" in text else []
    hashed = "#" in text
    return [any(_DOC_URL.search(u) for u in urls),
            any("github.com/" in u and ("/blob/" in u or "/tree/" in u) for u in urls),
            any("/pull/" in u for u in urls) or bool(_PR_REF.search(text)),
            any("/issues/" in u for u in urls) or (hashed and bool(_HASH_REF.search(text)))]


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def advises(prose: str) -> bool:
    """Advice or a diagnosis in a sentence that is not a question ("是否开启了 multi_turn？" asks)."""
    for sentence in _SENTENCE.findall(prose):
        sentence = sentence.strip()
        if not sentence or sentence.endswith(("?", "？")) or _ASKS.search(sentence):
            continue
        if _ADVICE.search(sentence):
            return True
    return False


def only_asks(prose: str) -> bool:
    """Every sentence asks (a question, a request for logs or versions): nothing in it is an answer."""
    prose = _INLINE_CODE.sub("code", prose)  # `gizmo.prefetch` is no sentence's end
    sentences = [s.strip() for s in _SENTENCE.findall(prose) if len(s.strip()) > 2]
    return bool(sentences) and all(s.endswith(("?", "？")) or _ASKS.search(s) for s in sentences)


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
SELF_SOLVED = _SELF_SOLVED  # resolution.py reads a body workaround with it
