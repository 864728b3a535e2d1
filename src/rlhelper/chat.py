"""`rlhelper chat`: a conversation in the terminal, the index loaded once.

    messages(stream)           -> the user's messages, one at a time, until end of input
    converse(helper, messages) -> answer each in one Helper.conversation(): follow-ups read
                                  with the answer before them

What one message is depends on where it comes from. On a terminal, whatever
arrives together: a pasted traceback comes in one burst of lines and is one
message, a typed question is one line. The burst is read from the file
descriptor itself, since Python's buffered stdin would swallow the rest of a
paste and hide it from `select`. From a pipe nothing arrives in bursts one
can trust, so there messages are separated by a blank line:

    printf 'NCCL timeout in weight sync\n\nwhat about slime?\n' | rlhelper chat

Each answer after the first may be read as a follow-up of the one before it
("what about verl?", "and on multiple nodes?"; api.Helper.ask), as in the web chat.
`/new` starts a new topic, `/quit` (or Ctrl-D) ends the conversation.
"""

from __future__ import annotations

import codecs
import os
import re
import select
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TextIO

import click

from .errors import RlhelperError

if TYPE_CHECKING:
    from .api import Helper
    from .schema import Answer

PASTE_GAP = 0.05  # seconds: lines arriving closer together than this belong to one paste
NEW_TOPIC = ("/new", "/reset")
QUIT = ("/quit", "/exit", "quit", "exit")
HELP = "/help"
GREETING = ("Ask about an error, paste a traceback, or ask a follow-up (\"what about verl?\").\n"
            "/new starts a new topic, /quit or Ctrl-D ends.")


def messages(stream: TextIO) -> Iterator[str]:
    """The messages read from `stream` (see the module doc for what one message is)."""
    if not stream.isatty():
        yield from _blocks(stream)
    elif os.name == "posix":
        yield from _bursts(stream.fileno())
    else:  # no select() on a Windows console: one line, one message
        yield from (line.strip() for line in stream if line.strip())


def _bursts(fd: int) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
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


def converse(helper: Helper, said: Iterable[str], show: Callable[[Answer], None], *,
             prompt: Callable[[], None] = lambda: None, **search) -> int:
    """Answer each message with `show`, following up on the answer before it; returns how many
    were answered. A bad message (empty after cleaning, too long) is reported and skipped:
    a conversation does not end on one mistake."""
    conversation = helper.conversation(**search)
    answered = 0
    prompt()
    for message in said:
        command = message.strip().lower()
        if command in QUIT:
            break
        if command in NEW_TOPIC:
            conversation.new_topic()
            click.secho("New topic: the next message is read on its own.", dim=True, err=True)
        elif command == HELP:
            click.echo(GREETING, err=True)  # stderr, as notes are: stdout holds only answers
        elif re.fullmatch(r"/[a-z]+", command):  # "/usr/bin/nvcc failed" is a question; "/nwe" a typo
            click.secho(f"Unknown command {command}: /new, /quit or /help.", fg="yellow", err=True)
        else:
            try:
                show(conversation.ask(message))
            except RlhelperError as err:
                click.secho(f"Error: {err}", fg="red", err=True)
            except KeyboardInterrupt:  # Ctrl-C stops this answer (a slow LLM), not the conversation
                click.secho("\n[interrupted]", fg="yellow", err=True)
            else:
                answered += 1
        prompt()
    return answered
