"""Readable terminal output for answers and hit lists (colour only on a terminal).

Everything shown here came from outside (model replies, document names, headings, URLs), so each
field goes through `drop_controls` (text) or `one_line` (names) before it is styled: a terminal
must receive no escape sequence but the colours added here. rlhelper's own words (the catalogue's,
as on the web page) are in the language of the question.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..answer.language import language_of
from ..answer.model import Answer
from ..answer.sources import collection_note, place, short_trail, twin_label, upstream
from ..catalogue import in_language, say
from ..ingest.parse.inline import clean_text as one_line
from ..ingest.parse.inline import drop_controls
from ..schema import Hit

if TYPE_CHECKING:
    from ..answer.llm import LLMStream


MATCHED_WIDTH = 100  # characters of a matched question shown under a source


def _titled(key: str, lang: str) -> str:
    """A list's title: "Sources:", or "来源：" for a Chinese question."""
    return say(key, lang) + say("punct.colon", lang).rstrip()


def matched_line(question: str | None, lang: str = "en") -> list[str]:
    """"matched: <question>" under a source found through a question of the bank, on one line."""
    if not question:
        return []
    text = one_line(question)
    text = text if len(text) <= MATCHED_WIDTH else text[:MATCHED_WIDTH - 1] + "…"
    return [click.style(f"    {say('sources.matched', lang, question=text)}", fg="magenta")]


def _citation_lines(answer: Answer) -> list[str]:
    lines = []
    lang = language_of(answer.query)
    matched = {h.entry.id: h.matched_question for h in answer.hits}
    for c in answer.citations:
        lines.append(click.style(f"[{c.number}] ", fg="cyan", bold=True)
                     + " › ".join(map(one_line, short_trail(c.doc_title, c.breadcrumb))))
        lines += source_lines(c.url, c.collection, place(c.doc, c.line_start, c.line_end, doc_title=c.doc_title,
                                                         lang=lang, url=c.url or ""), lang)
        lines += matched_line(matched.get(c.entry_id), lang)
        places = [one_line(where) for other in c.also_at
                  if (where := place(other["doc"], other["line_start"], other["line_end"],
                                    doc_title=other.get("doc_title", ""), same_doc=c.doc, lang=lang))]
        lines += [click.style(f"    {say('sources.also_at', lang, places=where)}", dim=True) for where in places]
        lines += _twin_lines(c.twins, c.lang, lang)
    return lines


def source_lines(url: str | None, collection: str, location: str, lang: str = "en") -> list[str]:
    """Where a source lives upstream, what its collection is in plain words, then file and lines."""
    where = one_line(upstream(url) or ("" if url or collection != "seeds" else say("sources.no_upstream", lang)))
    note = f"  ({one_line(collection_note(collection, lang))})" if collection else ""
    first = f"    {where}{note}" if where or collection else ""
    return ([click.style(first, dim=True)] if first else []) + \
        [click.style(f"    {one_line(location)}", dim=True) + (f"  {one_line(url)}" if url else "")]


def _twin_lines(twins: list[dict], entry_lang: str, lang: str = "en") -> list[str]:
    return [click.style(f"    {twin_label(t, entry_lang, lang)}{say('punct.colon', lang)}{one_line(t['heading'])}  "
                        f"{one_line(place(t['doc'], t['line_start'], t['line_end'], doc_title=t.get('doc_title', ''), lang=lang))}",
                        dim=True)
            + (f"  {one_line(t['url'])}" if t.get("url") else "") for t in twins]


def print_notices(answer: Answer) -> None:
    lang = language_of(answer.query)
    for notice in answer.notices:
        click.secho(say("cli.note", lang, text=drop_controls(in_language(notice, lang))), fg="yellow", err=True)


def print_answer(answer: Answer) -> None:
    print_notices(answer)
    lang = language_of(answer.query)
    if answer.abstained:
        click.secho(drop_controls(answer.text), fg="yellow", bold=True)
        if answer.hits:
            click.echo("\n" + _titled("sources.related_maybe", lang))
            print_hit_rows(answer.hits, lang)
        return
    for line in drop_controls(answer.text).splitlines():
        if line.startswith("### "):
            click.secho(line[4:], bold=True)
        elif len(line) > 2 and line.startswith("_") and line.endswith("_"):  # the heading's trail
            click.secho(line[1:-1], dim=True)
        elif line.startswith("**") and line.rstrip().endswith("]"):
            click.secho(line.replace("**", ""), fg="green", bold=True)
        else:
            click.echo(line)
    print_sources(answer)
    related = answer.runners_up()  # the web chat lists the same ones
    if related:
        click.echo("\n" + _titled("sources.also_related", lang))
        print_hit_rows(related, lang)


def print_sources(answer: Answer) -> None:
    click.echo("\n" + _titled("sources.title", language_of(answer.query)))
    for line in _citation_lines(answer):
        click.echo(line)


def print_llm_answer(stream: LLMStream) -> None:
    """Show an LLM answer as the model writes it, then what the checks found and the sources.

    The checks need the whole reply, so their notes (removed citations,
    unverified commands) come after the text. If the model fails part-way, what
    it wrote stays on screen, marked incomplete, above the extractive answer.
    """
    wrote = False
    for piece in stream:
        click.echo(drop_controls(piece), nl=False)  # click.echo flushes: each piece shows as it arrives
        wrote = True
    if wrote:
        click.echo()
    answer = stream.answer
    if stream.result.fallback or stream.result.declined:  # the extractive answer, or "no matching entry"
        if wrote and stream.result.fallback:
            click.secho("[the LLM answer above is incomplete; the extractive answer follows]\n", fg="yellow")
        print_answer(answer)
        return
    print_notices(answer)
    print_sources(answer)


def print_hit_rows(hits: list[Hit], lang: str = "en") -> None:
    for hit in hits:
        e = hit.entry
        click.echo(
            click.style(f"{hit.rank:>2}. ", bold=True)
            + f"{one_line(e.heading)}  "
            + click.style(f"[{one_line(e.framework)}/{one_line(e.lang)}] "
                          f"{one_line(place(e.doc, e.line_start, e.line_end, doc_title=e.doc_title, lang=lang))}",
                          dim=True)
        )
        if e.url:
            click.echo(click.style(f"    {one_line(e.url)}", dim=True))
        for line in matched_line(hit.matched_question, lang):
            click.echo(line)
        for line in _twin_lines(e.twins, e.lang, lang):
            click.echo(line)


def print_hits(answer: Answer) -> None:
    print_notices(answer)
    lang = language_of(answer.query)
    if answer.abstained:
        click.secho(_titled("sources.nearest", lang), fg="yellow")
    print_hit_rows(answer.hits, lang)
