"""A 5 MB document under one heading (issue 17, point 3, the CLI side): ingest warns about the giant
section, and `rlhelper ask` quotes a bounded part of it with where the rest is, quickly."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from clirun import cli_env, rlhelper
from openai_stub import OpenAIStub, Reply

from rlhelper.ingest.pipeline import ingest
from rlhelper.schema import MAX_QUOTED_CHARS

pytestmark = pytest.mark.slow  # builds indexes of megabyte sections

LINES = 70_000  # ~5.2 MB


@pytest.fixture(scope="module")
def giant(tmp_path_factory) -> tuple[Path, object]:
    docs = tmp_path_factory.mktemp("giant-docs")
    body = "\n".join(f"Line {n}: the quasar reactor vents plasma through manifold {n % 97} when hot." for n in range(LINES))
    (docs / "giant.md").write_text(f"# Quasar reactor venting plasma\n\n{body}\n", encoding="utf-8")
    assert (docs / "giant.md").stat().st_size > 5_000_000
    index = tmp_path_factory.mktemp("giant-index") / "idx"
    with pytest.MonkeyPatch.context() as mp:
        # Parts of 60k tokens: the section is still one giant hit (its parts are joined for the
        # answer), but embedding ~40 parts instead of ~3,000 keeps the test to seconds.
        mp.setenv("RLHELPER_MAX_TOKENS", "60000")
        report = ingest([docs], index=index)
    assert not report.failed
    return index, report


def test_ingest_warns_about_a_giant_section(giant):
    _, report = giant
    warned = [w for path, w in report.warnings if path.endswith("giant.md") and "Quasar reactor" in w]
    assert warned and "characters" in warned[0] and f"{MAX_QUOTED_CHARS:,}" in warned[0], report.warnings


def test_ask_quotes_a_bounded_part_and_says_where_the_rest_is(giant, tmp_path, usem3_cache_dir):
    index, _ = giant
    env = cli_env(tmp_path, usem3_cache_dir)
    started = time.monotonic()
    shown = rlhelper(["ask", "--index", str(index), "quasar reactor vents plasma"], env, timeout=120)
    seconds = time.monotonic() - started
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert len(shown.stdout) < MAX_QUOTED_CHARS + 3000, len(shown.stdout)
    assert "Line 0: the quasar reactor" in shown.stdout
    continues = [line for line in shown.stdout.splitlines() if "The entry continues:" in line]
    assert continues and "more lines" in continues[0] and "giant.md, lines 1–" in continues[0], shown.stdout[-1500:]
    assert seconds < 60  # the whole command, on a machine shared with other jobs


def test_ask_llm_sends_a_bounded_source(giant, tmp_path, usem3_cache_dir):
    index, _ = giant
    env = cli_env(tmp_path, usem3_cache_dir)
    with OpenAIStub(Reply("The quasar reactor vents plasma through a manifold [1].")) as stub:
        started = time.monotonic()
        shown = rlhelper(["ask", "--index", str(index), "--llm", "--llm-base-url", stub.url, "--llm-model", "m",
                          "quasar reactor vents plasma"], env, timeout=120)
        seconds = time.monotonic() - started
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "vents plasma through a manifold [1]" in shown.stdout
    sent = json.dumps(stub.requests[0])
    assert len(sent) < 40_000 and "source truncated" in sent
    assert seconds < 60
