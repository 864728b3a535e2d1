"""`rlhelper chat`: a conversation in the terminal, the index loaded once.

    messages(stream)           -> the user's messages, one at a time, until end of input
    converse(helper, messages) -> answer each in one Helper.conversation(): follow-ups read
                                  with the answer before them

What one message is depends on where it comes from. On a terminal, whatever
arrives together: a pasted traceback comes in one burst of lines and is one
message, a typed question is one line. When both ends are a terminal the line
is read with readline, so it can be edited and ↑ brings back earlier questions
(kept in the data folder across sessions); a terminal with bracketed paste
hands a paste over whole, one without types it in, and its other lines already
wait when the first one returns. Otherwise the burst is read from the file
descriptor itself, since Python's buffered stdin would swallow the rest of a
paste and hide it from `select`. From a pipe nothing arrives in bursts one
can trust, so there messages are separated by a blank line:

    printf 'NCCL timeout in weight sync\n\nwhat about slime?\n' | rlhelper chat

Each answer after the first may be read as a follow-up of the one before it
("what about verl?", "and on multiple nodes?"; api.Helper.ask), as in the web chat.
`/new` starts a new topic, `/quit` (or Ctrl-D) ends the conversation. `/accept` says the last
answer was right (its question is learned for its lead entry, `/accept N` for the N-th entry
listed), `/demote` that it was wrong: userbank.py, as a thumbs-up or down in the web chat.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import select
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from .. import config
from ..answer.smalltalk import reply as reply_to_small_talk
from ..errors import RlhelperError
from ..ingest.parse.inline import clean_text

if TYPE_CHECKING:
    from ..answer.model import Answer
    from ..api import Helper

PASTE_GAP = 0.05  # seconds: lines arriving closer together than this belong to one paste
PROMPT = "rlhelper> "
HISTORY_LENGTH = 500  # messages kept for ↑ across sessions
NEW_TOPIC = ("/new", "/reset")
QUIT = ("/quit", "/exit", "quit", "exit")
HELP = "/help"
ACCEPT, DEMOTE = "/accept", "/demote"
GREETING = ("Ask about an error, paste a traceback, or ask a follow-up (\"what about verl?\").\n"
            "/accept or /demote says the last answer was right or wrong; /new starts a new topic, /quit or Ctrl-D ends.")


def messages(stream: TextIO, prompt: str | None = None) -> Iterator[str]:
    """The messages read from `stream` (see the module doc for what one message is), each after
    `prompt` when one is given. Unless readline shows it on the terminal both ends are, the prompt
    goes to stderr, as `read -p` puts it: stdout holds only the answers, for `rlhelper chat | tee log`."""
    if not stream.isatty():
        yield from _blocks(stream)
    elif os.name != "posix":  # no select() on a Windows console: one line, one message
        yield from _lines(stream, prompt)
    elif stream is sys.stdin and sys.stdout.isatty() and _readline() is not None:
        yield from _edited(stream.fileno(), prompt)
    else:
        yield from _bursts(stream.fileno(), prompt)


def _show_prompt(prompt: str | None) -> None:
    if prompt:
        click.secho(prompt, fg="cyan", bold=True, nl=False, err=True)


def _lines(stream: TextIO, prompt: str | None) -> Iterator[str]:
    while True:
        _show_prompt(prompt)
        line = stream.readline()
        if not line:
            return
        if line.strip():
            yield line.strip()


def _readline():
    """The readline module, or None where Python was built without it."""
    try:
        import readline
    except ImportError:
        return None
    return readline


def _edited(fd: int, prompt: str | None) -> Iterator[str]:
    readline = _readline()
    history = History(config.data_dir() / "chat_history.jsonl")
    readline.set_auto_history(False)  # a paste typed in is one entry, not one per line
    for message in history.load():
        readline.add_history(message)
    # input() writes its prompt to stdout; readline must be told which bytes take no room.
    styled = f"\001{click.style('', fg='cyan', bold=True, reset=False)}\002{prompt}\001\033[0m\002" if prompt else ""
    while True:
        try:
            text = input(styled)
        except EOFError:  # Ctrl-D on an empty line
            return
        ended = False
        while select.select([fd], [], [], PASTE_GAP)[0]:  # a paste typed in: the rest is waiting
            try:
                text += "\n" + input()
            except EOFError:
                ended = True
                break
        if text.strip():
            message = text.strip("\n")
            readline.add_history(message)
            history.add(message)
            yield message
        if ended:
            return


class History:
    """Messages kept across sessions for ↑, one JSON string per line: readline's own history file
    splits a multi-line paste into one entry per line."""

    def __init__(self, path: Path, keep: int = HISTORY_LENGTH):
        self.path, self.keep = path, keep

    def load(self) -> list[str]:
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:  # none yet, or unreadable: start afresh
            return []
        kept = []
        for line in lines[-self.keep:]:
            try:
                message = json.loads(line)
            except ValueError:  # a line cut short by a crash
                continue
            if isinstance(message, str):
                kept.append(message)
        return kept

    def add(self, message: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # questions may hold paths and hostnames: the file is the user's alone
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with open(fd, "a", encoding="utf-8") as out:
                out.write(json.dumps(message, ensure_ascii=False) + "\n")
            if self.path.stat().st_size > 2 * 1024 * 1024:  # trim now and then, not on every message
                kept = self.load()
                self.path.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in kept),
                                     encoding="utf-8")
        except OSError:  # a read-only home: history lasts for this session only
            pass


def _bursts(fd: int, prompt: str | None) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        _show_prompt(prompt)
        chunk = os.read(fd, 65536)  # canonical mode: returns one line, or b"" for Ctrl-D
        if not chunk:
            return
        text = decoder.decode(chunk)
        ended = False
        while select.select([fd], [], [], PASTE_GAP)[0]:
            more = os.read(fd, 65536)
            if not more:
                ended = True
                break
            text += decoder.decode(more)
        if text.strip():
            yield text.strip("\n")
        if ended:
            return


def _blocks(stream: TextIO) -> Iterator[str]:
    block: list[str] = []
    for line in stream:
        if line.strip():
            block.append(line.rstrip("\n"))
        elif block:
            yield "\n".join(block)
            block = []
    if block:
        yield "\n".join(block)


def converse(helper: Helper, said: Iterable[str], show: Callable[[Answer], None], **search) -> int:
    """Answer each message with `show`, following up on the answer before it; returns how many
    were answered. A bad message (empty after cleaning, too long) is reported and skipped:
    a conversation does not end on one mistake."""
    conversation = helper.conversation(**search)
    answered = 0
    for message in said:
        command = message.strip().lower()
        if command in QUIT:
            break
        if command in NEW_TOPIC:
            conversation.new_topic()
            click.secho("New topic: the next message is read on its own.", dim=True, err=True)
        elif command == HELP:
            click.echo(GREETING, err=True)  # stderr, as notes are: stdout holds only answers
        elif re.fullmatch(rf"(?:{ACCEPT}|{DEMOTE})(?:\s+\d+)?", command):
            _vote(helper, conversation.previous, command)
        elif re.fullmatch(r"/[a-z]+", command):  # "/usr/bin/nvcc failed" is a question; "/nwe" a typo
            click.secho(f"Unknown command {command}: /new, /accept, /demote, /quit or /help.", fg="yellow",
                        err=True)
        elif (courtesy := reply_to_small_talk(message)) is not None:
            click.echo(courtesy, err=True)  # "thanks": a word back (stderr: stdout holds answers, --json), no search
        else:
            try:
                show(conversation.ask(message))
            except RlhelperError as err:
                click.secho(f"Error: {clean_text(str(err))}", fg="red", err=True)
            except KeyboardInterrupt:  # Ctrl-C stops this answer (a slow LLM), not the conversation
                click.secho("\n[interrupted]", fg="yellow", err=True)
            else:
                answered += 1
    return answered


def _vote(helper: Helper, answer: Answer | None, command: str) -> None:
    """`/accept [N]` or `/demote [N]` on the last answer (userbank.py)."""
    name, _, number = command.partition(" ")
    hit = int(number) if number.strip() else 1
    if answer is None or answer.abstained or not answer.citations:
        click.secho("There is no answer with an entry to vote on yet: ask a question first.", fg="yellow", err=True)
        return
    try:
        record = helper.learn(answer, 1 if name == ACCEPT else -1, source="chat", hit=hit)
    except RlhelperError as err:
        click.secho(f"Error: {clean_text(str(err))}", fg="red", err=True)
        return
    if record is None:
        click.secho(f"The last answer listed {len(answer.hits)} entries: /accept N takes 1 to {len(answer.hits)}.",
                    fg="yellow", err=True)
        return
    what = "accepted" if record.vote > 0 else "demoted"
    click.secho(f"“{clean_text(record.heading)}” {what} for this question [{record.id}]; the next search uses it.",
                dim=True, err=True)
