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

# Each command's module is imported when that command runs (or --help lists them): `rlhelper ask`
# never imports what ingest, eval or the web server need.
COMMANDS = {
    "ingest": "indexing:ingest", "info": "indexing:info", "sync": "syncing:sync", "trackers": "syncing:trackers", "ask": "asking:ask",
    "chat": "asking:chat", "search": "asking:search", "serve": "asking:serve", "auth": "asking:auth",
    "eval": "measuring:eval_", "bench": "measuring:bench", "feedback": "learning:feedback",
    "questions": "learning:questions", "judge": "judging:judge",
}


class FriendlyGroup(click.Group):
    """Turns library errors into one line on stderr, exit status 1; imports a command's module when it is used."""

    def list_commands(self, ctx):
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMANDS:
            import importlib

            module, attr = COMMANDS[name].split(":")
            self.add_command(getattr(importlib.import_module(f"{__package__}.{module}"), attr), name)
        return super().get_command(ctx, name)

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
