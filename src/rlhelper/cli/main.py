"""The `rlhelper` command: the group its subcommands join (one module per family of commands).

Commands parse arguments, call the library and turn `RlhelperError` into a
one-line message with exit status 1 (never a traceback for the user).
Colour is on for a terminal and off when piped (Click strips it).
"""

from __future__ import annotations

import sys

import click

from ..errors import RlhelperError
from ..version import __version__
from . import asking, indexing, judging, learning, measuring, syncing


class FriendlyGroup(click.Group):
    """Turns library errors into one line on stderr, exit status 1."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RlhelperError as err:
            click.secho(f"Error: {err}", fg="red", err=True)
            sys.exit(1)


@click.group(cls=FriendlyGroup)
@click.version_option(__version__, prog_name="rlhelper")
def main():
    """Find the troubleshooting entry that answers an RL post-training error, and cite it."""


for command in (indexing.ingest, indexing.info, syncing.sync, syncing.trackers, asking.ask, asking.chat, asking.search, asking.serve,
                asking.auth,
                measuring.eval_, measuring.bench, learning.feedback, learning.questions, judging.judge):
    main.add_command(command)
