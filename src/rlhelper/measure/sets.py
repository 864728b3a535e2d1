"""The eval sets, and when a search hit counts as the entry an item expects.

    items = load_eval_set(Path("eval/seeds.jsonl"), split="dev")
    gains = relevance_gains([entry_locations(h.entry) for h in hits], items[0].expected)

An eval item lists the doc sections that answer it; any one of them answers. A
hit matches an expected section when the document is the same (paths compared
from the tail) and the headings are equal once markup, width and case are
folded; an entry also matches where its merged duplicates and twins live.

An item may expect a GitHub thread instead: {"repo": "verl-project/verl", "number": 1234}
matches the entry of that issue in the repository's thread collection (github:OWNER/REPO,
ingest/github/entries.py), whatever its title.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .. import config
from ..errors import ConfigError

DEFAULT_EVAL_FILE = config.REPO_ROOT / "eval" / "seeds.jsonl"
KINDS = ("error", "question", "traceback", "unanswerable")
ANY_HEADING = "*"  # an expected thread: any heading of its document (an issue's title may be edited)


def thread_doc(repo: str, number: int) -> str:
    """Where a thread's entry lives, as entry_locations names it: its collection, then issues/N."""
    return f"github:{repo}/issues/{int(number)}"


def expected_place(raw: dict) -> dict:
    """One expected entry of an eval line: {"doc", "heading"}, or a thread {"repo", "number"}."""
    if "repo" in raw and "number" in raw:
        repo, number = str(raw["repo"]), int(raw["number"])
        return {"doc": thread_doc(repo, number), "heading": ANY_HEADING, "repo": repo, "number": number}
    return {"doc": str(raw["doc"]), "heading": str(raw["heading"])}
SPLITS = ("dev", "test")


@dataclass
class EvalItem:
    id: str
    query: str
    kind: str
    lang: str
    expected: list[dict]  # [{"doc": ..., "heading": ...}]; empty: the docs do not answer
    split: str | None = None  # None: the item belongs to every split
    # A conversation's messages before `query` (one, or a list in order): asked first (followup.py);
    # small talk among them ("thanks") gets its word back and leaves the topic as it was (smalltalk.py).
    previous: str | list[str] | None = None

    @property
    def answerable(self) -> bool:
        return bool(self.expected)

    def to_dict(self) -> dict:
        return {"id": self.id, "split": self.split, **({"previous": self.previous} if self.previous else {}),
                "query": self.query, "kind": self.kind, "lang": self.lang,
                "expected": [dict(e) for e in self.expected]}



def _previous(raw) -> str | list[str] | None:
    if not raw:
        return None
    return [str(m) for m in raw] if isinstance(raw, list) else str(raw)



def load_eval_set(path: Path, split: str | None = None) -> list[EvalItem]:
    """Read a JSON Lines eval file; `split` keeps that split's items (and split-less ones).

    A malformed line raises ConfigError naming the line, because a silently
    skipped item would change every number.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ConfigError(f"Cannot read the eval file {path}: {e.strerror or e}") from e
    items, seen = [], set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            expected = [expected_place(e) for e in raw.get("expected") or []]
            item = EvalItem(
                id=str(raw.get("id", number)),
                query=str(raw["query"]),
                kind=str(raw.get("kind") or ("question" if expected else "unanswerable")),
                lang=str(raw.get("lang") or "en"),
                expected=expected,
                split=raw.get("split") or None,
                previous=_previous(raw.get("previous")),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ConfigError(f"{path}:{number}: not an eval item ({e}); expected "
                              '{"id", "split", "query", "kind", "lang", "expected": [{"doc", "heading"} or '
                              '{"repo", "number"}]} (and "previous" for a follow-up)') from e
        if item.id in seen:
            raise ConfigError(f"{path}:{number}: duplicate id {item.id!r}")
        seen.add(item.id)
        if split is None or item.split in (None, split):
            items.append(item)
    return items


# --- matching a hit to an expected entry ----------------------------------------------


def normalize_heading(text: str) -> str:
    """Heading text compared loosely: inline markup and backticks gone, NFKC, spaces collapsed, casefolded."""
    from ..ingest.parse.inline import markdown_heading_text, rst_heading_text

    text = rst_heading_text(markdown_heading_text(text or "")).replace("`", "")
    # NFKC folds full-width punctuation ("：" -> ":") that Chinese headings mix freely.
    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


def doc_matches(actual: str, expected: str) -> bool:
    """Same document: equal paths, or one path is the tail of the other ("faq.rst" ~ "verl/faq.rst"),
    or the expected name is the actual file's stem ("000_17cc8c75aeb7db0e")."""
    a, e = PurePosixPath(actual.replace("\\", "/")).parts, PurePosixPath(expected.replace("\\", "/")).parts
    if not a or not e:
        return False
    n = min(len(a), len(e))
    if a[-n:] == e[-n:]:
        return True
    return len(e) == 1 and not PurePosixPath(e[0]).suffix and PurePosixPath(a[-1]).stem == e[0]


def entry_locations(entry) -> list[tuple[str, str]]:
    """(doc, heading) of every place an entry's text lives: itself, its merged duplicates, and
    its twins (the same section translated, or another version of the page: twins.py), since
    the search shows a section once across them, in the asker's language.

    Docs are prefixed with the collection so an expected "seeds/x.txt" matches as well as "x.txt".
    """
    collection = getattr(entry, "collection", "") or ""

    def where(doc: str, in_collection: str = collection) -> str:
        return f"{in_collection}/{doc}" if in_collection else doc

    places = [(where(entry.doc), entry.heading)]
    places += [(where(a.get("doc", entry.doc)), a.get("heading", "")) for a in getattr(entry, "also_at", None) or []]
    places += [(where(t["doc"], t.get("collection", "")), t["heading"]) for t in getattr(entry, "twins", None) or []]
    return places


def matching_expected(locations: Iterable[tuple[str, str]], expected: Sequence[dict]) -> set[int]:
    """Indexes of the expected entries that one of these (doc, heading) locations matches."""
    found = set()
    places = [(doc, normalize_heading(heading)) for doc, heading in locations]
    for i, want in enumerate(expected):
        if want["heading"] == ANY_HEADING:
            if any(doc_matches(doc, want["doc"]) for doc, _ in places):
                found.add(i)
            continue
        heading = normalize_heading(want["heading"])
        if any(h == heading and doc_matches(doc, want["doc"]) for doc, h in places):
            found.add(i)
    return found


def relevance_gains(ranked_locations: Sequence[Iterable[tuple[str, str]]], expected: Sequence[dict]) -> list[int]:
    """Binary gain per rank: 1 when the hit matches an expected entry that no earlier hit matched."""
    credited: set[int] = set()
    gains = []
    for locations in ranked_locations:
        new = matching_expected(locations, expected) - credited
        gains.append(1 if new else 0)
        credited |= new
    return gains


def distinct_expected(expected: Sequence[dict]) -> int:
    return len({(e["doc"], "") if e["heading"] == ANY_HEADING else
                (PurePosixPath(e["doc"]).name, normalize_heading(e["heading"])) for e in expected})
