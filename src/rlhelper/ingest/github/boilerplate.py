"""Notices that say nothing about the problem, recognised by how they behave across a repository.

    found = Notices()
    for thread in threads: found.add_thread(thread)
    flagged = found.flagged()          # {(issue number, comment position), ...}

A triage account (often an ordinary login with a MEMBER association, not a `[bot]`) closes old
issues with a notice: the last activity, an evidence list, the stale policy, an invitation to
reopen. Written per issue, in one language or two, no two are byte-identical, so no phrase list or
hash catches them, and one repository's wording says nothing of another's. What they share is
behaviour:

* **echoes**: one account posts much the same text on many threads. Each comment of an account
  that commented on `MIN_THREADS` or more threads is reduced to word pairs (numbers, dates, links,
  @mentions and #refs masked: what a per-issue notice varies), MinHashed and banded (LSH); it is
  an echo when the account left a comment of estimated Jaccard similarity >= `SIMILAR` on at least
  `MIN_ECHOES` other threads. The bar is low because notices vary (evidence lists, templates,
  two languages); a fix is specific to its thread and no dev fix comment came near it;
* **policy words**: the vocabulary stale bots and triage policies use generally (GitHub's
  actions/stale and probot/stale: an issue "is stale", "no activity", "will be closed", "feel free
  to reopen"; 长时间未活动, 自动关闭, 重新打开), in English and Chinese;
* **timing**: it is the thread's last comment, written at its close, after weeks of silence.

A notice holds no instruction a reader could apply (text.holds_instructions). Its evidence list
may quote a config key or a version, so an echo is still a notice when it also speaks the policy's
words or closes a long-silent thread; an echo with a command and neither of those is the same fix
pasted on many threads (`pip install -U ...`), and stays a fix. A comment with policy words and no
instruction is a notice on its own (a single stale-bot message in a small export); with two or
more of those words, even with an instruction (a footer's link to the contributing guide).

Work is linear: only `SHINGLED_CHARS` of a comment are shingled, and a comment is compared with at
most `MAX_COMPARED` bucket-mates per band. The thresholds and the dev figures behind them are in
eval/DECISIONS.md ("Notices: how a cleanup behaves").
"""

from __future__ import annotations

import re
import zlib
from collections import defaultdict
from datetime import datetime
from functools import lru_cache

import numpy as np

from .text import clean, holds_instructions

MIN_THREADS = 3  # an account must have commented on this many threads to have a pattern
MIN_ECHOES = 2  # near-duplicates on this many other threads make a comment an echo
SIMILAR = 0.25  # estimated Jaccard of masked word 2-shingles
SILENCE_DAYS = 14  # a last comment at the close after this long a silence is a cleanup's timing
AT_CLOSE_SECONDS = 86_400
SHINGLE = 2
PERMUTATIONS = 64
BANDS = 32  # of two rows each: a pair as far apart as the SIMILAR bar still shares a band most of the time
TEXT_CHARS = 3000  # of a comment read for policy words and instructions
SHINGLED_CHARS = 2000  # of a comment MinHashed: a notice's template is in its head
MAX_COMPARED = 24
_PRIME = (1 << 61) - 1
_rng = np.random.default_rng(20250806)
_A = _rng.integers(1, _PRIME, PERMUTATIONS, dtype=np.uint64)
_B = _rng.integers(0, _PRIME, PERMUTATIONS, dtype=np.uint64)

_MASKS = [
    (re.compile(r"https?://\S{1,500}"), " url "),
    (re.compile(r"@[A-Za-z0-9][\w-]{0,38}"), " @user "),
    (re.compile(r"#\d{1,7}\b"), " #ref "),
    (re.compile(r"\d+"), "0"),
]
_WORD = re.compile(r"[a-z0-9@#']+|[\u3400-\u9fff]")

# Stale and closing policies' words (GitHub's actions/stale and probot/stale defaults, triage
# policies), English and Chinese. Each names inactivity or a closing for it, never a fix.
STALE_VOCABULARY = re.compile(
    r"\b(?:is|been|marked|marking|labell?ed|as) (?:as )?stale\b|\bstale (?:label|bot|issue|because|policy)\b|\binactiv(?:e|ity)\b|\bno (?:recent )?(?:activity|response|updates?|further activity)\b"
    r"|\bhas(?:n't| not) (?:had|received|seen) (?:any )?(?:activity|response|recent activity)"
    r"|\bwill be (?:automatically )?closed\b|\bautomatically (?:been )?closed\b|\bauto-?clos"
    r"|\b(?:feel free to|please|you can|you may) re-?open\b|\bre-?open (?:it|this|the issue|a new)"
    r"|\bclos(?:e|ing) (?:this|it|the (?:issue|ticket))\b|\bclean(?:ing)? ?up\b"
    r"|\bscheduled (?:cleanup|clean-up|check|triage)\b"
    r"|长时间|无活动|没有活动|未活动|不活跃|没有(?:新的)?(?:回复|更新|进展)|自动关闭|重新打开|重新开启|先关闭|暂时关闭"
    r"|定时(?:清理|任务|检查)|清理(?:检查|规则|标准)|(?:超时|默认)关闭|关闭规则|申请重开",
    re.I)


def masked_words(text: str) -> list[str]:
    text = clean(text)[:SHINGLED_CHARS].lower()
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return _WORD.findall(text)


@lru_cache(maxsize=1 << 18)
def _word_code(word: str) -> int:
    return zlib.crc32(word.encode())


def minhash(words: list[str]) -> np.ndarray | None:
    """The MinHash signature of the text's word pairs; None for a text too short to have a pattern.
    A pair's hash combines its words' CRC32s, so each word is hashed once."""
    if len(words) < SHINGLE + 2:
        return None
    codes = np.fromiter((_word_code(w) for w in words), dtype=np.uint64, count=len(words))
    pairs = np.unique(codes[:-1] * np.uint64(0x9E3779B1) ^ codes[1:])
    return ((np.outer(_A, pairs) + _B[:, None]) % _PRIME).min(axis=1).astype(np.uint32)


POLICY_TERMS = 2  # distinct policy phrases a comment must hold to read as a notice on its words alone


# Every policy phrase holds one of these: the pattern runs only on text that has one.
_POLICY_STEMS = ("stale", "activ", "respon", "update", "clos", "open", "clean", "scheduled", "长时间", "活动", "活跃",
                 "回复", "更新", "进展", "关闭", "打开", "开启", "定时", "清理", "重开")


def stale_words(text: str) -> int:
    """How many distinct stale/closing policy phrases the text holds."""
    text = clean(text)[:TEXT_CHARS]
    lowered = text.lower()
    if not any(stem in lowered for stem in _POLICY_STEMS):
        return 0
    return len({m.group(0).lower() for m in STALE_VOCABULARY.finditer(text)})


def is_notice_text(text: str) -> bool:
    """A notice by its words alone: policy words and no instruction, or two policy phrases."""
    words = stale_words(text)
    return words >= 2 or (words >= 1 and not holds_instructions(text))


def _time(stamp) -> datetime | None:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None
    except ValueError:
        return None


def closes_a_silence(thread: dict, position: int) -> bool:
    """The thread's last comment, written at its close after `SILENCE_DAYS` of silence: a cleanup's timing."""
    comments = thread.get("comments") or []
    if position != len(comments) - 1:
        return False
    written, closed = _time(comments[position].get("created_at")), _time(thread.get("closed_at"))
    before = [t for t in [_time(thread.get("created_at")), *(_time(c.get("created_at")) for c in comments[:position])]
              if t is not None]
    if written is None or closed is None or not before:
        return False
    try:
        return abs((closed - written).total_seconds()) <= AT_CLOSE_SECONDS and (written - max(before)).days >= SILENCE_DAYS
    except TypeError:  # one stamp with a zone, one without
        return False


class Notices:
    """Collects a repository's comments (first pass: what each needs, never its text) and flags its notices."""

    def __init__(self):
        self._threads_of: dict[str, set[int]] = defaultdict(set)
        # (author, issue, position, signature or None, policy phrases, holds an instruction, cleanup timing)
        self._comments: list[tuple[str, int, int, np.ndarray | None, int, bool, bool]] = []

    def add_thread(self, thread: dict) -> None:
        number = thread.get("number")
        for position, comment in enumerate(thread.get("comments") or []):
            author = str(comment.get("author") or "")
            body = comment.get("body")
            if author and isinstance(body, str) and body.strip():
                text = body[:TEXT_CHARS]
                self._threads_of[author].add(number)
                self._comments.append((author, number, position, minhash(masked_words(text)), stale_words(text),
                                       holds_instructions(text), closes_a_silence(thread, position)))

    def flagged(self) -> set[tuple[int, int]]:
        """(issue number, comment position) of every notice: an echo or policy words, with no instruction."""
        prolific = {author for author, threads in self._threads_of.items() if len(threads) >= MIN_THREADS}
        signed = [c for c in self._comments if c[0] in prolific and c[3] is not None]
        buckets: dict[tuple, list[int]] = defaultdict(list)
        rows = PERMUTATIONS // BANDS
        for i, (author, _, _, sig, *_) in enumerate(signed):
            for band in range(BANDS):
                buckets[(author, band, sig[band * rows:(band + 1) * rows].tobytes())].append(i)
        signatures = np.stack([c[3] for c in signed]) if signed else np.zeros((0, PERMUTATIONS), np.uint32)
        numbers = np.array([c[1] for c in signed])
        flagged = set()
        for author, number, position, sig, policy, instructions, closing in signed:
            mates: set[int] = set()
            for band in range(BANDS):
                mates.update(buckets[(author, band, sig[band * rows:(band + 1) * rows].tobytes())][:MAX_COMPARED + 1])
            mates = np.fromiter(mates, dtype=np.int64, count=len(mates))
            mates = mates[numbers[mates] != number]
            close = mates[(signatures[mates] == sig).mean(axis=1) >= SIMILAR] if len(mates) else mates
            if len(set(numbers[close].tolist())) >= MIN_ECHOES and (not instructions or policy or closing):
                flagged.add((number, position))
        for _, number, position, _, policy, instructions, _ in self._comments:
            if (number, position) not in flagged and (policy >= POLICY_TERMS or (policy and not instructions)):
                flagged.add((number, position))
        return flagged
