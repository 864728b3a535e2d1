"""The language an answer is labelled in: the question's."""

from __future__ import annotations

from ..index.lexical import has_han


def language_of(query: str) -> str:
    """"zh" for a question written in Chinese (any Han character), else "en": the answer's labels."""
    return "zh" if has_han(query or "") else "en"
