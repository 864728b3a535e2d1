"""What changed in a collection between two ingests, section by section, in words.

    changes = compare(old_entries, new_entries)       # one collection's entries before and after
    changes.added, changes.changed, changes.removed, changes.renamed
    in_words("verl", changes) -> 'verl: 1 section added (“EGL rendering”), 1 changed (“Ray hangs”)'

A section is a document's heading path (its breadcrumb); the parts a long section is cut into count
as one. "Changed" means its text changed (lines moving because text above it changed do not count).
A section gone whose text reappears under another heading, or in another file of the collection, is
"renamed" (its question-bank questions, keyed by heading, no longer reach it: the bank reports them).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..schema import Entry

SHOWN = 3  # headings named per kind in a sentence; the rest are counted


@dataclass(frozen=True)
class SectionRef:
    doc: str
    heading: str
    breadcrumb: tuple[str, ...]


@dataclass
class SectionChanges:
    added: list[SectionRef] = field(default_factory=list)
    changed: list[SectionRef] = field(default_factory=list)
    removed: list[SectionRef] = field(default_factory=list)
    renamed: list[tuple[SectionRef, SectionRef]] = field(default_factory=list)  # (before, after)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.renamed)

    def to_dict(self) -> dict:
        def one(ref: SectionRef) -> dict:
            return {**asdict(ref), "breadcrumb": list(ref.breadcrumb)}

        return {"added": [one(r) for r in self.added], "changed": [one(r) for r in self.changed],
                "removed": [one(r) for r in self.removed],
                "renamed": [{"from": one(a), "to": one(b)} for a, b in self.renamed]}


def _sections(entries: list[Entry]) -> dict[tuple[str, tuple[str, ...]], tuple[SectionRef, str]]:
    """(doc, breadcrumb) -> (the section, its whole text), parts joined in order."""
    texts: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    refs: dict[tuple[str, tuple[str, ...]], SectionRef] = {}
    for e in entries:
        key = (e.doc, tuple(e.breadcrumb))
        refs.setdefault(key, SectionRef(e.doc, e.heading, tuple(e.breadcrumb)))
        texts.setdefault(key, []).append(e.text)
    return {key: (refs[key], "\n".join(parts)) for key, parts in texts.items()}


def _body(text: str, heading: str) -> str:
    """The section's words without its heading line, whitespace collapsed: what a rename keeps."""
    lines = text.split("\n")
    if lines and heading and heading in lines[0]:
        lines = lines[1:]
    return " ".join(" ".join(lines).split())


def compare(old: list[Entry], new: list[Entry]) -> SectionChanges:
    before, after = _sections(old), _sections(new)
    changes = SectionChanges()
    for key, (ref, text) in after.items():
        if key not in before:
            changes.added.append(ref)
        elif " ".join(before[key][1].split()) != " ".join(text.split()):
            changes.changed.append(ref)
    gone = [before[key][0] for key in before if key not in after]
    bodies = {}
    for ref in changes.added:
        body = _body(after[(ref.doc, ref.breadcrumb)][1], ref.heading)
        if body:
            bodies.setdefault(body, ref)
    for ref in gone:
        body = _body(before[(ref.doc, ref.breadcrumb)][1], ref.heading)
        now = bodies.pop(body, None) if body else None
        if now is None:
            changes.removed.append(ref)
        else:
            changes.renamed.append((ref, now))
            changes.added.remove(now)
    return changes


def _named(refs: list[str]) -> str:
    shown = ", ".join(f"“{r}”" for r in refs[:SHOWN])
    return shown + (f" and {len(refs) - SHOWN} more" if len(refs) > SHOWN else "")


def in_words(collection: str, changes: SectionChanges) -> str:
    """One line: what changed in `collection`, with a few headings named."""
    if not changes:
        return f"{collection}: no section changed"
    parts = []
    for label, refs in (("added", changes.added), ("changed", changes.changed), ("removed", changes.removed)):
        if refs:
            noun = "section" if not parts and len(refs) == 1 else "sections" if not parts else ""
            parts.append(f"{len(refs)} {noun + ' ' if noun else ''}{label} ({_named([r.heading for r in refs])})")
    if changes.renamed:
        noun = ("section " if len(changes.renamed) == 1 else "sections ") if not parts else ""
        parts.append(f"{len(changes.renamed)} {noun}renamed or moved "
                     f"({_named([f'{a.heading}” → “{b.heading}' for a, b in changes.renamed])})")
    return f"{collection}: " + ", ".join(parts)
