"""The records that flow through rlhelper: entries in, hits and answers out.

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


@dataclass
class Citation:
    """A numbered pointer from an answer to the exact section it came from."""

    number: int
    entry_id: str
    doc: str
    doc_title: str
    breadcrumb: list[str]
    heading: str
    line_start: int
    line_end: int
    url: str | None
    collection: str = ""
    also_at: list[dict] = field(default_factory=list)
    twins: list[dict] = field(default_factory=list)  # Entry.twins: the same section in other documents
    lang: str = ""
    kind: str = "doc"  # Entry.kind: "issue" for a GitHub thread

    @property
    def location(self) -> str:
        return f"{self.doc}:{self.line_start}-{self.line_end}"

    @property
    def trail(self) -> list[str]:
        """Document title › headings, for a one-line source label."""
        return title_trail(self.doc_title, self.breadcrumb)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class AnswerPart:
    """One piece of an extractive answer (symptom, cause or fix), verbatim from a cited entry."""

    kind: str  # "symptom" | "cause" | "fix" | "reply" (a maintainer's, in an issue thread) | "text"
    text: str
    citation: int  # the Citation.number it comes from

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Answer:
    """What `Helper.ask` returns: grounded answer text, its citations and the hits behind it."""

    query: str
    normalized_query: str
    truncated: bool
    abstained: bool
    text: str
    parts: list[AnswerPart]
    citations: list[Citation]
    hits: list[Hit]
    notices: list[str] = field(default_factory=list)
    weak_match: bool = False  # answered, but no surer than most questions the docs do not answer
    follow_up_of: str | None = None  # the previous question this message was read with (followup.py)
    confidence: float = 0.0  # the abstention model's confidence in the top entry (confidence.py)

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "follow_up_of": self.follow_up_of,
            "normalized_query": self.normalized_query,
            "truncated": self.truncated,
            "abstained": self.abstained,
            "weak_match": self.weak_match,
            "confidence": round(self.confidence, 6),
            "answer": self.text,
            "parts": [p.to_dict() for p in self.parts],
            "citations": [c.to_dict() for c in self.citations],
            "hits": [h.to_dict() for h in self.hits],
            "notices": list(self.notices),
        }

    @property
    def question(self) -> str:
        """What the user asked: the message, after the question it follows when it is a follow-up."""
        return self.query if self.follow_up_of is None else f"{self.follow_up_of}\n\nFollow-up: {self.query}"

    def __repr__(self) -> str:
        state = "no matching entry" if self.abstained else f"{len(self.citations)} citation(s)"
        return f"<Answer {state} for {self.query[:60]!r}>"

    def __str__(self) -> str:
        lines = [self.text, ""]
        for c in self.citations:
            lines.append(f"[{c.number}] {' > '.join(c.trail)} ({c.location})")
            if c.url:
                lines.append(f"    {c.url}")
        return "\n".join(lines).rstrip()

    def _repr_html_(self) -> str:
        """Notebooks render this: the answer with linked [n] markers, then the numbered sources."""
        from .answer.html import notebook_html  # standard library only, like this module

        return notebook_html(self)

    def _repr_markdown_(self) -> str:
        """Front ends without HTML (and nbconvert to Markdown): the answer, then the citations as links."""
        lines = [self.text, ""]
        for c in self.citations:
            label = " › ".join(c.trail)
            link = f"[{label}]({c.url})" if c.url else label
            lines.append(f"{c.number}. {link} — `{c.location}`")
        return "\n".join(lines)
