"""The records that flow through rlhelper: sections and entries in, hits out (answers: answer.model).

Standard library only, so every other module (and a notebook) can import these
without paying for numpy, FAISS or a model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

# An entry quoted in an answer shows at most this many characters; the rest is named with its
# place (answer.capped), so one giant section (a whole log under one heading) cannot flood a
# terminal or a page. Ingest warns about sections far past it (entries.GIANT_SECTION_CHARS).
MAX_QUOTED_CHARS = 6000


def title_trail(doc_title: str, breadcrumb: list[str]) -> list[str]:
    """The document title, then the headings down to a section, with the title said once.

    Most breadcrumbs already start with the title (a Markdown H1), some do not
    (an rst page whose first heading differs from its title); only a leading
    repeat is dropped, since a sub-section may share the title's words. A leading
    heading the title contains counts as a repeat: "Frequently Asked Questions"
    under the title "verl Frequently Asked Questions".
    """
    crumbs = [b for b in breadcrumb if b]
    if crumbs and doc_title and crumbs[0].casefold() in doc_title.casefold():
        crumbs = crumbs[1:]
    return [t for t in [doc_title, *crumbs] if t]


@dataclass
class Section:
    """One heading-scoped piece of a source document, as a parser sees it.

    `breadcrumb` holds the reader-visible headings from the document title down
    to this section (inline markup removed). Lines are 1-based and inclusive.
    `answerable` is False for text that must never be offered as an answer:
    page chrome of a captured web page, or an intro that only lists subsections.
    """

    breadcrumb: list[str]
    anchor: str
    line_start: int
    line_end: int
    text: str
    answerable: bool = True

    @property
    def heading(self) -> str:
        return self.breadcrumb[-1] if self.breadcrumb else ""


@dataclass
class Entry:
    """One retrievable unit of the index: a section (or a part of a long one)."""

    id: str
    collection: str
    doc: str  # path of the document inside its collection, e.g. "verl/faq.rst"
    doc_title: str
    framework: str
    lang: str  # "en" or "zh", detected per entry
    breadcrumb: list[str]
    heading: str
    anchor: str
    line_start: int
    line_end: int
    text: str
    url: str | None = None
    part: int = 1  # 1-based part number when a long section was split
    parts: int = 1
    answerable: bool = True
    # Other places holding the same section (identical text, or a near-identical
    # repeat in the same document, like the slime page's):
    # list of {"doc", "heading", "breadcrumb", "line_start", "line_end", "url"}.
    also_at: list[dict] = field(default_factory=list)
    # The same section in other documents, its translation or another version of the page
    # (twins.py): list of {"entry_id", "collection", "doc", "heading", "lang", "breadcrumb",
    # "line_start", "line_end", "url"}.
    twins: list[dict] = field(default_factory=list)
    # "doc" for a section of a document; "issue" for a closed GitHub issue's thread
    # (github/entries.py), which answers cite as a reported issue, not as documentation.
    kind: str = "doc"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Entry:
        return cls(**data)


@dataclass
class Hit:
    """An entry returned by a search, with its rank and fused score."""

    rank: int
    score: float
    entry: Entry
    lexical_rank: int | None = None
    dense_rank: int | None = None
    matched_question: str | None = None  # the question of the bank through which it was found

    def to_dict(self) -> dict:
        e = self.entry
        return {
            "rank": self.rank,
            "score": round(self.score, 6),
            "id": e.id,
            "collection": e.collection,
            "doc": e.doc,
            "doc_title": e.doc_title,
            "heading": e.heading,
            "breadcrumb": list(e.breadcrumb),
            "line_start": e.line_start,
            "line_end": e.line_end,
            "url": e.url,
            "framework": e.framework,
            "lang": e.lang,
            "also_at": list(e.also_at),
            "twins": list(e.twins),
            "matched_question": self.matched_question,
            "kind": e.kind,
        }

    def __repr__(self) -> str:
        return f"<Hit #{self.rank} {self.score:.3f} {self.entry.doc}:{self.entry.line_start} {self.entry.heading!r}>"
