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


@click.command()
@click.option("--index", "index", help="Index folder or name (default: index/default).")
@click.option("--since", help="Only issues updated since this date (YYYY-MM-DD); default: all of them.")
@click.option("--github-api-url", help="The API's URL (default GITHUB_API_URL or api.github.com).")
@click.option("--quiet", "-q", is_flag=True, help="No progress.")
@click.pass_context
def trackers(ctx, index, since, github_api_url, quiet):
    """Add the issue trackers of verl, slime, SkyRL and RLinf to the index: their threads that hold a
    fix or an answer, closed or still open (docs/github.md).

    The token is GITHUB_TOKEN, else the GitHub CLI's (`gh auth token`). A first run fetches every
    issue (thousands of requests: about an hour of GitHub's limit for verl); it shows its progress,
    and stopped by ^C or the rate limit, keeps what it fetched (exit status 1): run it again to go on
    from there. `rlhelper sync` keeps the trackers current afterwards, and `rlhelper info` counts their
    threads by kind.
    """
    from .. import config
    from ..ingest.github.trackers import add_trackers
    from ..ingest.parse.inline import clean_text as one_line

    def notify(message):
        if not quiet:
            click.secho(f"github: {one_line(message)}", fg="yellow", err=True)

    with Progress(quiet, label="Indexing") as progress:
        report = add_trackers(config.resolve_index(index), since=since, api_url=github_api_url, progress=progress,
                              notify=notify)
    for result in report.repos.values():
        counts = result.counts
        held = (f"{counts.get('resolved', 0):,} resolved, {counts.get('open with an answer', 0):,} open with an "
                f"answer indexed" if counts else "nothing indexed")
        line = f"{result.repo}: {result.fetched:,} fetched ({result.requests:,} requests), {result.stored:,} stored; {held}"
        if result.status != "fetched":
            line += f"; {result.status}: {result.message}"
        click.echo(one_line(line))
    if report.stopped:
        click.secho(f"stopped early: {one_line(report.stopped)}", fg="yellow", err=True)
        ctx.exit(1)
    if any(r.status == "failed" for r in report.repos.values()):
        ctx.exit(1)
