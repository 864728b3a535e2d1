"""Notices that say nothing about the problem, recognised by how they behave across a repository.

    found = Notices()
    for thread in threads: found.add_thread(thread)
    flagged = found.flagged()          # {(issue number, comment position), ...}

A triage account (often an ordinary login with a MEMBER association, not a `[bot]`) closes old
issues with a notice: the last activity, the stale policy, an invitation to reopen. Written per
issue, no two are byte-identical, so no phrase list or hash catches them, and one repository's
wording says nothing of another's. What they share is behaviour: one account posts near-
identical text on many threads, and none of it is a command or a config a reader could apply.

So each comment of an account that commented on `MIN_THREADS` or more threads is reduced to
word shingles (numbers, dates, links, @mentions and #refs masked, since those are what a
per-issue notice varies), MinHashed, and banded (LSH). A comment is an echo when the same
account left a comment of estimated Jaccard similarity >= `SIMILAR` on at least `MIN_ECHOES`
other threads. An echo that holds no instruction (text.holds_instructions) is a notice: the
same fix pasted on many threads (`pip install -U ...`) stays a fix.

The vocabulary of stale and closing policies (inactivity, "will be closed", "reopen", 长时间
未活动, 自动关闭, 重新打开...) flags a comment with no instruction on its own too: a notice that
happens to be the only one in a small export (two of its phrases: one "stale" may be a stale
cache). That vocabulary is the one stale bots and
triage policies use generally (GitHub's actions/stale, probot/stale), in English and Chinese.

Work is linear: only `TEXT_CHARS` of a comment are shingled, and a comment is compared with at
most `MAX_COMPARED` bucket-mates per band.
"""

from __future__ import annotations

import re
import zlib
from collections import defaultdict

import numpy as np

from .text import clean, holds_instructions

MIN_THREADS = 3  # an account must have commented on this many threads to have a pattern
MIN_ECHOES = 2  # near-duplicates on this many other threads make a comment an echo
SIMILAR = 0.45  # estimated Jaccard of masked word 2-shingles
SHINGLE = 2
PERMUTATIONS = 32
BANDS = 8  # of PERMUTATIONS // BANDS rows each
TEXT_CHARS = 3000
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
    r"\bstale\b|\binactiv(?:e|ity)\b|\bno (?:recent )?(?:activity|response|updates?|further activity)\b"
    r"|\bhas(?:n't| not) (?:had|received|seen) (?:any )?(?:activity|response|recent activity)"
    r"|\bwill be (?:automatically )?closed\b|\bautomatically (?:been )?closed\b|\bauto-?clos"
    r"|\b(?:feel free to|please|you can|you may) re-?open\b|\bre-?open (?:it|this|the issue|a new)"
    r"|\bclos(?:e|ing) (?:this|the) (?:issue|ticket) (?:as|due to|because of|for)\b|\bclean(?:ing)? ?up\b"
    r"|长时间|无活动|没有活动|未活动|不活跃|没有(?:新的)?(?:回复|更新|进展)|自动关闭|重新打开|重新开启|先关闭|暂时关闭",
    re.I)


def masked_words(text: str) -> list[str]:
    text = clean(text)[:TEXT_CHARS].lower()
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return _WORD.findall(text)


def minhash(words: list[str]) -> np.ndarray | None:
    """The MinHash signature of the text's word shingles; None for a text too short to have a pattern."""
    if len(words) < SHINGLE + 2:
        return None
    shingles = {" ".join(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}
    hashes = np.fromiter((zlib.crc32(s.encode()) for s in shingles), dtype=np.uint64, count=len(shingles))
    return ((np.outer(_A, hashes) + _B[:, None]) % _PRIME).min(axis=1)


POLICY_TERMS = 2  # distinct policy phrases a comment must hold to read as a notice on its words alone


def stale_words(text: str) -> int:
    """How many distinct stale/closing policy phrases the text holds."""
    return len({m.group(0).lower() for m in STALE_VOCABULARY.finditer(clean(text)[:TEXT_CHARS])})


def is_notice_text(text: str) -> bool:
    """A comment that speaks the stale/closing policy's words (two phrases: "stale cache" alone is
    a diagnosis) and holds no instruction."""
    return stale_words(text) >= POLICY_TERMS and not holds_instructions(text)


class Notices:
    """Collects a repository's comments (first pass) and flags its notices."""

    def __init__(self):
        self._threads_of: dict[str, set[int]] = defaultdict(set)
        self._comments: list[tuple[str, int, int, str]] = []  # (author, issue, comment position, text)

    def add_thread(self, thread: dict) -> None:
        number = thread.get("number")
        for position, comment in enumerate(thread.get("comments") or []):
            author = str(comment.get("author") or "")
            body = comment.get("body")
            if author and isinstance(body, str) and body.strip():
                self._threads_of[author].add(number)
                self._comments.append((author, number, position, body[:TEXT_CHARS]))

    def flagged(self) -> set[tuple[int, int]]:
        """(issue number, comment position) of every notice: an echo or policy words, with no instruction."""
        prolific = {author for author, threads in self._threads_of.items() if len(threads) >= MIN_THREADS}
        signatures: list[tuple[str, int, int, str, np.ndarray]] = []
        for author, number, cid, text in self._comments:
            if author in prolific:
                sig = minhash(masked_words(text))
                if sig is not None:
                    signatures.append((author, number, cid, text, sig))
        buckets: dict[tuple, list[int]] = defaultdict(list)
        rows = PERMUTATIONS // BANDS
        for i, (author, _, _, _, sig) in enumerate(signatures):
            for band in range(BANDS):
                buckets[(author, band, sig[band * rows:(band + 1) * rows].tobytes())].append(i)
        flagged = set()
        for author, number, cid, text, sig in signatures:
            echoed: set[int] = set()
            for band in range(BANDS):
                mates = buckets[(author, band, sig[band * rows:(band + 1) * rows].tobytes())]
                for j in mates[:MAX_COMPARED + 1]:
                    other = signatures[j]
                    if other[1] != number and other[1] not in echoed and float(np.mean(other[4] == sig)) >= SIMILAR:
                        echoed.add(other[1])
                if len(echoed) >= MIN_ECHOES:
                    break
            if len(echoed) >= MIN_ECHOES and not holds_instructions(text):
                flagged.add((number, cid))
        for _, number, cid, text in self._comments:
            if (number, cid) not in flagged and is_notice_text(text):
                flagged.add((number, cid))
        return flagged
