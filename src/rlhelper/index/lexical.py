"""Lexical retrieval: an identifier-aware tokenizer and a sparse BM25 index.

    tokenize(text)                               -> ["outofmemoryerror", "out", "memory", ...]
    phrases(text)                                -> ["reward+spec", "spec+field", "field+required"]
    entry_text_for_lexical(heading, crumbs, body) -> the text an entry is indexed under
    entry_tokens(heading, crumbs, body)          -> its tokens, with the heading's phrases
    BM25Index.build(token_lists)                 -> index; .search(tokens, k, allowed) -> (ids, scores)
    index.save(folder) / BM25Index.load(folder)  -> bm25.npz + bm25_vocab.json, no pickle

Tokenizer trade-offs (the measurements behind them, and the commands, are in
eval/DECISIONS.md):

* Error identifiers are kept whole *and* split. A pasted
  `actor_rollout_ref.rollout.gpu_memory_utilization` should hit the entry that
  names exactly that key (the rare whole token carries a high IDF), and a
  question that only says "gpu memory utilization" should still reach it
  through the parts. Same for `torch.cuda.OutOfMemoryError` (dotted + camel)
  and `--sglang-mem-fraction-static`. Hyphenated names also get a snake_case
  spelling because slime's docs write the same setting both ways
  (`--max-tokens-per-gpu` and `max_tokens_per_gpu`, qa.md item 3).
* Chinese is cut into overlapping character bigrams, not jieba words:
  loading jieba costs more than the whole time budget of `rlhelper ask`,
  bigrams cost nothing to load, and index and query must be tokenized the
  same way, so jieba could not be kept for documents only. Bigrams are the
  classic segmentation-free choice for Chinese IR, and they ranked as well
  (adding unigrams ranked worse). A one-character run becomes a unigram.
* Stemming is a light plural strip (GPUs -> gpu, weights -> weight), only on
  plain words and identifier parts; whole identifiers are never altered (a
  stemmer cost error strings the word forms that tell them apart). The
  heading is counted three times (twice added, once in the body).
* Word pairs of the heading ("phrases") are indexed as extra terms, and a
  query's word pairs are searched for. Headings name the error, and near
  neighbours share its words in another order: `reward_spec field is
  required` against `Field 'reward_spec' must be a dictionary`, or "CUDA out
  of memory during generation" against "... out of memory on startup". A
  pair only matches the words in that order, so the exact error wins the
  tie. Pairs come from headings only: body pairs doubled the postings for no
  measurable gain.
* Stopwords are a short English list. "no", "not", "cannot" and "out" stay:
  error messages turn on them ("No module named", "timed out").

BM25 trade-offs: postings are CSR arrays in numpy (term -> doc ids + the
per-posting term-frequency factor, precomputed at build time because k1 and b
are fixed per index), so a query is one vectorised gather-add per query term,
fast enough at the scale bench's 100k entries without scipy. Query terms
repeated in a pasted log count with 1 + ln(qtf), so one word repeated fifty
times cannot drown the rest. Only documents that match at least one term are returned.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import IndexCorruptError

# Bump whenever tokenize() output changes: indexes built with another version
# must be rebuilt (the index manifest records settings()).
TOKENIZER_VERSION = "rlh-lex-3:ident+camel+flag,cjk-bigram,plural-s,stop-en,heading-phrases"

BM25_FILE = "bm25.npz"
VOCAB_FILE = "bm25_vocab.json"
HEADING_REPEATS = 2  # the heading counts this many times on top of its line in the body
PHRASE_JOINER = "+"  # never inside a word token, so a phrase term cannot collide with one

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_LETTER = "0-9A-Za-z_\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff"
# One pass over the text: a run of Han characters, or a word made of letter
# runs joined by single '.' or '-' (dotted config keys, hyphenated flags),
# optionally led by '--'. No nested quantifiers over the same characters, so
# matching stays linear on any input.
_TOKEN = re.compile(
    rf"(?P<han>[{_HAN}]+)|(?P<word>(?:(?<![\w\-])--)?[{_LETTER}]+(?:[.\-][{_LETTER}]+)*)"
)
_HAS_HAN = re.compile(f"[{_HAN}]")
_SEPARATORS = re.compile(r"[._\-]+")
_HAS_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]{2}")
# Product names whose inner capitals are not word boundaries; found in the docs
# inside longer identifiers such as SGLangInferenceEngine (SkyRL seed).
_PROTECTED = ("SGLang", "vLLM", "SkyRL", "RLinf", "PyTorch", "FlashInfer", "FlashAttention",
              "TensorDict", "DeepSpeed", "DeepEP", "ManiSkill", "OpenVLA", "MuJoCo", "KubeRay")
_CAMEL_PART = re.compile(
    "|".join(map(re.escape, _PROTECTED)) + r"|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W_]+"
)
_HEX = re.compile(r"0x[0-9a-f]+")
_PLURAL_US = frozenset({"gpus", "cpus", "npus", "tpus"})  # not "status", "corpus"
MAX_TOKEN_CHARS = 80  # longer "words" are base64, hashes or minified data

STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from as into onto
    is are was were be been being am it its this that these those there here
    i me my we our us you your he she they them their his her
    what which who whom how why when where do does did doing done
    have has had having will would shall should can could may might must
    so such than too very just also only about over again once all any both each
    few more most other some own same please etc e.g i.e eg ie via""".split()
)

# The same words in Chinese, as the bigrams and single characters the tokenizer makes of them:
# question scaffolding ("怎么办", "如何", "为什么") and pronouns or particles. The index keeps
# them (they sit inside bigrams that find the Chinese entries); the abstention signals drop
# them, or "怎么烤面包" (how to bake bread) matched an FAQ heading "…怎么办？" on "怎么" alone.
CHINESE_FUNCTION_WORDS = frozenset(
    """怎么 怎样 么办 么样 如何 什么 为什 为何 是否 哪些 哪个 哪里 能否 可以 应该 一下 时候 的时
    我的 我们 这个 那个 这样 到底 了吗 了怎 该怎 的 了 吗 呢 吧 是 我 在 和 与""".split()
)


# --- tokenizer ----------------------------------------------------------------

def has_han(text: str) -> bool:
    """Whether the text holds Chinese characters."""
    return _HAS_HAN.search(text) is not None


def tokenize(text: str) -> list[str]:
    """Lowercased search tokens of `text` (English, identifiers and Chinese).

    Deterministic and context-free: the same surface form always yields the
    same tokens, so documents and queries meet in one vocabulary.
    """
    if not text:
        return []
    text = unicodedata.normalize("NFKC", text)  # full-width ＯＯＭ -> OOM
    tokens: list[str] = []
    for match in _TOKEN.finditer(text):
        han = match.group("han")
        if han is not None:
            tokens.extend(han_bigrams(han))
        else:
            tokens.extend(_word_tokens_of(match.group("word")))
    return tokens


@lru_cache(maxsize=1 << 16)
def _word_tokens_of(raw: str) -> tuple[str, ...]:
    """word_tokens, remembered: a pasted log or a long learned question repeats its words."""
    return tuple(word_tokens(raw))


def han_bigrams(run: str) -> list[str]:
    """Overlapping bigrams of a run of Han characters; a single character stays."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def word_tokens(raw: str) -> list[str]:
    """Tokens of one word-like match: the whole identifier, then its parts."""
    flag = raw.startswith("--")
    core = raw.lstrip("-")
    if not core:
        return []
    if len(core) > MAX_TOKEN_CHARS:  # the whole is data, not a name; its parts may still be names
        return [t for s in _SEPARATORS.split(core) if s and len(s) <= MAX_TOKEN_CHARS
                for t in _segment_tokens(s)]
    lower = core.lower()
    segments = [s for s in _SEPARATORS.split(core) if s]
    if all(s.isdigit() for s in segments):
        return [lower] if _keep_number(lower, len(segments)) else []
    if _HEX.fullmatch(lower):
        return []  # an address or id, never a search term

    out: list[str] = ["--" + lower] if flag else []  # --colocate, --sglang-mem-fraction-static
    compound = len(segments) > 1
    if compound and lower not in STOPWORDS:  # "e.g", "i.e"
        out.append(lower.replace("-", "_"))  # --max-tokens-per-gpu ~ max_tokens_per_gpu
        for dotted_part in lower.split(".") if "." in lower else ():
            if _SEPARATORS.search(dotted_part):  # a snake/hyphen name inside a dotted key
                out.append(dotted_part.replace("-", "_"))
    for segment in segments:
        out.extend(_segment_tokens(segment))
    return out


def _segment_tokens(segment: str) -> list[str]:
    """A segment without separators: plain word, number, or CamelCase name."""
    if segment.isdigit():
        return [segment] if _keep_number(segment, 1) else []
    if _HAS_CAMEL.search(segment):
        pieces = _CAMEL_PART.findall(segment)
        if len(pieces) > 1:
            whole = segment.lower()
            return [whole] + [t for p in pieces if (t := _plain(p.lower()))]
    plain = _plain(segment.lower())
    return [plain] if plain else []


@lru_cache(maxsize=1 << 16)
def _plain(word: str) -> str | None:
    """A plain word after stopword removal and light stemming (None: dropped)."""
    if word in STOPWORDS:
        return None
    if word.isdigit():
        return word if _keep_number(word, 1) else None
    if len(word) == 1 and word.isascii():
        return None  # single letters: list markers, shell flags (-e, -m)
    return stem(word)


def _keep_number(text: str, segments: int) -> bool:
    """Numbers that identify something (ports, sizes, versions), not noise.

    Single digits are list markers and ranks; more than six digits are pids,
    timestamps and byte counts that never repeat between a log and the docs.
    """
    if segments > 1:
        return True  # 0.6, 535.161.08: decimals and versions stay whole
    return 2 <= len(text) <= 6


def stem(word: str) -> str:
    """Strip an English plural: gpus -> gpu, retries -> retry; leave -ss/-us/-is."""
    if len(word) > 4 and word.endswith("ies") and word.isalpha():
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and word.isascii() and word.isalpha():  # not 1800000ms
        if not word.endswith(("ss", "us", "is")) or word in _PLURAL_US:
            return word[:-1]
    return word


_PHRASE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def phrases(text: str) -> list[str]:
    """Adjacent pairs of the plain English words of `text` ("field+required").

    Words are split at every non-alphanumeric character (identifier parts
    count), stopwords dropped and plurals stripped first, so "reward_spec
    field is required" gives reward+spec, spec+field, field+required.
    """
    words = [w for raw in _PHRASE_WORD.findall(text) if (w := _plain(raw.lower()))]
    return [f"{a}{PHRASE_JOINER}{b}" for a, b in zip(words, words[1:], strict=False)]


def entry_tokens(heading: str, breadcrumb: list[str], body: str) -> list[str]:
    """The BM25 tokens of an entry: its lexical text, and its heading's phrases
    weighted like the heading itself."""
    tokens = tokenize(entry_text_for_lexical(heading, breadcrumb, body))
    return tokens + phrases(heading) * (HEADING_REPEATS + 1)


def entry_text_for_lexical(heading: str, breadcrumb: list[str], body: str) -> str:
    """The text an entry is indexed under: heading weighted, ancestors once, body.

    The heading usually names the error or question the entry answers
    ("Error: `Weight sync timed out`"), so it is repeated; the ancestors give
    the topic ("Weight Sync Issues") to entries whose own heading is terse.
    """
    ancestors = [c for c in breadcrumb if c and c != heading]
    lines = [heading] * HEADING_REPEATS + [" / ".join(ancestors), body]
    return "\n".join(line for line in lines if line)


# --- BM25 ---------------------------------------------------------------------

class BM25Index:
    """Okapi BM25 over CSR postings. Rows are documents in the order given to build()."""

    def __init__(
        self,
        *,
        vocabulary: dict[str, int],
        indptr: np.ndarray,
        doc_ids: np.ndarray,
        weights: np.ndarray,
        idf: np.ndarray,
        doc_lengths: np.ndarray,
        k1: float,
        b: float,
        tokenizer_version: str = TOKENIZER_VERSION,
    ):
        self.vocabulary = vocabulary
        self.indptr = indptr  # postings of term t: doc_ids[indptr[t]:indptr[t+1]]
        self.doc_ids = doc_ids
        self.weights = weights  # tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        self.idf = idf
        self.doc_lengths = doc_lengths
        self.k1 = k1
        self.b = b
        self.tokenizer_version = tokenizer_version

    @property
    def stale(self) -> bool:
        """Built with another tokenizer than this code's: queries would not meet its vocabulary."""
        return self.tokenizer_version != TOKENIZER_VERSION

    @property
    def n_docs(self) -> int:
        return int(self.doc_lengths.shape[0])

    def __len__(self) -> int:
        return self.n_docs

    def settings(self) -> dict:
        """What the index manifest records, to detect a stale index."""
        return {"k1": self.k1, "b": self.b, "tokenizer": self.tokenizer_version}

    @classmethod
    def build(cls, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> BM25Index:
        vocabulary: dict[str, int] = {}
        term_ids, rows, tfs, lengths = _count_terms(docs, vocabulary, first_row=0)
        return cls._from_postings(vocabulary, np.asarray(term_ids, dtype=np.int64), np.asarray(rows, dtype=np.int32),
                                  np.asarray(tfs, dtype=np.float32), lengths, k1, b)

    def with_documents(self, docs: list[list[str]]) -> BM25Index:
        """This index with `docs` added after its rows, as build() over all of them would make it,
        without the old documents' tokens: their term frequencies are read back from the postings
        (a user's few learned questions beside the shipped bank's thousands)."""
        vocabulary = dict(self.vocabulary)
        old_terms = np.repeat(np.arange(len(self.vocabulary), dtype=np.int64), np.diff(self.indptr))
        n_old = self.n_docs
        avgdl = float(self.doc_lengths.mean()) if n_old and self.doc_lengths.sum() else 1.0
        norm = self.k1 * (1.0 - self.b + self.b * self.doc_lengths.astype(np.float32) / avgdl)
        w = self.weights.astype(np.float64)
        old_tfs = np.rint(w * norm[self.doc_ids] / (self.k1 + 1.0 - w))  # weight = tf (k1+1) / (tf + norm)
        term_ids, rows, tfs, lengths = _count_terms(docs, vocabulary, first_row=n_old)
        return self._from_postings(
            vocabulary, np.concatenate([old_terms, np.asarray(term_ids, dtype=np.int64)]),
            np.concatenate([self.doc_ids, np.asarray(rows, dtype=np.int32)]),
            np.concatenate([old_tfs, np.asarray(tfs, dtype=np.float64)]).astype(np.float32),
            np.concatenate([self.doc_lengths, lengths]), self.k1, self.b)

    @classmethod
    def _from_postings(cls, vocabulary: dict[str, int], term_arr: np.ndarray, rows: np.ndarray, tfs: np.ndarray,
                       lengths: np.ndarray, k1: float, b: float) -> BM25Index:
        order = np.argsort(term_arr, kind="stable")  # stable: doc ids stay ascending per term
        doc_ids = np.asarray(rows, dtype=np.int32)[order]
        tf_arr = np.asarray(tfs, dtype=np.float32)[order]
        df = np.bincount(term_arr, minlength=len(vocabulary))
        indptr = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])

        n = len(lengths)
        avgdl = float(lengths.mean()) if n and lengths.sum() else 1.0
        norm = k1 * (1.0 - b + b * lengths.astype(np.float32) / avgdl)
        weights = (tf_arr * (k1 + 1.0) / (tf_arr + norm[doc_ids])).astype(np.float32)
        # Lucene's IDF: always positive, so a term in most documents still counts a little.
        idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
        return cls(vocabulary=vocabulary, indptr=indptr, doc_ids=doc_ids, weights=weights,
                   idf=idf, doc_lengths=lengths, k1=k1, b=b)

    def search(
        self, query_tokens: Iterable[str], k: int, allowed: np.ndarray | None = None,
        extra: dict[str, float] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows by BM25, best first (ties: lower row first).

        Unknown tokens are ignored; rows outside `allowed` (a bool mask, one
        per document) and rows matching no token are never returned, so fewer
        than k rows may come back. `extra` adds terms with a weight of their
        own in place of 1 + ln(qtf) (ignored when a query token already).
        """
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=bool)
            if allowed.shape != (self.n_docs,):
                raise ValueError(f"allowed mask has shape {allowed.shape}, expected ({self.n_docs},)")
        factors = {t: 1.0 + math.log(qtf) for t, qtf in Counter(query_tokens).items() if t in self.vocabulary}
        for term, weight in (extra or {}).items():
            if term in self.vocabulary and term not in factors:
                factors[term] = weight
        if not factors or k <= 0 or self.n_docs == 0:
            return empty
        scores = np.zeros(self.n_docs, dtype=np.float32)
        for term, factor in factors.items():
            t = self.vocabulary[term]
            start, end = self.indptr[t], self.indptr[t + 1]
            # Doc ids are unique within one posting list, so plain fancy-index += is exact.
            scores[self.doc_ids[start:end]] += (self.idf[t] * factor) * self.weights[start:end]
        if allowed is not None:
            scores[~allowed] = 0.0
        candidates = np.flatnonzero(scores > 0)
        if candidates.size == 0:
            return empty
        if candidates.size > k:
            top = np.argpartition(-scores[candidates], k - 1)[:k]
            cutoff = scores[candidates[top]].min()
            candidates = candidates[scores[candidates] >= cutoff]  # keep ties at the cut-off for a stable order
        order = np.lexsort((candidates, -scores[candidates]))[:k]
        ids = candidates[order].astype(np.int64)
        return ids, scores[ids].astype(np.float64)

    # --- what a score means (for abstention) ----------------------------------

    def _query_weights(self, query_tokens: Iterable[str]) -> dict[int, float]:
        """Term id -> idf * (1 + ln qtf) for the known terms of a query, as search() weighs them."""
        counts = Counter(t for t in query_tokens if t in self.vocabulary)
        return {self.vocabulary[t]: float(self.idf[self.vocabulary[t]]) * (1.0 + math.log(q))
                for t, q in counts.items()}

    def upper_bound(self, query_tokens: Iterable[str]) -> float:
        """The score of a document holding every known query term at saturation: a
        posting's weight never exceeds k1 + 1."""
        return sum(self._query_weights(query_tokens).values()) * (self.k1 + 1.0)

    def score(self, query_tokens: Iterable[str], row: int) -> float:
        """BM25 of one document (what search() would give it)."""
        total = 0.0
        for t, weight in self._query_weights(query_tokens).items():
            start, end = self.indptr[t], self.indptr[t + 1]
            at = start + np.searchsorted(self.doc_ids[start:end], row)  # doc ids ascend within a posting list
            if at < end and self.doc_ids[at] == row:
                total += weight * float(self.weights[at])
        return total

    def term_weight(self, token: str) -> float:
        """IDF of a token; one that no document holds weighs as much as the rarest possible."""
        t = self.vocabulary.get(token)
        if t is None:
            return math.log1p((self.n_docs + 0.5) / 0.5)
        return float(self.idf[t])

    def coverage(self, query_tokens: Iterable[str], document_tokens: set[str]) -> float:
        """IDF-weighted share of the query's distinct tokens found in a document's tokens."""
        distinct = set(query_tokens)
        total = sum(self.term_weight(t) for t in distinct)
        if total <= 0:
            return 0.0
        return sum(self.term_weight(t) for t in distinct if t in document_tokens) / total

    # --- persistence ----------------------------------------------------------

    def save(self, folder: Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(
            folder / BM25_FILE,
            indptr=self.indptr,
            doc_ids=self.doc_ids,
            weights=self.weights,
            idf=self.idf,
            doc_lengths=self.doc_lengths,
        )
        terms = [""] * len(self.vocabulary)
        for term, t in self.vocabulary.items():
            terms[t] = term
        meta = {"settings": self.settings(), "terms": terms}
        (folder / VOCAB_FILE).write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> BM25Index:
        folder = Path(folder)
        try:
            meta = json.loads((folder / VOCAB_FILE).read_text(encoding="utf-8"))
            with np.load(folder / BM25_FILE, allow_pickle=False) as data:
                arrays = {name: data[name] for name in ("indptr", "doc_ids", "weights", "idf", "doc_lengths")}
            terms = meta["terms"]
            settings = meta["settings"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexCorruptError(f"BM25 index in {folder} is unreadable ({exc}); rebuild it with `rlhelper ingest --rebuild`.") from exc
        n_terms, n_docs = len(terms), arrays["doc_lengths"].shape[0]
        consistent = (
            arrays["indptr"].shape == (n_terms + 1,)
            and arrays["idf"].shape == (n_terms,)
            and arrays["doc_ids"].shape == arrays["weights"].shape == (int(arrays["indptr"][-1]),)
            and (arrays["doc_ids"].size == 0 or int(arrays["doc_ids"].max()) < n_docs)
        )
        if not consistent:
            raise IndexCorruptError(f"BM25 index in {folder} is inconsistent; rebuild it with `rlhelper ingest --rebuild`.")
        return cls(
            vocabulary={term: t for t, term in enumerate(terms)},
            k1=float(settings["k1"]),
            b=float(settings["b"]),
            tokenizer_version=str(settings.get("tokenizer", "")),
            **arrays,
        )


def _count_terms(docs: list[list[str]], vocabulary: dict[str, int], first_row: int
                 ) -> tuple[list[int], list[int], list[int], np.ndarray]:
    """The postings of `docs` numbered from `first_row`: (term id, row, term frequency) per distinct
    term of each document, and each document's length. New terms join `vocabulary` in order."""
    term_ids, rows, tfs = [], [], []
    lengths = np.zeros(len(docs), dtype=np.int32)
    for row, tokens in enumerate(docs):
        lengths[row] = len(tokens)
        for term, tf in Counter(tokens).items():
            term_ids.append(vocabulary.setdefault(term, len(vocabulary)))
            tfs.append(tf)
            rows.append(first_row + row)
    return term_ids, rows, tfs, lengths
