"""Files outside the ingested folder (issue 17, point 7): a link that leaves the folder is not
followed, loops are skipped, and both are named by `ingest` and by `info`. Real symlinks in tmp dirs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from clirun import cli_env, rlhelper

from rlhelper.index.store import Index
from rlhelper.ingest.pipeline import ingest
from rlhelper.measure.clikit import TERMINAL_CONTROLS


@pytest.fixture
def docs(tmp_path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe quokka password is hunter2.\n")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "good.md").write_text("# Good\n\n## Zorblax overheats\n\nCool the zorblax.\n")
    (docs / "passwd.md").symlink_to("/etc/passwd")
    (docs / "secret.md").symlink_to(outside / "secret.md")
    (docs / "sub" / "escape.md").symlink_to("../../outside/secret.md")
    (docs / "alias.md").symlink_to("good.md")  # stays inside: an ordinary document
    (docs / "loop.md").symlink_to("loop.md")
    (docs / "sub" / "up").symlink_to("..", target_is_directory=True)  # a folder loop
    (docs / "world").symlink_to(outside, target_is_directory=True)
    return docs


def test_links_out_of_the_folder_are_not_followed_and_are_named(docs, tmp_path):
    index = tmp_path / "idx"
    report = ingest([docs], index=index)
    indexed = {e.doc for e in Index.load(index).entries}
    assert indexed == {"good.md", "alias.md"}
    assert not any("hunter2" in e.text or "root:" in e.text for e in Index.load(index).entries)
    named = {Path(path).relative_to(docs).as_posix(): reason for path, reason in report.not_followed}
    assert set(named) == {"passwd.md", "secret.md", "sub/escape.md", "loop.md", "sub/up", "world"}, named
    assert "/etc/passwd" in named["passwd.md"] and "outside" in named["passwd.md"]
    assert "loop" in named["loop.md"]


def test_cli_ingest_and_info_name_what_was_skipped(docs, tmp_path, usem3_cache_dir):
    env = cli_env(tmp_path / "home", usem3_cache_dir)
    index = tmp_path / "idx"
    done = rlhelper(["ingest", "--index", str(index), str(docs)], env)
    assert done.returncode == 0, done.stderr
    skipped = [line for line in done.stderr.splitlines() if line.startswith("skipped: ")]
    assert any("passwd.md" in line and "/etc/passwd" in line for line in skipped), done.stderr
    assert "6 skipped" in done.stdout, done.stdout
    info = rlhelper(["info", "--index", str(index)], env)
    assert info.returncode == 0, info.stderr
    status = next(line for line in info.stdout.splitlines() if line.startswith("status"))
    assert "skipped" in status, info.stdout  # never a plain "up to date" with items left out
    assert "passwd.md" in info.stdout and "loop.md" in info.stdout


NAMED_SKIPPED = """
import json, sys
from pathlib import Path
from rlhelper.ingest.sources import find_sources
found = find_sources([Path(sys.argv[1])])
print(json.dumps({"docs": [d.doc for d in found.docs], "skipped": found.not_followed}))
"""


def test_an_unreadable_folder_is_named():
    """Root reads any folder, so as root the walk runs as `nobody` (setpriv), in a folder it may enter."""
    top = Path(tempfile.mkdtemp(prefix="rlhelper-unreadable-"))
    try:
        top.chmod(0o755)
        docs = top / "docs"
        (docs / "locked").mkdir(parents=True)
        (docs / "good.md").write_text("# Good\n\nCool the zorblax.\n")
        (docs / "locked" / "hidden.md").write_text("# Hidden\n\ntext\n")
        (docs / "locked").chmod(0)
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        run = subprocess.run([*as_nobody, sys.executable, "-c", NAMED_SKIPPED, str(docs)], capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        found = json.loads(run.stdout)
        assert found["docs"] == ["good.md"]
        assert found["skipped"] == [[str(docs / "locked"), "folder not readable (Permission denied): skipped"]]
    finally:
        (top / "docs" / "locked").chmod(0o755)
        shutil.rmtree(top)


def test_a_skipped_link_with_a_hostile_name_is_named_inert(tmp_path, usem3_cache_dir):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nCool the zorblax.\n")
    (docs / "evil\x1b]0;pwned\x07\u202egnp.md").symlink_to("/etc/passwd")
    env = cli_env(tmp_path / "home", usem3_cache_dir)
    done = rlhelper(["ingest", "--index", str(tmp_path / "idx"), str(docs)], env)
    info = rlhelper(["info", "--index", str(tmp_path / "idx")], env)
    assert "evil]0;pwnedgnp.md" in done.stderr and "evil]0;pwnedgnp.md" in info.stdout
    assert not TERMINAL_CONTROLS.search(done.stderr + done.stdout + info.stdout)
