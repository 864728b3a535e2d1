"""The index folder: round trip, search, validation of every damaged file, atomic writes, the lock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from rlhelper.errors import EmbedderMismatchError, IndexCorruptError, IndexLockedError, IndexMissingError
from rlhelper.index import build, folders, store
from rlhelper.index.store import Index

# --- helpers -----------------------------------------------------------------------------


def copy_index(source: Path, target: Path) -> Path:
    """A private, writable copy (a plain folder) of a session index."""
    shutil.copytree(os.path.realpath(source), target)
    return target


@pytest.fixture
def index_copy(seeds_index, tmp_path) -> Path:
    return copy_index(seeds_index, tmp_path / "index")


def rewrite_manifest(folder: Path, change, *, keep_checksum: bool = False) -> None:
    file = folder / "manifest.json"
    manifest = json.loads(file.read_text(encoding="utf-8"))
    change(manifest)
    if keep_checksum:
        manifest["checksum"] = folders.manifest_checksum(manifest)
    file.write_text(json.dumps(manifest), encoding="utf-8")


def probe(index: Index) -> tuple[list[int], list[float]]:
    """A fixed dense search whose answer must survive crashes."""
    ids, scores = index.dense_search(index.vector(min(7, len(index.entries) - 1)), 5)
    return ids.tolist(), np.round(scores, 5).tolist()


def contents_of(path: Path, kind: str = "flat", keep: int | None = None) -> build.IndexContents:
    """An index's contents, unmerged (one searchable row per parsed entry), first `keep` rows."""
    index, parsed = Index.load(path), build.read_parsed(path)
    keep = len(parsed.entries) if keep is None else keep
    return build.IndexContents(
        entries=parsed.entries[:keep], rows=list(range(keep)), bm25=store.BM25Index.build(parsed.tokens[:keep]),
        parsed=parsed.entries, parsed_vectors=parsed.vectors, parsed_tokens=parsed.tokens,
        embedder=index.manifest["embedder"], documents=index.manifest["documents"],
        collections=index.manifest["collections"], faiss_type=kind)


def subprocess_env(cache_dir: Path) -> dict:
    return {**os.environ, "RLHELPER_CACHE_DIR": str(cache_dir), "PYTHONUNBUFFERED": "1"}


# --- round trip and search -----------------------------------------------------------------


def test_round_trip_of_a_real_index(seeds_index):
    index = Index.load(seeds_index)
    manifest = index.manifest
    assert manifest["format_version"] == store.FORMAT_VERSION
    assert manifest["embedder"] == {"id": "usem3", "dim": 512, "recipe": manifest["embedder"]["recipe"]}
    assert manifest["faiss"]["type"] == "flat" and manifest["collections"]["seeds"]["documents"] == 5
    assert len(index.entries) == manifest["entries"] == index.faiss.ntotal == len(index.bm25) > 100
    assert {d["doc"] for d in manifest["documents"]} == {f"{n}" for n in os.listdir(Path(__file__).parent.parent
                                                        / "ingest" / "seeds") if n.endswith(".txt")}
    assert all(d["sha256"] and d["entries"] > 0 for d in manifest["documents"])
    np.testing.assert_allclose(np.linalg.norm(index.vectors(), axis=1), 1.0, atol=1e-5)
    entry = index.entries[10]
    assert index.row_of(entry.id) == 10 and index.embedder_id == "usem3"


def test_live_index_is_a_symlink_to_a_hidden_version(seeds_index):
    assert seeds_index.is_symlink()
    target = Path(os.readlink(seeds_index))
    assert not target.is_absolute() and target.name.startswith(f".{seeds_index.name}.v-")
    assert sorted(p.name for p in seeds_index.parent.iterdir()) == sorted([seeds_index.name, target.name,
                                                                           f"{seeds_index.name}.lock"])


def test_dense_search_finds_each_row_first(seeds_index):
    index = Index.load(seeds_index)
    for row in (0, 50, len(index.entries) - 1):
        ids, scores = index.dense_search(index.vector(row), 3)
        assert ids[0] == row and scores[0] == pytest.approx(1.0, abs=1e-4)
        assert list(scores) == sorted(scores, reverse=True) and ids.dtype == np.int64


def test_dense_search_with_a_filter(seeds_index):
    index = Index.load(seeds_index)
    n = len(index.entries)
    allowed = np.zeros(n, dtype=bool)
    allowed[[3, 30, 60, 90]] = True
    ids, scores = index.dense_search(index.vector(30), 10, allowed=allowed)
    assert ids[0] == 30 and set(ids.tolist()) == {3, 30, 60, 90} and len(scores) == 4
    ids, _ = index.dense_search(index.vector(30), 2, allowed=allowed)
    assert len(ids) == 2 and set(ids.tolist()) <= {3, 30, 60, 90}
    assert len(index.dense_search(index.vector(0), 5, allowed=np.zeros(n, dtype=bool))[0]) == 0
    full = index.dense_search(index.vector(0), 5, allowed=np.ones(n, dtype=bool))
    assert full[0].tolist() == index.dense_search(index.vector(0), 5)[0].tolist()
    with pytest.raises(ValueError):
        index.dense_search(index.vector(0), 5, allowed=np.ones(n + 1, dtype=bool))
    with pytest.raises(EmbedderMismatchError):
        index.dense_search(np.ones(384, dtype=np.float32), 5)


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_indexes_agree_with_exact_search(seeds_index, tmp_path, kind):
    build.save_index(tmp_path / "exact", contents_of(seeds_index))
    build.save_index(tmp_path / "approx", contents_of(seeds_index, kind))
    exact, approx = Index.load(tmp_path / "exact"), Index.load(tmp_path / "approx")
    assert approx.faiss_type == kind and approx.manifest["faiss"]["type"] == kind
    for row in (1, 40, 200):
        assert approx.dense_search(exact.vector(row), 1)[0][0] == row
        np.testing.assert_allclose(approx.vector(row), exact.vector(row), atol=1e-6)
    # A tight filter: approximate search alone can come back short; the exact fallback fills it.
    allowed = np.zeros(len(exact.entries), dtype=bool)
    allowed[[5, 150, 250]] = True
    ids, _ = approx.dense_search(exact.vector(150), 10, allowed=allowed)
    assert set(ids.tolist()) == {5, 150, 250} and ids[0] == 150


# --- validation ------------------------------------------------------------------------


def test_missing_index_says_how_to_build_it(tmp_path):
    with pytest.raises(IndexMissingError) as err:
        Index.load(tmp_path / "nothing")
    assert "No index at" in str(err.value) and "manifest.json not found" in str(err.value)
    assert "rlhelper ingest" in str(err.value)


def test_missing_default_index_message(tmp_path, monkeypatch):
    monkeypatch.setenv("RLHELPER_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(IndexMissingError) as err:
        Index.load(tmp_path / "index" / "default")
    assert str(err.value) == ("No index at index/default (manifest.json not found). "
                              "Run `rlhelper ingest` to build it.")


def test_an_empty_folder_is_a_missing_index(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexMissingError):
        Index.load(tmp_path / "empty")


def expect_corrupt(path: Path, file: str) -> str:
    with pytest.raises(IndexCorruptError) as err:
        Index.load(path)
    message = str(err.value)
    assert file in message, message
    assert "rlhelper ingest --rebuild" in message, message
    return message


def test_manifest_that_is_not_json(index_copy):
    (index_copy / "manifest.json").write_text('{"format_version": 1, "entr', encoding="utf-8")
    assert "not valid JSON" in expect_corrupt(index_copy, "manifest.json")


def test_manifest_edited_by_hand(index_copy):
    rewrite_manifest(index_copy, lambda m: m.update(entries=m["entries"] - 1))
    assert "edited" in expect_corrupt(index_copy, "manifest.json")


def test_manifest_missing_next_to_index_files(index_copy):
    (index_copy / "manifest.json").unlink()
    expect_corrupt(index_copy, "manifest.json")


def test_manifest_without_required_fields(index_copy):
    rewrite_manifest(index_copy, lambda m: m.pop("embedder"), keep_checksum=True)
    expect_corrupt(index_copy, "manifest.json")


def test_older_format_version(index_copy):
    rewrite_manifest(index_copy, lambda m: m.update(format_version=0), keep_checksum=True)
    assert "older version" in expect_corrupt(index_copy, "manifest.json")


def test_the_previous_format_still_loads(index_copy):
    rewrite_manifest(index_copy, lambda m: m.update(format_version=store.OLDEST_FORMAT), keep_checksum=True)
    assert len(Index.load(index_copy).entries) > 0


def test_newer_format_version(index_copy):
    rewrite_manifest(index_copy, lambda m: m.update(format_version=store.FORMAT_VERSION + 1), keep_checksum=True)
    assert "Upgrade rlhelper" in expect_corrupt(index_copy, "manifest.json")


def test_truncated_faiss_file(index_copy):
    data = (index_copy / "dense.faiss").read_bytes()
    (index_copy / "dense.faiss").write_bytes(data[: len(data) // 2])
    assert "truncated" in expect_corrupt(index_copy, "dense.faiss")


def test_faiss_file_overwritten_with_garbage(index_copy):
    size = (index_copy / "dense.faiss").stat().st_size
    (index_copy / "dense.faiss").write_bytes(b"\x07" * size)
    assert "FAISS" in expect_corrupt(index_copy, "dense.faiss")


def test_faiss_file_missing(index_copy):
    (index_copy / "dense.faiss").unlink()
    assert "missing" in expect_corrupt(index_copy, "dense.faiss")


def test_entries_store_missing(index_copy):
    (index_copy / "entries.jsonl").unlink()
    expect_corrupt(index_copy, "entries.jsonl")


def test_entries_store_with_a_damaged_line(index_copy):
    lines = (index_copy / "entries.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = "x" * (len(lines[3].encode("utf-8")) - 1) + "\n"  # same size: only parsing can tell
    (index_copy / "entries.jsonl").write_text("".join(lines), encoding="utf-8")
    assert "line 4" in expect_corrupt(index_copy, "entries.jsonl")


def test_entries_store_with_a_missing_row(index_copy):
    lines = (index_copy / "entries.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (index_copy / "entries.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")
    expect_corrupt(index_copy, "entries.jsonl")


def test_row_count_mismatch_between_files(index_copy):
    """Files that are each well-formed but disagree (a manifest re-signed after an edit)."""
    lines = (index_copy / "entries.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (index_copy / "entries.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")

    def shrink(m):
        m["entries"] -= 1
        m["files"]["entries.jsonl"] = (index_copy / "entries.jsonl").stat().st_size

    rewrite_manifest(index_copy, shrink, keep_checksum=True)
    assert "vectors" in expect_corrupt(index_copy, "dense.faiss")


def test_damaged_lexical_index(index_copy):
    bm25 = next((index_copy / "lexical").glob("*.npz"))
    size = bm25.stat().st_size
    bm25.write_bytes(b"\0" * size)
    expect_corrupt(index_copy, "lexical")


def test_other_embedder_names_both_and_the_fix(seeds_index):
    with pytest.raises(EmbedderMismatchError) as err:
        Index.load(seeds_index, expected_embedder="sentence-transformers:all-MiniLM-L6-v2")
    message = str(err.value)
    assert "'usem3'" in message and "'sentence-transformers:all-MiniLM-L6-v2'" in message
    assert "rlhelper ingest --embedder sentence-transformers:all-MiniLM-L6-v2" in message
    assert Index.load(seeds_index, expected_embedder="usem3").embedder_id == "usem3"


def test_load_is_fast(seeds_index):
    Index.load(seeds_index)
    started = time.process_time()  # CPU time: other processes on a busy machine do not count
    Index.load(seeds_index)
    assert time.process_time() - started < 1.0  # measured ~0.03 s


# --- atomic writes -----------------------------------------------------------------------


def resave(path: Path, *, drop_rows: int = 0) -> None:
    """Write a new version of the index at `path` from its own contents."""
    contents = contents_of(path, keep=len(build.read_parsed(path).entries) - drop_rows)
    with build.index_lock(path):
        build.save_index(path, contents)


@pytest.fixture
def live_index(seeds_index, tmp_path) -> Path:
    """A writable index behind the usual symlink (a copy, then one save to link it)."""
    path = copy_index(seeds_index, tmp_path / "idx" / "default")
    resave(path)
    assert path.is_symlink()
    return path


@pytest.mark.parametrize("where", ["write_jsonl", "faiss_write", "bm25_save", "np_save", "symlink", "replace"])
def test_a_crash_while_writing_leaves_the_previous_index(live_index, monkeypatch, where):
    before = probe(Index.load(live_index))
    count = len(Index.load(live_index).entries)
    assert count == len(build.read_parsed(live_index).entries)  # resave() wrote one row per parsed entry

    def crash(*args, **kwargs):
        raise OSError(f"simulated crash in {where}")

    targets = {"write_jsonl": (build, "_write_jsonl"), "faiss_write": (build.faiss, "write_index"),
               "bm25_save": (build.BM25Index, "save"), "np_save": (build.np, "save"),
               "symlink": (build.os, "symlink"), "replace": (build.os, "replace")}
    monkeypatch.setattr(*targets[where], crash)
    with pytest.raises(OSError, match="simulated crash"):
        resave(live_index, drop_rows=5)
    monkeypatch.undo()
    index = Index.load(live_index)
    assert len(index.entries) == count and probe(index) == before
    # The next write cleans what the crash left and works.
    with build.index_lock(live_index):
        build.clean_stale(live_index)
    leftovers = [p.name for p in live_index.parent.iterdir() if ".tmp-" in p.name or ".link-" in p.name]
    assert leftovers == [] and len(list(live_index.parent.glob(".default.v-*"))) == 1
    resave(live_index, drop_rows=5)
    assert len(Index.load(live_index).entries) == count - 5


def test_a_plain_index_folder_is_replaced_by_the_link(index_copy):
    assert not index_copy.is_symlink()
    resave(index_copy)
    assert index_copy.is_symlink()
    assert len(Index.load(index_copy).entries) == len(build.read_parsed(index_copy).entries)
    assert [p.name for p in index_copy.parent.glob(".index.v-*")] == [os.readlink(index_copy)]


def test_recovery_when_the_link_is_lost_during_migration(index_copy, monkeypatch):
    """A crash between moving a plain folder aside and linking the new version leaves no
    index path; load reads the newest complete version (the new one: resave writes one row
    per parsed entry, the copy has duplicates merged) and the next ingest relinks it."""
    rows = len(build.read_parsed(index_copy).entries)
    assert len(Index.load(index_copy).entries) < rows

    def crash(*args, **kwargs):
        raise OSError("simulated crash before the link is swapped in")

    monkeypatch.setattr(build.os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        resave(index_copy)
    monkeypatch.undo()
    assert not index_copy.exists() and list(index_copy.parent.glob(f".index.v-*{folders.MOVED_SUFFIX}"))
    assert len(Index.load(index_copy).entries) == rows
    with build.index_lock(index_copy):
        build.clean_stale(index_copy)
    assert index_copy.is_symlink() and len(Index.load(index_copy).entries) == rows
    assert not list(index_copy.parent.glob(f".index.v-*{folders.MOVED_SUFFIX}"))


def test_an_index_deleted_by_hand_stays_deleted(live_index):
    """`rm -rf index/default` removes the link only; the hidden version it pointed to must
    not come back as if nothing happened: the index is missing until the next ingest,
    which builds afresh and deletes the orphan."""
    orphan = Path(os.path.realpath(live_index))
    live_index.unlink()  # what `rm -rf index/default` does to the link
    assert orphan.is_dir() and not live_index.exists()
    with pytest.raises(IndexMissingError):
        Index.load(live_index)
    with build.index_lock(live_index):
        build.clean_stale(live_index)
    assert not orphan.exists() and not live_index.exists()


KILL_SCRIPT = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    import rlhelper.index.build as build
    from rlhelper.ingest.pipeline import ingest

    docs, index, point = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

    def hang():
        print("HANG", flush=True)
        time.sleep(120)

    if point == "writing":  # files half written in the temporary folder
        original = build.BM25Index.save
        def save(self, folder):
            original(self, folder)
            hang()
        build.BM25Index.save = save
    elif point == "swap":  # new version complete, link not yet swapped in
        original_symlink = os.symlink
        def symlink(*args, **kwargs):
            original_symlink(*args, **kwargs)
            hang()
        build.os.symlink = symlink
    elif point == "cleanup":  # new version live, old one not yet deleted
        original_rmtree = build.shutil.rmtree
        def rmtree(path, *args, **kwargs):
            if ".v-" in str(path):
                hang()
            return original_rmtree(path, *args, **kwargs)
        build.shutil.rmtree = rmtree
    ingest([docs], index=index)
    print("DONE", flush=True)
""")


def write_docs(folder: Path, version: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.md").write_text(f"# Guide A\n\n## Rollout OOM\n\nLower memory, variant {version}.\n\n"
                                 "## NCCL timeout\n\nRaise NCCL_TIMEOUT.\n", encoding="utf-8")
    (folder / "b.md").write_text("# Guide B\n\n## Ray worker died\n\nCheck the raylet log.\n", encoding="utf-8")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("point", ["writing", "swap", "cleanup"])
def test_sigkill_mid_ingest_leaves_a_loadable_index(tmp_path, usem3_cache_dir, point):
    from rlhelper.ingest.pipeline import ingest

    docs = write_docs(tmp_path / "docs", 1)
    path = tmp_path / "idx" / "default"
    ingest([docs], index=path)
    before = Index.load(path)
    old = (probe(before), [e.text for e in before.entries])
    write_docs(docs, 2)  # a change, so the killed ingest has something to write

    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(docs), str(path), point],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=subprocess_env(usem3_cache_dir))
    try:
        line = proc.stdout.readline()
        assert line.strip() == "HANG", (line, proc.stderr.read() if proc.poll() is not None else "")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

    after = Index.load(path)
    texts = [e.text for e in after.entries]
    if point == "cleanup":  # killed after the commit point: the new index is the live one
        assert any("variant 2" in t for t in texts)
    else:
        assert (probe(after), texts) == old
    report = ingest([docs], index=path)  # the next ingest cleans up and finishes the job
    assert any("variant 2" in e.text for e in Index.load(path).entries)
    assert report.failed == []
    names = sorted(p.name for p in path.parent.iterdir())
    assert names == sorted(["default", "default.lock", os.readlink(path)])


# --- the lock ------------------------------------------------------------------------------

LOCK_SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from rlhelper.index import build
    with build.index_lock(Path(sys.argv[1])):
        print("LOCKED", flush=True)
        time.sleep(float(sys.argv[2]))
""")


def hold_lock(path: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", LOCK_SCRIPT, str(path), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "LOCKED"
    return proc


def test_a_second_ingest_stops_with_the_holders_pid(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "index" / "default"
    proc = hold_lock(path, 30)
    try:
        with pytest.raises(IndexLockedError) as err, build.index_lock(path, timeout=0.3):
            pass
    finally:
        proc.kill()
        proc.wait()
    message = str(err.value)
    assert f"(pid {proc.pid})" in message and "another `rlhelper ingest`" in message
    assert "index/default" in message and "index/default.lock" in message


def test_a_second_ingest_waits_for_the_first(tmp_path):
    path = tmp_path / "index"
    proc = hold_lock(path, 0.5)
    started = time.monotonic()
    with build.index_lock(path, timeout=20):
        waited = time.monotonic() - started
    proc.wait()
    assert waited > 0.2


def test_a_killed_holder_releases_the_lock(tmp_path):
    path = tmp_path / "index"
    proc = hold_lock(path, 60)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with build.index_lock(path, timeout=2):
        pass


def test_an_index_from_an_older_tokenizer_asks_for_a_re_ingest(index_copy, tmp_path):
    from rlhelper.api import Helper
    from rlhelper.errors import IndexStaleError
    from rlhelper.index.lexical import TOKENIZER_VERSION
    from rlhelper.ingest.pipeline import ingest

    vocab = index_copy / "lexical" / "bm25_vocab.json"
    old = "rlh-lex-0" + TOKENIZER_VERSION[len("rlh-lex-0"):]  # same length: the file size check still passes
    vocab.write_text(vocab.read_text(encoding="utf-8").replace(TOKENIZER_VERSION, old), encoding="utf-8")
    with pytest.raises(IndexStaleError) as info:
        Helper.load(index_copy)
    message = str(info.value)
    assert old in message and TOKENIZER_VERSION in message and "rlhelper ingest --index" in message
    from conftest import SEEDS

    report = ingest([SEEDS], index=index_copy)  # what the message says to run
    assert report.entries and not report.failed
    assert Helper.load(index_copy).search("wake_up timed out", k=1)


def test_the_rebuild_advice_for_an_index_of_your_own_docs_names_your_folders(tmp_path, monkeypatch):
    """Following the advice must not swap the user's docs for the shipped corpus."""
    import re

    from rlhelper.api import Helper
    from rlhelper.ingest.pipeline import ingest

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "gpu.md").write_text("# GPU\n\n## XYZZY stall\n\nRestart the XYZZY daemon.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    ingest([notes], collection="mine", index=tmp_path / "idx")
    os.remove(os.path.realpath(tmp_path / "idx") + "/dense.faiss")
    with pytest.raises(IndexCorruptError) as info:
        Helper.load(tmp_path / "idx")
    [command] = re.findall(r"`(rlhelper [^`]*)`", str(info.value))
    assert command == "rlhelper ingest --rebuild --index idx notes --collection mine"
    from click.testing import CliRunner

    from rlhelper.cli import main

    result = CliRunner().invoke(main, command.split()[1:] + ["-q"])
    assert result.exit_code == 0, result.output
    assert Helper.load(tmp_path / "idx").collections == ["mine"]
