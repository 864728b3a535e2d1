"""What an answer is made of: the answer, its parts and the citations that point into the docs.

Standard library only, like schema.py, so a notebook pays for nothing to hold one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..schema import Hit, title_trail

RELATED_SHOWN = 3  # runners-up listed under an answer (all hits are listed when abstaining)


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

    # "symptom" | "cause" | "fix" | "text"; in an issue thread also "maintainer_fix", "reporter_fix",
    # "user_fix", "report_fix", "pull", "duplicates" (and "reply", in indexes built before them)
    kind: str
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

    def runners_up(self) -> list[Hit]:
        """Hits the answer does not quote, best first: worth a look, not vouched for."""
        cited = {c.entry_id for c in self.citations}
        return [h for h in self.hits if h.entry.id not in cited][:RELATED_SHOWN]

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
        from .html import notebook_html  # standard library only, like this module

        return notebook_html(self)

    def _repr_markdown_(self) -> str:
        """Front ends without HTML (and nbconvert to Markdown): the answer, then the citations as links."""
        lines = [self.text, ""]
        for c in self.citations:
            label = " › ".join(c.trail)
            link = f"[{label}]({c.url})" if c.url else label
            lines.append(f"{c.number}. {link} — `{c.location}`")
        return "\n".join(lines)
