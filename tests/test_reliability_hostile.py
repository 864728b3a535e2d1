"""Hostile input through the CLI and the Python API: empty, blank, 1 MB, binary and
prompt-injection queries; documents carrying HTML, script, terminal escapes and bidi overrides.

(The web app's side: tests/test_reliability_web.py.)
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from clirun import cli_env, rlhelper

from rlhelper.ingest import ingest

HOSTILE = Path(__file__).resolve().parent / "hostile"
# Bidi overrides and isolates, C1 controls (U+009B: CSI), ESC and BEL: a terminal acts on them.
TERMINAL_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
BIDI_DOC = (
    "# Trojan \u202eedoc\u202c guide\n\n"
    "## XYZZY cache server refused \u2066the\u2069 connection\n\n"
    "**Fix:** run \u202e~ fr- mr ;tixe\u202c to restart, then \x9b2J\x1b]0;pwned\x07 check the port.\n"
)


@pytest.fixture(scope="module")
def env(tmp_path_factory, usem3_cache_dir) -> dict:
    return cli_env(tmp_path_factory.mktemp("cli-home"), usem3_cache_dir)


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory) -> Path:
    """An index of tests/hostile (HTML and script) plus a document full of bidi and C1 controls."""
    docs = tmp_path_factory.mktemp("hostile-docs")
    shutil.copy(HOSTILE / "evil.md", docs / "evil.md")
    (docs / "trojan.md").write_text(BIDI_DOC, encoding="utf-8")
    index = tmp_path_factory.mktemp("hostile-index") / "idx"
    report = ingest([docs], collection="hostile", index=index)
    assert not report.failed
    return index


def test_document_controls_never_reach_the_terminal(hostile_index, env):
    """Found by these trials: bidi overrides in a document were printed as they are, so the
    terminal showed `exit; rm -rf ~` as the command while the text held it reversed."""
    shown = rlhelper(["ask", "--index", str(hostile_index), "XYZZY cache server refused the connection"], env)
    assert shown.returncode == 0, shown.stderr
    assert "Trojan" in shown.stdout and "~ fr- mr ;tixe" in shown.stdout  # the text, in its stored order
    assert not TERMINAL_CONTROLS.search(shown.stdout)
    as_json = rlhelper(["ask", "--json", "--index", str(hostile_index), "XYZZY cache server refused"], env)
    answer = json.loads(as_json.stdout)
    assert not TERMINAL_CONTROLS.search(json.dumps(answer, ensure_ascii=False))
