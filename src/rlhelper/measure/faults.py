"""Faults done on purpose: damaged index files, killed ingests, nasty input.

    CORRUPTIONS                           the damage `rlhelper bench reliability` and the tests try
    rlhelper_command(*args)               argv running this rlhelper's CLI in a fresh process
    kill_ingest(argv, path, delay, env)   -> Kill: SIGKILL an ingest after `delay` s, and where it landed
    ingest_timeline(argv, path, env)      -> when an unkilled ingest starts writing, swaps, ends
    write_trial_docs(folder, variant)     a small collection that changes between two variants
    write_small_corpus(root)              a stand-in for the shipped corpus (RLHELPER_CORPUS_DIR)
    answers(path, queries)                what an index answers, to compare before and after a fault
    NASTY_DOC_FRAGMENTS, NASTY_LOG_LINES  pieces fuzzers build documents and pasted logs from

Damage is done to an index the way disks, editors and other versions do it: a
truncated or overwritten file, a hand edit, a deleted file, a format from an
older or newer rlhelper, vectors from another embedder. Each must give a
one-line error that names the file and the command that fixes it.

Where a kill landed is read from what the killed process left behind (its pid
is in the names of its temporary folder and of the version it writes): nothing,
a half-written `.tmp-<pid>` folder, a complete version not yet linked, or its
version live.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..index import build, folders, store

FOREIGN_EMBEDDER = "acme-embed-2"

# Markup that has broken parsers before, mixed with control, bidi and non-Latin text.
NASTY_DOC_FRAGMENTS = [
    "#", "# ", "###### ", "####### ", "\n# H\n", "\nTitle\n=====\n", "\n---\n", "\n***\n", "===\n", "~~~\n",
    "```", "```py\n", "````\n", "~~~", "\n```\n", "    indented code\n", "> ", ">>>>> ", "- ", "* ", "+ ",
    "1. ", "99999999999. ", "  ", "\t", "\n", "\n\n", "\r", "\r\n", "\x00", "\x07", "\x1b[31m", "\x1b]0;t\x07",
    "\x7f", "\x85", "\u2028", "\u202e", "\u2066", "\u200b", "\ufeff", "\ufffd", "中文标题", "显存不足",
    "[", "]", "](", "[x](http://a)", "![i](x.png)", "<", ">", "<div>", "</div>", "<script>alert(1)</script>",
    "<!--", "-->", "<details><summary>s</summary>", "</details>", "{/* c */}", "import X from 'y'\n",
    "export const a = 1\n", "<Tabs>", "</Tabs>", "`", "``", "**", "__", "*", "_", "|", "| a | b |\n",
    "|---|---|\n", "\\", "\\\\", ":", "::\n", ".. ", ".. note::\n", ".. code-block:: python\n", ".. _t:\n",
    "`a <u>`_ ", "|sub|", ":ref:`x`", "..\n", "---\ntitle: x\n---\n", "Skip to content\n", "Copyright\n",
    "**Cause:**", "**Fix:**", "**修复：**", "Traceback (most recent call last):\n", "&amp;", "&#0;",
]
# Lines and prefixes of pasted training logs: frames, chained errors, Ray/NCCL/vLLM prefixes, ANSI, bars.
NASTY_LOG_LINES = [
    "Traceback (most recent call last):", "During handling of the above exception, another exception occurred:",
    "(WorkerDict pid=4242, ip=10.0.0.3) ", "[rank3]: ", "INFO 03-01 12:00:01 [model_runner.py:1234] ",
    "[E301 12:00:01.123 ProcessGroupNCCL.cpp:616] ", "2025-03-01T12:00:01.123Z | ", "\x1b[31m", "\x1b[0m",
    "\x1b]8;;http://x\x07", " 45%|████▌     | 45/100 [00:01<00:02, 20.1it/s]\r", "    ^^^^^^^^", "=" * 80,
    "NCCL WARN Timeout", "torch.OutOfMemoryError: CUDA out of memory.", "显存不足", "\x00", "\u202e", "\ufeff",
    "python -m verl.trainer.main_ppo", "actor_id: 8b3a" + "f" * 28, "frame #3: c10::Error", "0x7f3a2b1c",
    '  File "/root/verl/verl/workers/rollout.py", line 248, in generate_sequences', "RuntimeError: ",
]  # an embedder this rlhelper does not know (a newer release's, say)


def _live(path: Path) -> Path:
    folder = folders.live_folder(path)
    if folder is None:
        raise FileNotFoundError(f"no index at {path}")
    return folder


def _truncate(file: Path) -> None:
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def _overwrite_same_size(file: Path) -> None:
    file.write_bytes(b"\x07" * file.stat().st_size)


def _edit_manifest(path: Path, change: Callable[[dict], None], *, resign: bool) -> None:
    """Change the manifest; `resign` recomputes its checksum, as a tool that knows the format would."""
    file = _live(path) / folders.MANIFEST
    manifest = json.loads(file.read_text(encoding="utf-8"))
    change(manifest)
    if resign:
        manifest["checksum"] = folders.manifest_checksum(manifest)
    file.write_text(json.dumps(manifest, indent=1), encoding="utf-8")


def _damage_entry_line(file: Path) -> None:
    """Line 3 overwritten with as many bytes of garbage: the size check cannot see it."""
    lines = file.read_bytes().split(b"\n")
    lines[2] = b"x" * len(lines[2])
    file.write_bytes(b"\n".join(lines))


def _not_utf8(file: Path) -> None:
    data = bytearray(file.read_bytes())
    data[10:12] = b"\xff\xfe"
    file.write_bytes(bytes(data))


def _zero_lexical(path: Path) -> None:
    for file in (_live(path) / folders.LEXICAL).glob("*.npz"):
        file.write_bytes(b"\0" * file.stat().st_size)


def foreign_embedder_index(path: Path) -> None:
    """Rewrite the index at `path` as another embedder would have made it: the same entries
    and documents, 64-dimensional vectors, the manifest naming FOREIGN_EMBEDDER."""
    index, parsed = store.Index.load(path), build.read_parsed(path)
    vectors = np.random.default_rng(0).standard_normal((len(parsed.entries), 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    contents = build.IndexContents(
        entries=parsed.entries, rows=list(range(len(parsed.entries))), bm25=store.BM25Index.build(parsed.tokens),
        parsed=parsed.entries, parsed_vectors=vectors, parsed_tokens=parsed.tokens,
        embedder={"id": FOREIGN_EMBEDDER, "dim": 64, "recipe": "acme"}, documents=index.manifest["documents"],
        collections=index.manifest["collections"], settings=index.manifest.get("settings", {}))
    with build.index_lock(path):
        build.save_index(path, contents)


@dataclass(frozen=True)
class Corruption:
    name: str  # as a user would say it
    file: str  # the file the error message must name
    damage: Callable[[Path], None]  # takes the index path (the link), damages what it points at


def _in_live(name: str, damage: Callable[[Path], None]) -> Callable[[Path], None]:
    return lambda path: damage(_live(path) / name)


CORRUPTIONS = [
    Corruption("truncated FAISS file", folders.DENSE, _in_live(folders.DENSE, _truncate)),
    Corruption("FAISS file overwritten, same size", folders.DENSE, _in_live(folders.DENSE, _overwrite_same_size)),
    Corruption("FAISS file deleted", folders.DENSE, _in_live(folders.DENSE, Path.unlink)),
    Corruption("manifest edited by hand", folders.MANIFEST,
               lambda p: _edit_manifest(p, lambda m: m.update(entries=m["entries"] - 1), resign=False)),
    Corruption("manifest not JSON", folders.MANIFEST,
               _in_live(folders.MANIFEST, lambda f: f.write_text('{"format_version": 1, "entr', encoding="utf-8"))),
    Corruption("manifest deleted", folders.MANIFEST, _in_live(folders.MANIFEST, Path.unlink)),
    Corruption("entries store deleted", folders.ENTRIES, _in_live(folders.ENTRIES, Path.unlink)),
    Corruption("entries store truncated", folders.ENTRIES, _in_live(folders.ENTRIES, _truncate)),
    Corruption("entries store line damaged, same size", folders.ENTRIES, _in_live(folders.ENTRIES, _damage_entry_line)),
    Corruption("entries store not UTF-8", folders.ENTRIES, _in_live(folders.ENTRIES, _not_utf8)),
    Corruption("BM25 postings zeroed", folders.LEXICAL, _zero_lexical),
    Corruption("index of an older format", folders.MANIFEST,
               lambda p: _edit_manifest(p, lambda m: m.update(format_version=store.OLDEST_FORMAT - 1), resign=True)),
    Corruption("index of a newer format", folders.MANIFEST,
               lambda p: _edit_manifest(p, lambda m: m.update(format_version=store.FORMAT_VERSION + 1), resign=True)),
    Corruption("index made by another embedder", folders.MANIFEST, foreign_embedder_index),
]


# --- killed ingests ----------------------------------------------------------------------

def rlhelper_command(*args: str) -> list[str]:
    """The CLI of the rlhelper imported here, in a fresh interpreter (no reliance on PATH)."""
    return [sys.executable, "-m", "rlhelper.cli", *args]


@dataclass(frozen=True)
class Kill:
    seconds: float  # from start to SIGKILL
    phase: str  # where it landed (PHASES), or "finished" when the ingest ended first


PHASES = ("before writing", "while writing files", "written, not yet live", "after the swap")


def landed(path: Path, pid: int) -> str:
    """Where an ingest with this pid stopped, from what it left next to the index at `path`."""
    parent, name = Path(path).parent, Path(path).name
    if os.path.realpath(path).endswith(f"-{pid}"):
        return PHASES[3]
    if any(parent.glob(f".{name}.v-*-{pid}")):
        return PHASES[2]
    if (parent / f".{name}.tmp-{pid}").exists():
        return PHASES[1]
    return PHASES[0]


def kill_ingest(argv: Sequence[str], path: Path, delay: float, env: dict | None = None, *,
                once_writing: bool = False) -> Kill:
    """Start `argv` (an ingest into `path`) and SIGKILL it `delay` seconds later, or `delay` seconds
    after it starts writing files (`once_writing`: aims at the few tenths of a second that matter
    whatever the machine's load). Says where it landed; an ingest that fails instead is an error."""
    started = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    while once_writing and proc.poll() is None and landed(path, proc.pid) == PHASES[0]:
        time.sleep(0.002)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return Kill(time.perf_counter() - started, landed(path, proc.pid))
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.read().decode(errors='replace')[-500:]}")
    return Kill(time.perf_counter() - started, "finished")


@dataclass(frozen=True)
class Timeline:
    """Seconds from the start of an unkilled ingest (None: too quick to be seen)."""

    writing: float | None
    live: float | None
    end: float


def ingest_timeline(argv: Sequence[str], path: Path, env: dict | None = None, poll: float = 0.005) -> Timeline:
    """Run `argv` to the end, watching when its temporary folder appears and its version goes live."""
    started = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    writing = live = None
    while proc.poll() is None:
        phase = landed(path, proc.pid)
        now = time.perf_counter() - started
        if writing is None and phase != PHASES[0]:
            writing = now
        if live is None and phase == PHASES[3]:
            live = now
        time.sleep(poll)
    end = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.read().decode(errors='replace')[-500:]}")
    return Timeline(writing, live, end)


def write_trial_docs(folder: Path, variant: int) -> Path:
    """Three small documents; `variant` (0 or 1) changes one section, so an ingest has work to write."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rollout.md").write_text(
        "# Trial rollout guide\n\n## XYZZY rollout stall\n\n"
        f"**Cause:** the XYZZY engine waits on a lock (variant {variant}).\n\n"
        f"**Fix:** set `xyzzy.timeout={60 + 60 * variant}` and restart the engine.\n", encoding="utf-8")
    (folder / "reward.md").write_text(
        "# Trial reward guide\n\n## Reward server refused the connection\n\n"
        "**Fix:** start the reward server on port 8811 before training.\n", encoding="utf-8")
    (folder / "nccl.rst").write_text(
        "Trial NCCL notes\n================\n\nNCCL watchdog timeout\n---------------------\n\n"
        "Raise ``NCCL_TIMEOUT`` and check the network interfaces.\n", encoding="utf-8")
    return folder


def write_small_corpus(root: Path) -> Path:
    """The two default collections with a few documents each: with RLHELPER_CORPUS_DIR pointing
    here, `rlhelper ingest --rebuild` takes seconds, not the minute of the shipped corpus."""
    write_trial_docs(root / "seeds", 0)
    (root / "official").mkdir(parents=True, exist_ok=True)
    (root / "official" / "faq.md").write_text(
        "# FAQ\n\n## CUDA out of memory during rollout\n\nLower `gpu_memory_utilization`.\n\n"
        "## 显存不足\n\n降低 `gpu_memory_utilization`。\n", encoding="utf-8")
    return root


# --- what an index answers -----------------------------------------------------------------

PROBE_QUERIES = (
    "CUDA out of memory during rollout",
    "Weight sync timed out between the trainer and SGLang",
    "rollout 阶段显存不足怎么办",
    "XYZZY rollout stall",
    "NCCL watchdog timeout",
)


def answers(path: Path, queries: Sequence[str] = PROBE_QUERIES) -> list[tuple]:
    """For each query: the hits (entry id, score to 5 places) and the answer text."""
    from ..api import Helper

    helper = Helper.load(path)
    out = []
    for query in queries:
        answer = helper.ask(query)
        out.append((tuple((h.entry.id, round(float(h.score), 5)) for h in answer.hits), answer.text))
    return out
