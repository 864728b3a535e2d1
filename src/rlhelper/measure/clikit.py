"""What the CLI trials share (clitrials.py, inputtrials.py): the observation a trial returns, and
`rlhelper` run on a pseudo-terminal with what reached that terminal checked for controls.

    code, screen = run_in_pty(["questions", "list"], env)
    acted_on(screen)   # the characters a terminal would act on, click's colours aside: [] when safe
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from dataclasses import dataclass

from .faults import rlhelper_command

# What a terminal acts on, once click's own colours (SGR: ESC [ ... m) are taken out.
TERMINAL_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
CLICK_STYLE = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class CliTrial:
    name: str
    tried: str
    held: int
    total: int
    figures: str
    problems: list[str]


def run_in_pty(args: list[str], env: dict, stdin: bytes = b"", timeout: float = 120) -> tuple[int, str]:
    """`rlhelper ARGS` with stdout and stderr on a pty (click keeps its colours, as on a user's
    terminal) and stdin from a pipe; everything the terminal received, as text."""
    master, slave = os.openpty()
    proc = subprocess.Popen(rlhelper_command(*args), stdin=subprocess.PIPE, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    proc.stdin.write(stdin)
    proc.stdin.close()
    received = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                proc.kill()
                raise TimeoutError(f"rlhelper {args[0]} did not end within {timeout} s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the pty
                break
            if not data:
                break
            received += data
        returncode = proc.wait(timeout=10)
    finally:
        os.close(master)
    return returncode, received.decode("utf-8", errors="replace").replace("\r\n", "\n")


def acted_on(screen: str) -> list[str]:
    """The characters of `screen` a terminal would act on, click's colours aside."""
    return TERMINAL_CONTROLS.findall(CLICK_STYLE.sub("", screen))
