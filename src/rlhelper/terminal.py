"""Readable terminal output for answers and hit lists (colour only on a terminal)."""

from __future__ import annotations

import click

from .schema import Answer


def _citation_lines(answer: Answer) -> list[str]:
    lines = []
    for c in answer.citations:
        lines.append(click.style(f"[{c.number}] ", fg="cyan", bold=True) + " › ".join(c.trail))
        lines.append(click.style(f"    {c.location}", dim=True) + (f"  {c.url}" if c.url else ""))
        for other in c.also_at:
            lines.append(click.style(f"    also at {other['doc']}:{other['line_start']}-{other['line_end']}", dim=True))
    return lines


def print_notices(answer: Answer) -> None:
    for notice in answer.notices:
        click.secho(f"note: {notice}", fg="yellow", err=True)


def print_answer(answer: Answer) -> None:
    print_notices(answer)
    if answer.abstained:
        click.secho(answer.text, fg="yellow", bold=True)
        if answer.hits:
            click.echo("\nRelated (may not answer it):")
            print_hit_rows(answer)
        return
    for line in answer.text.splitlines():
        if line.startswith("### "):
            click.secho(line[4:], bold=True)
        elif line.startswith("**") and line.rstrip().endswith("]"):
            click.secho(line.replace("**", ""), fg="green", bold=True)
        else:
            click.echo(line)
    click.echo("\nSources:")
    for line in _citation_lines(answer):
        click.echo(line)


def print_hit_rows(answer: Answer) -> None:
    for hit in answer.hits:
        e = hit.entry
        click.echo(
            click.style(f"{hit.rank:>2}. ", bold=True)
            + f"{e.heading}  "
            + click.style(f"[{e.framework}/{e.lang}] {e.doc}:{e.line_start}-{e.line_end}", dim=True)
        )
        if e.url:
            click.echo(click.style(f"    {e.url}", dim=True))


def print_hits(answer: Answer) -> None:
    print_notices(answer)
    if answer.abstained:
        click.secho("No entry clearly answers this; nearest entries:", fg="yellow")
    print_hit_rows(answer)
