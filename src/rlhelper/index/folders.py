"""Where an index lives on disk, and the messages that name it.

Layout (`index/default` is a symlink; each build is a fresh hidden folder):

    index/default -> .default.v-<stamp>
    index/.default.v-<stamp>/
        manifest.json      format, embedder, settings, per-document records, file sizes, checksum
        entries.jsonl      searchable entries (after duplicate merging); row i == vector i == BM25 doc i
        dense.faiss        FAISS index of the rows (exact inner product on unit vectors by default)
        lexical/           BM25Index.save
        parsed.jsonl       every document's entries before merging + their lexical tokens
        parsed_vectors.npy their vectors, float32, row-aligned with parsed.jsonl
        judge_vectors.npz  the judge's vector of each entry's passage (float16, keyed by the passage's
                           hash) and the fingerprint of the judge that made them; absent without a judge
    index/default.lock     flock target; holds the pid of the running ingest

store.py reads a version, build.py writes one and swaps it in.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .. import config
from ..errors import (
    IndexCorruptError,
    IndexMissingError,
    IndexStaleError,
)
from ..version import __version__

MANIFEST = "manifest.json"
ENTRIES = "entries.jsonl"
DENSE = "dense.faiss"
LEXICAL = "lexical"
PARSED = "parsed.jsonl"
PARSED_VECTORS = "parsed_vectors.npy"
FORMAT_VERSION = 2  # 2: entries carry `twins` (twins.py)
OLDEST_FORMAT = 1  # read as the current one without twins; the next ingest links them
FAISS_TYPES = ("flat", "hnsw", "ivf")
JUDGE_VECTORS = "judge_vectors.npz"  # the judge's vector of every entry's passage (search/judge.py), by passage hash
GITHUB_SOURCE = "github:"  # a collection's source when it holds a repository's issue threads
MOVED_SUFFIX = "-moved"  # a plain index folder set aside by _swap_in, until the link is in


def show(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    path = Path(path)
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def is_default(path: Path) -> bool:
    return os.path.abspath(path) == os.path.abspath(config.index_path())


def rebuild_hint(path: Path, *, rebuild: bool = True) -> str:
    """The command that rebuilds (or, rebuild=False, updates) the index at `path`.

    Ingest without paths reads the shipped collections, so for an index of
    other folders the command must name them, or following the advice would
    swap the user's docs for the shipped ones. The folders come from the
    manifest when it can still be read.
    """
    synced = _synced_runs(path, rebuild)
    hint = _folders_hint(path, rebuild, bool(synced))
    return ", then ".join(filter(None, [hint, *synced]))


def _folders_hint(path: Path, rebuild: bool, synced: bool) -> str | None:
    command = "rlhelper ingest --rebuild" if rebuild else "rlhelper ingest"
    if is_default(path):
        return f"`{command}`"
    command += f" --index {show(path)}"
    sources = _recorded_sources(path)
    if sources is None:
        return None if synced else f"`{command}` with the folders the index was built from"
    if _are_shipped(sources):
        return f"`{command}`"
    if all(_default_name(paths, whole) == name for name, (paths, whole) in sources.items()):
        return f"`{command} {' '.join(show(Path(p)) for paths, _ in sources.values() for p in paths)}`"
    # One collection name per run: the first run rebuilds, the others add.
    runs = [f"`{command if i == 0 else command.replace(' --rebuild', '')} "
            f"{' '.join(show(Path(p)) for p in paths)} --collection {name}`"
            for i, (name, (paths, _)) in enumerate(sources.items())]
    return ", then ".join(runs)


def _synced_runs(path: Path, rebuild: bool) -> list[str]:
    """The commands that bring back (after a rebuild) or update the collections `rlhelper sync` follows:
    a rebuild reads the folders alone, so each git repository or GitHub repository is ingested again."""
    collections = (_live_manifest_json(path) or {}).get("collections") or {}
    index = "" if is_default(path) else f" --index {show(path)}"
    runs = []
    for name, info in collections.items():
        record = info.get("sync") if isinstance(info, dict) and isinstance(info.get("sync"), dict) else {}
        if record.get("kind") == "git" and not rebuild:
            return [f"`rlhelper sync{index}`"]
        if record.get("kind") == "git":
            ref = f" --ref {record['ref']}" if record.get("ref") else ""
            paths = "".join(f" --path {p}" for p in record.get("paths") or [])
            runs.append(f"`rlhelper ingest --git {record.get('url')}{ref}{paths} --collection {name}{index}`")
        elif rebuild and record.get("kind") == "github":
            labels = f" --labels {record['labels']}" if record.get("labels") else ""
            runs.append(f"`rlhelper ingest --github {record.get('repo')}{labels}{index}`")
    return runs


def _live_manifest_json(path: Path) -> dict | None:
    try:
        folder = live_folder(path)
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8")) if folder else None
    except (OSError, ValueError):
        return None


def recorded_embedder(path: Path) -> str:
    """The embedder id the live version of the index at `path` was built with; "" when its manifest
    cannot be read (loading the index says why)."""
    manifest = _live_manifest_json(Path(path))
    embedder = manifest.get("embedder") if isinstance(manifest, dict) else None
    return str(embedder.get("id", "")) if isinstance(embedder, dict) else ""


def _recorded_sources(path: Path) -> dict[str, tuple[list[str], bool]] | None:
    """Collection name -> (what to ingest again, whether that is its whole folder): the folder, or
    the files picked from it when no run read the whole folder. None when the manifest cannot be read."""
    try:
        folder = live_folder(path)
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8")) if folder else None
        sources = {}
        for name, info in manifest["collections"].items():
            if str(info.get("source", "")).startswith(GITHUB_SOURCE) or info.get("sync"):
                continue  # kept by any ingest that does not name it; updated by `rlhelper sync`
            picked = [str(d["source"]) for d in manifest.get("documents", []) if d["collection"] == name]
            whole = info.get("whole_folder", True) or not picked
            sources[name] = ([str(info["source"])], True) if whole else (picked, False)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return sources or None


def _default_name(paths: list[str], whole_folder: bool) -> str | None:
    """The collection name ingest gives these paths when none is passed: the folder's name."""
    folders = {Path(p) if whole_folder else Path(p).parent for p in paths}
    return folders.pop().name if len(folders) == 1 else None


def _are_shipped(sources: dict[str, tuple[list[str], bool]]) -> bool:
    shipped = config.corpus_dir()
    return all(name in config.DEFAULT_COLLECTIONS and whole and os.path.abspath(paths[0]) == os.path.abspath(shipped / name)
               for name, (paths, whole) in sources.items())


def stale_error(path: Path, built_with: str, current: str) -> IndexStaleError:
    return IndexStaleError(
        f"{show(path)} was built by an older rlhelper (tokenizer {built_with or 'unknown'}; this one uses "
        f"{current}). Run {rebuild_hint(path, rebuild=False)} to update it: unchanged entries keep their vectors.")


def missing_error(path: Path) -> IndexMissingError:
    command = "`rlhelper ingest`" if is_default(path) else f"`rlhelper ingest --index {show(path)}`"
    return IndexMissingError(f"No index at {show(path)} (manifest.json not found). Run {command} to build it.")


def versions(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.v-*"))


def same_folder(a: Path, b: Path) -> bool:
    """Whether two paths name the same folder. Versions are found relative to the path given
    and the live one through the link: compared as written, the live version of an index
    named by a relative path (or through a symlinked folder) looked stale and was deleted."""
    return os.path.realpath(a) == os.path.realpath(b)


def lock_file(path: Path) -> Path:
    return path.parent / f"{path.name}.lock"


def manifest_checksum(manifest: dict) -> str:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def live_folder(path: Path) -> Path | None:
    """The folder holding the index that `path` names now, or None.

    Follows the symlink; a plain folder is its own live folder. When `path` is
    gone after a crash while a hand-made folder was moved aside (its `-moved`
    version is still there), the newest complete version is the live one. Gone
    with no such trace, it was deleted on purpose (`rm -rf index/default`
    removes only the link): the index is missing, not silently brought back.
    """
    path = Path(path)
    if path.exists():
        return Path(os.path.realpath(path))
    if path.is_symlink():  # dangling: its target was removed by hand
        return None
    found = versions(path)
    if not any(v.name.endswith(MOVED_SUFFIX) for v in found):
        return None
    complete = [v for v in found if (v / MANIFEST).is_file()]
    return max(complete, key=lambda v: v.stat().st_mtime) if complete else None


def read_manifest(path: Path, folder: Path) -> dict:
    file = folder / MANIFEST
    where = show(path / MANIFEST)
    hint = f"Run {rebuild_hint(path)} to rebuild the index."
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        if (folder / ENTRIES).exists():
            raise IndexCorruptError(f"{where} is missing but index files are there. {hint}") from None
        raise missing_error(path) from None
    except OSError as exc:
        raise IndexCorruptError(f"{where} cannot be read ({exc.strerror or exc}). {hint}") from exc
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise IndexCorruptError(f"{where} is not valid JSON ({exc}). {hint}") from exc
    if not isinstance(manifest, dict):
        raise IndexCorruptError(f"{where} is not a JSON object. {hint}")
    version = manifest.get("format_version")
    if not isinstance(version, int) or not OLDEST_FORMAT <= version <= FORMAT_VERSION:
        if isinstance(version, int) and version > FORMAT_VERSION:
            raise IndexCorruptError(
                f"{where} has index format {version}, newer than this rlhelper ({__version__}) reads "
                f"(format {FORMAT_VERSION}). Upgrade rlhelper, or run {rebuild_hint(path)} to rebuild the index."
            )
        raise IndexCorruptError(
            f"{where} has index format {version!r}; this rlhelper reads formats {OLDEST_FORMAT}-{FORMAT_VERSION}. "
            f"The index was built by an older version: run {rebuild_hint(path)} to rebuild it."
        )
    if manifest.get("checksum") != manifest_checksum(manifest):
        raise IndexCorruptError(f"{where} was edited or damaged (its checksum does not match). {hint}")
    try:
        ok = (isinstance(manifest["entries"], int) and isinstance(manifest["embedder"]["id"], str)
              and isinstance(manifest["embedder"]["dim"], int) and manifest["faiss"]["type"] in FAISS_TYPES
              and isinstance(manifest["files"], dict) and isinstance(manifest["documents"], list))
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise IndexCorruptError(f"{where} lacks required fields. {hint}")
    return manifest
