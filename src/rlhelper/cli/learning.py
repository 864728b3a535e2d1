"""`rlhelper feedback` and `rlhelper questions`: votes on answers, and the questions learned from them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..ingest.parse.inline import CONTROL_CHARS
from ..ingest.parse.inline import clean_text as one_line
from .options import load_helper


@click.group()
def feedback():
    """Thumbs up/down recorded by the web chat; accept or demote the last `rlhelper ask` answer."""


def _vote_on_last(vote: int, hit: int) -> None:
    from ..index.lastanswer import last_answer
    from ..index.userbank import UserBank

    last = last_answer()
    hits = last["hits"]
    if last.get("abstained") and hit == 1 and vote > 0:
        raise click.ClickException("the last answer found no matching entry, so there is no entry to accept; "
                                   "if one of the related entries it listed answers it, accept that one with "
                                   "--hit N (N: its place in the list).")
    if not 1 <= hit <= len(hits):
        raise click.ClickException(f"the last answer listed {len(hits)} entr{'y' if len(hits) == 1 else 'ies'}: "
                                   f"--hit must be between 1 and {len(hits)}." if hits else
                                   "the last answer listed no entry: there is nothing to vote on.")
    record = UserBank().add(last["question"], hits[hit - 1], vote, "cli")
    what = "accepted for" if vote > 0 else "demoted for"
    click.echo(f"“{one_line(record.heading)}” ({one_line(record.collection)}/{one_line(record.doc)}) {what} "
               f"“{_short(one_line(record.text))}” "
               f"[{record.id}]; the next search uses it. Undo: rlhelper questions remove {record.id}")


def _short(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


_hit_option = click.option("--hit", default=1, show_default=True, type=click.IntRange(min=1),
                           help="Which entry of the last answer: 1 is the cited lead, N the N-th entry listed.")


@feedback.command("accept")
@_hit_option
def feedback_accept(hit):
    """The last `rlhelper ask` answer was right: learn its question for its lead entry (or --hit N)."""
    _vote_on_last(1, hit)


@feedback.command("demote")
@_hit_option
def feedback_demote(hit):
    """The last `rlhelper ask` answer was wrong: never lead with its entry for that question again."""
    _vote_on_last(-1, hit)


@feedback.command("export")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="File to write (default stdout).")
@click.option("--as-eval", is_flag=True,
              help="Write an eval set instead (thumbs-up answers: their cited sections are expected), for `rlhelper eval --set`.")
@click.option("--index", "index", help="With --as-eval: the index whose entries the votes cited (default: index/default).")
def feedback_export(output, as_eval, index):
    """Write all feedback as JSON Lines."""
    from ..measure.feedback import FeedbackStore, eval_items_for_index, export, write_lines

    if not as_eval:
        count = export(output or sys.stdout)
        click.echo(f"{count} feedback rows exported", err=True)
        return
    from .. import config

    items, left_out = eval_items_for_index(FeedbackStore().rows(), load_helper(index).entries)
    write_lines(items, output or sys.stdout)
    skipped = ", ".join(f"{n} {why}" for why, n in left_out.items() if n)
    click.echo(f"{len(items)} eval items exported" + (f" (left out: {skipped})" if skipped else "")
               + f"; measure with `rlhelper eval --set FILE --index {config.resolve_index(index)}`", err=True)


@click.group()
def questions():
    """Questions learned from your votes (thumbs up/down, `feedback accept`): review and share them."""


@questions.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line instead of a table.")
def questions_list(as_json):
    """Every learned question: id, +1 accepted / -1 demoted, the entry, where it came from."""
    from ..index.userbank import UserBank

    bank = UserBank()
    records = bank.records()
    if as_json:
        for record in records:
            click.echo(json_line(record.to_dict()))
        return
    for problem in bank.problems():
        click.secho(f"note: {one_line(problem)}", fg="yellow", err=True)
    if not records:
        click.echo(f"No learned questions yet ({one_line(str(bank.path))}). A thumbs-up in the web chat or "
                   "`rlhelper feedback accept` after `rlhelper ask` adds one.", err=True)
        return
    # Imported records are anyone's words: every field goes through the terminal neutraliser (terminal.py).
    for r in records:
        vote = click.style("+1", fg="green") if r.vote > 0 else click.style("-1", fg="red")
        click.echo(f"{click.style(r.id, bold=True)}  {vote}  {_short(one_line(r.text), 60)}")
        click.echo(click.style(f"            -> {_short(one_line(r.heading), 120)}  ({one_line(r.collection)}/"
                               f"{_short(one_line(r.doc), 120)}; {one_line(r.source)}, {one_line(r.time)})", dim=True))


def json_line(row: dict) -> str:
    """One JSON object on one line, with the characters a terminal acts on escaped (\\u009b, not
    the raw CSI): JSON's own escaping leaves C1 controls and bidi overrides as they are."""
    return CONTROL_CHARS.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(row, ensure_ascii=False))


@questions.command("remove")
@click.argument("ids", nargs=-1)
@click.option("--entry", help="Remove every question learned for this entry (its id, as `questions list --json` shows).")
def questions_remove(ids, entry):
    """Remove learned questions by ID (as `questions list` shows them) or by --entry."""
    from ..index.userbank import UserBank

    if not ids and not entry:
        raise click.UsageError("give the ID of a question (see `rlhelper questions list`) or --entry ENTRY_ID")
    removed = UserBank().remove(ids, entry)
    click.echo(f"{len(removed)} learned question{'s' if len(removed) != 1 else ''} removed")


@questions.command("export")
@click.argument("output", type=click.Path(dir_okay=False, path_type=Path))
def questions_export(output):
    """Write every learned question to OUTPUT as JSON Lines ('-' for stdout), to share with a team."""
    from ..index.userbank import UserBank

    count = UserBank().export(output)
    click.echo(f"{count} learned question{'s' if count != 1 else ''} exported"
               + (f" to {output}" if str(output) != "-" else ""), err=True)


@questions.command("import")
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
def questions_import(source):
    """Add the questions of SOURCE (written by `questions export`); importing it again changes nothing.

    Read line by line. The bank keeps at most 20,000 questions: imported ones fill the room, then take
    the place of questions imported before (oldest first), never of your own votes; what does not fit,
    and lines that are too long or not questions, are skipped and counted."""
    from ..index.bankimport import import_file
    from ..index.userbank import UserBank

    bank = UserBank()
    report = import_file(bank, source)
    for problem in report.first_problems:
        click.secho(f"note: {one_line(problem)}; skipped", fg="yellow", err=True)
    click.echo(report.summary())
    if report.added or report.changed:
        _prepare_for_search(bank)


def _prepare_for_search(bank) -> None:
    """Tokenize and embed what was imported now, so the first searches need not (learned.prepare).
    Without an index there is no embedder to ask: the searches embed (half a second each)."""
    from .. import config
    from ..errors import RlhelperError
    from ..index import learned

    embedder = dim = None
    try:
        from ..index.embed import get_embedder
        from ..index.store import Index

        index = Index.load(config.resolve_index(None))
        embedder, dim = get_embedder(index.embedder_id), index.dim
    except RlhelperError:
        pass
    def say(line: str) -> None:
        click.echo(f"questions: {line}", err=True)

    try:
        learned.prepare(bank, embedder, dim, notify=say)
    except KeyboardInterrupt:
        say("stopped: the questions not embedded yet are embedded by the searches, half a second at a time")
    except RlhelperError as err:
        say(f"not prepared ({one_line(str(err))}): the searches do it, half a second at a time")


@questions.command("review")
@click.option("--approve", "approve", multiple=True, metavar="ID", help="Approve this suggestion (repeatable).")
@click.option("--reject", "reject", multiple=True, metavar="ID", help="Reject this suggestion (repeatable).")
@click.option("--approve-all", is_flag=True, help="Approve every pending suggestion.")
@click.option("--all", "every", is_flag=True, help="List reviewed suggestions too, with their verdict.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line instead of a table.")
def questions_review(approve, reject, approve_all, every, as_json):
    """Web visitors' votes, waiting for you: approve them into your bank (they teach everyone) or reject them.

    A visitor's vote teaches that visitor at once; it reaches other visitors, and `rlhelper ask`, only
    once approved here (unless the server runs with --learn-from-votes). Each is listed whole (a control
    character shown as its escape), with how its votes are spread: how many distinct visitors, from how
    many addresses and networks (the biggest one's share), from when to when, and the filters they
    voted under.
    """
    from ..index.userbank import UserBank
    from ..index.visitorbank import VisitorBank, default_path

    bank = UserBank()
    visitors = VisitorBank(default_path(bank))
    if approve or reject or approve_all:
        done = visitors.review(bank, approve, reject, approve_all=approve_all)
        for verdict, group in done.items():
            for s in group:
                click.echo(f"{verdict} [{s.id}] {_whole(s.text)} -> {_shown(s.entry['heading'], 60)}")
        click.echo(f"{len(done['approved'])} approved (in your bank now, source review), "
                   f"{len(done['rejected'])} rejected", err=True)
        return
    found = visitors.suggestions(bank, every=every)
    if as_json:
        for s in found:
            click.echo(json.dumps(s.to_dict(), ensure_ascii=False))
        return
    if not found:
        click.echo(f"No {'' if every else 'pending '}suggestions from web visitors ({visitors.path}).", err=True)
        return
    for s in found:
        vote = click.style("+1", fg="green") if s.vote > 0 else click.style("-1", fg="red")
        filters = "; ".join(_shown(f, 40) for f in s.filters if f)
        verdict = "" if s.verdict == "pending" else f"; {s.verdict}"
        # The whole question: what an approval teaches everyone is what the operator reads (issue 37).
        click.echo(f"{click.style(s.id, bold=True)}  {vote}  {_whole(s.text)}")
        click.echo(click.style(f"            -> {_shown(s.entry['heading'], 60)}  ({_shown(s.entry['collection'], 20)}/"
                               f"{_shown(s.entry['doc'], 60)}; {_spread(s)}"
                               + (f"; voted with {filters}" if filters else "") + f"{verdict})", dim=True))
    click.echo(f"{len(found)} suggestion{'s' if len(found) != 1 else ''}: `rlhelper questions review --approve ID` "
               "or --reject ID (or --approve-all)", err=True)


def _spread(s) -> str:
    """How a suggestion's votes are spread by visitor, address, network and time: a flood from one
    network in two minutes reads apart from a team's votes over weeks."""
    def n(count: int, one: str, many: str) -> str:
        return f"{count:,} {one if count == 1 else many}"

    people = (f"{n(s.visitors, 'visitor', 'visitors')}, {n(s.addresses, 'address', 'addresses')} in "
              f"{n(s.networks, 'network', 'networks')}")
    if s.networks > 1:
        people += f" ({s.top_votes:,} of {n(s.votes, 'vote', 'votes')} from {_shown(s.top_network, 45)})"
    when = f"on {s.last}" if s.first == s.last else f"from {s.first} to {s.last}"
    return f"{people}; {when}"


def _whole(text: str) -> str:
    """A visitor's text for the terminal, whole: a control or bidi character shown as its escape
    (\\x1b, \\u202e), so the operator sees what is there and the terminal acts on nothing; its lines
    indented under the first."""
    from ..ingest.parse.inline import CONTROL_CHARS

    escaped = CONTROL_CHARS.sub(lambda m: m.group().encode("unicode_escape").decode(), str(text))
    return escaped.replace("\t", "    ").replace("\n", "\n" + " " * 16)


def _shown(text: str, width: int) -> str:
    """Visitor text for the terminal: one line, no escape sequence, cut to `width`."""
    from ..ingest.parse.inline import clean_text

    return _short(clean_text(str(text)), width)
