"""How a source is named to a person: the document and section, where it lives upstream, and what
its collection is. Shared by the web page (render.py) and the terminal (terminal.py).

    short_trail(doc_title, breadcrumb)  -> ["slime-rl-training (SkillHub capture)", "Issue: OOM During Training"]
    upstream(url)                       -> "NovaSky-AI/SkyRL · docs/.../troubleshooting.mdx"
    place(doc, 201, 228, doc_title=..., url=...) -> "“verl FAQ”, lines 201–228" (a file of the user's own, no link: "notes.md, lines ...")
    collection_note(name)               -> a plain sentence on what the collection holds
    collection_name(name)               -> how a collection is named beside a source ("seeds", "种子指南")

Each takes the reader's language (`lang`, "en" or "zh"); the words are the catalogue's.

A seed file is named by a hash (`000_17cc8c75aeb7db0e.txt`) and a section sits under up to five
headings ("... › Skill Companion Files › references/troubleshooting.md › ..."); neither tells a
reader what they are about to open. The document title and the section heading do, and the
repository and path say where it comes from. File and lines stay in the entry's detail.
"""

from __future__ import annotations

import re

from ..catalogue import WORDS, say
from ..index.lexical import has_han
from ..schema import title_trail

_GITHUB = re.compile(r"^https://github\.com/(?P<repo>[^/\s]+/[^/\s]+)/(?:blob|tree)/[^/\s]+/(?P<path>[^#?\s]+)")
_WEB = re.compile(r"^https?://(?P<host>[^/\s?#]+)(?P<path>/[^#?\s]*)?")
SHORT_HEADING_WORDS = 2  # a heading this short ("Fix", "Solution") keeps its parent beside it


def _shipped(name: str, what: str) -> str | None:
    """The catalogue's key for a shipped collection's `what` (name, note), or None."""
    key = f"collection.{name}.{what}"
    return key if key in WORDS else None


def short_trail(doc_title: str, breadcrumb: list[str]) -> list[str]:
    """The document title and the section's own heading: what tells one source from another.
    A heading of one or two words ("Solution") keeps its parent heading."""
    trail = title_trail(doc_title, breadcrumb)
    if len(trail) <= 2:
        return trail
    keep = 2 if len(trail[-1].split()) <= SHORT_HEADING_WORDS else 1
    return [trail[0], *trail[-keep:]]


def upstream(url: str | None) -> str:
    """"owner/repo · path/in/repo" for a GitHub link, "host/path" for another web page, "" without."""
    if not url:
        return ""
    m = _GITHUB.match(url)
    if m:
        return f"{m['repo']} · {m['path']}"
    m = _WEB.match(url)
    return f"{m['host']}{m['path'] or ''}".rstrip("/") if m else ""


# A seed file is stored under a number and a content hash ("000_17cc8c75aeb7db0e.txt"): a name for
# the machine, which says nothing to a reader.
_STORAGE_NAME = re.compile(r"^\d{3}_[0-9a-f]{16}\.\w+$")
NO_UPSTREAM = say("sources.no_upstream")


def readable_doc(doc: str, doc_title: str = "") -> str:
    """How a document is named to a reader: its path in its collection, or its title in quotes when
    the path is a storage name; "" when neither says anything. (Not the upstream path: the line
    numbers are those of the copy indexed, and a capture's differ from its source's.)"""
    if doc and not _STORAGE_NAME.match(doc.rsplit("/", 1)[-1]):
        return doc
    return f"“{doc_title}”" if doc_title else ""


def page_name(doc: str, doc_title: str = "") -> str:
    """A page as its row names it: by its title in quotes; a file without one by its path (readable_doc).
    Its local path ("verl/faq.rst") under a row naming it by repository path named one page two ways."""
    return f"“{doc_title}”" if doc_title else readable_doc(doc)


def place(doc: str, line_start: int, line_end: int | None = None, *, doc_title: str = "",
          same_doc: str | None = None, lang: str = "en", url: str | None = None) -> str:
    """"“verl FAQ”, lines 201–228" (or "notes.md, lines 3–9" without a title): a document and lines
    as a reader names them; "line 446" alone when `same_doc` is the document at hand; "" for a
    document with no readable name."""
    lines = (say("place.lines", lang, start=line_start, end=line_end) if line_end and line_end != line_start
             else say("place.line", lang, start=line_start))
    if same_doc is not None and doc == same_doc:
        return lines
    # A page with an upstream link is named by its title (the row names it by repository path already);
    # a file of the user's own, with no link, by its path: that is where they will open it.
    name = readable_doc(doc, doc_title) if url == "" else page_name(doc, doc_title)
    return say("place.in_doc", lang, name=name, lines=lines) if name else ""


def collection_note(name: str, lang: str = "en") -> str:
    """What a collection holds, in a sentence (a source's tooltip, the terminal's note)."""
    if not name:
        return ""
    key = _shipped(name, "note")
    return say(key, lang) if key else say("collection.own.note", lang, name=name)


def collection_name(name: str, lang: str = "en") -> str:
    """A collection as named beside a source: a shipped one in the reader's language, yours as you named it."""
    key = _shipped(name, "name")
    return say(key, lang) if key else name


# --- twins: the same section in another language or version (ingest.twins links them) ---

def twin_label(twin: dict, lang: str, reader: str = "en") -> str:
    """How a twin of a section in `lang` is introduced to a reader of `reader`: "Also in English", or
    "Another version"."""
    if twin.get("lang") and twin["lang"] != lang:
        language = twin["lang"]
        named = say(f"language.{language}", reader) if f"language.{language}" in WORDS else language
        return say("sources.also_in", reader, language=named)
    return say("sources.another_version", reader)


def twin_worth_naming(twin: dict, heading: str, lang: str) -> bool:
    """Whether a twin in another language tells the reader something: not when its title is this
    one's again, or is written in this entry's language (a Chinese page that kept the English title)."""
    if not twin.get("lang") or twin["lang"] == lang:
        return True  # another version of the page
    other = " ".join(str(twin.get("heading", "")).split())
    if other.casefold() == " ".join(heading.split()).casefold():
        return False
    return has_han(other) != (lang == "zh")
