"""`rlhelper sync`: bring every source an index records up to date, and say what changed."""

from __future__ import annotations

import json

import click

from .indexing import Progress


@click.command()
@click.option("--index", "index", help="Index folder or name (default: index/default).")
@click.option("--json", "as_json", is_flag=True, help="Print what happened as one JSON object (for cron jobs).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def sync(ctx, index, as_json, quiet):
    """Fetch what changed upstream in every source the index records (docs from git, threads from
    GitHub), re-ingest only the changed documents, and say what changed, per collection.

    A source that cannot be fetched (no network, credentials, a rewritten history, a path gone) keeps
    its collection as it was and says what to run; the exit status is then 1. A second sync waits for
    the first. A running `rlhelper serve` answers from the new index from its next question on.

    \b
    Nightly, beside the server (crontab -e):
      15 3 * * *  cd /srv/rlhelper && .venv/bin/rlhelper sync --json >> sync.log 2>&1
    """
    from .. import config
    from ..ingest.parse.inline import clean_text as one_line
    from ..ingest.sync import sync_index

    def notify(message):
        click.secho(f"github: {one_line(message)}", fg="yellow", err=True)

    with Progress(quiet or as_json, label="Syncing") as progress:
        report = sync_index(config.resolve_index(index), progress=progress, notify=notify)
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        for line in report.lines():
            click.echo(one_line(line))  # headings and messages come from upstream: never raw
        for note in report.notes:
            click.secho(f"note: {one_line(note)}", fg="yellow", err=True)
        updated = sum(s.status == "updated" for s in report.sources)
        click.echo(f"{len(report.sources)} source(s): {updated} updated, {len(report.failed)} failed; "
                   f"{report.embedded} section(s) embedded; {report.seconds:.1f} s -> {report.index}", err=True)
    if report.failed:
        ctx.exit(1)
