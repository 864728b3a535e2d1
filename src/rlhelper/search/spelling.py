"""Misspelt query words, matched to the index's own vocabulary (queries only; docs stay as written).

    corrector = Corrector(bm25.vocabulary)
    corrector.corrections("memroy")  -> ["memory"]

Users type from memory ("ilegal memroy acess sglang"), and BM25 finds nothing
for a word no document holds, so the embedder alone decided, and it ranked
"SGLang Arguments" above "Illegal memory access". A word the index does not
know is looked up among the words it does know one edit away (a letter
added, dropped, changed, or two swapped), with a deletion index (SymSpell's
idea: two words are one edit apart when deleting at most one letter from
each makes them equal). Only plain words of five letters or more: shorter
ones have too many neighbours, and identifiers, numbers and Chinese are
matched exactly or not at all.

A word the docs do not use is not a typo when it is English: "switched",
"taken", "pausing" and "stage" were "corrected" to "switche", "token",
"parsing" and "stale". So a word is corrected only when an English
dictionary does not know it either (pyspellchecker's word list, loaded only
the first time an unknown word has a neighbour; the tokenizer's
plural-stripped forms such as "crashe" are looked up with their "s"). What
this did on the eval sets: eval/DECISIONS.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cached_property, lru_cache

_PLAIN_WORD = re.compile(r"[a-z]{5,40}")
MAX_CORRECTIONS = 3  # per word: more would be a guess, not a correction
BUILD_AFTER = 32  # words looked up one by one before the deletion index is built (Corrector._sharing_a_deletion)
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1:] for i in range(len(word))} | {word}


@lru_cache(maxsize=1)
def _english() -> Callable[[str], bool]:
    from spellchecker import SpellChecker  # loading its word list takes a noticeable moment: only when needed

    known = SpellChecker(language="en", distance=1).word_frequency
    return lambda word: word in known or word + "s" in known


def is_english(word: str) -> bool:
    """Whether an English dictionary holds the word (lower case)."""
    return _english()(word)


class Corrector:
    """Corrections for words an index does not hold, from the words it does."""

    def __init__(self, vocabulary: Iterable[str], is_word: Callable[[str], bool] = is_english):
        self._vocabulary = vocabulary
        self._is_word = is_word  # a real word the docs do not use is not a typo
        self._looked_up = 0  # words looked up without the deletion index

    @cached_property
    def _by_delete(self) -> dict[str, set[str]]:
        """Each known plain word under itself and every one-letter deletion of it (built on first use)."""
        index: dict[str, set[str]] = {}
        for term in self._vocabulary:
            if _PLAIN_WORD.fullmatch(term):
                for key in _deletes(term):
                    index.setdefault(key, set()).add(term)
        return index

    def corrections(self, word: str) -> list[str]:
        """Known words one edit from `word`, closest in length first; [] for a known, non-plain or English word."""
        if word in self._vocabulary or not _PLAIN_WORD.fullmatch(word):
            return []
        found = {term for term in self._sharing_a_deletion(word) if _one_edit(word, term)}
        if not found or self._is_word(word):  # the dictionary last: most unknown words have no neighbour
            return []
        return sorted(found, key=lambda term: (abs(len(term) - len(word)), term))[:MAX_CORRECTIONS]


    def _sharing_a_deletion(self, word: str) -> set[str]:
        """The known plain words that share a deletion key with `word`. The first few words of a process
        (a question's) are looked up by making those words (each key, and each key with a letter put
        back: a plain word is letters only), which costs less than indexing the whole vocabulary; from
        BUILD_AFTER words on (a conversation, a server) the deletion index is built and asked."""
        if "_by_delete" in vars(self) or self._looked_up >= BUILD_AFTER:
            found: set[str] = set()
            for key in _deletes(word):
                found |= self._by_delete.get(key, set())
            return found
        self._looked_up += 1
        vocabulary, made = self._vocabulary, set()
        for key in _deletes(word):
            made.add(key)
            made.update(key[:i] + c + key[i:] for i in range(len(key) + 1) for c in _LETTERS)
        return {term for term in made if term in vocabulary and _PLAIN_WORD.fullmatch(term)}


def _one_edit(a: str, b: str) -> bool:
    """True when b is one insertion, deletion, substitution or adjacent swap away from a.
    (Equal deletion keys also pair words two substitutions apart in some cases; this rules them out.)"""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diffs = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        return len(diffs) == 1 or (len(diffs) == 2 and diffs[1] == diffs[0] + 1
                                   and a[diffs[0]] == b[diffs[1]] and a[diffs[1]] == b[diffs[0]])
    shorter, longer = (a, b) if len(a) < len(b) else (b, a)
    return any(longer[:i] + longer[i + 1:] == shorter for i in range(len(longer)))
