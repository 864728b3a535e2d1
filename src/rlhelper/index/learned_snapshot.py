"""A large learned bank read like the index: what its search needs, written once, memory-mapped after.

    save(live)          # after a full read of a bank of SNAPSHOT_MIN records or more (learned.py)
    restore(live)       # at a process's first search: True when the snapshot fits bank and index

Reading 20,000 learned questions from the journal meant parsing 45 MB of JSON, normalizing every
text and sorting millions of BM25 postings again in every process (`rlhelper bench`: 19 s at the
first search). The snapshot keeps, beside the bank (<bank>.learned/snapshot-<index>/), the state
LiveLearned reached after a full read: each slot's entry row, vote, vector and text, the BM25 runs
(CSR arrays) as they were made, every record held, and where in the journal that state stands. A
restore memory-maps the arrays, decodes a text only when a search shows it, and finds a record, a
slot or a question by a 64-bit hash of its key (checked against the record itself); then the
journal's lines written since are applied as at any search (BankFollower, from the saved offset).

A snapshot is used only for the index version it was made for (its folder and build time: rows are
that index's) with the same embedder, tokenizer and formats, and while the journal is the same file
(device and inode, and the bytes before the offset hash as they did): a bank compacted or replaced
is read whole again, which writes a new snapshot. Everything is best effort: a snapshot that cannot
be written or read only means the full read.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator, MutableMapping
from pathlib import Path

import numpy as np

FORMAT = 1
SNAPSHOT_MIN = 2_000  # records: a smaller bank is read whole faster than a snapshot is written
REFRESH_BYTES = 4 << 20  # journal bytes written since a snapshot past which it is read whole (and saved) again
HEADROOM = 2_048  # empty slots saved after the last: room for the votes of many later processes
KEEP = 2  # snapshots kept per bank (another index version's, e.g. before and after an ingest)
_TAIL = 65_536  # journal bytes before the offset that must be unchanged


def key_hash(parts: tuple | str) -> int:
    text = parts if isinstance(parts, str) else "\x1f".join(parts)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


# --- columns read lazily ---------------------------------------------------------------------


class TextColumn:
    """Strings from a snapshot (one UTF-8 blob and offsets, memory-mapped), decoded when read;
    then any appended in this process. What LearnedSegment.texts is after a restore."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray):
        self.blob, self.offsets = blob, offsets
        self.base = len(offsets) - 1
        self.more: list[str] = []

    def __len__(self) -> int:
        return self.base + len(self.more)

    def __getitem__(self, i: int) -> str:
        i = int(i)
        if i < 0:
            i += len(self)
        if i < self.base:
            return self.blob[self.offsets[i]:self.offsets[i + 1]].tobytes().decode("utf-8")
        return self.more[i - self.base]

    def append(self, text: str) -> None:
        self.more.append(text)

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))


def _text_arrays(texts) -> tuple[np.ndarray, np.ndarray]:
    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


class Records:
    """The records held, as columns: record i is made (a LearnedQuestion) when asked for."""

    FIELDS = ("text", "entry_id", "collection", "doc", "heading", "time", "source")

    def __init__(self, columns: dict[str, TextColumn], votes: np.ndarray):
        self.columns, self.votes = columns, votes

    def __len__(self) -> int:
        return len(self.votes)

    def record(self, i: int):
        from .bankrecord import LearnedQuestion

        return LearnedQuestion(vote=int(self.votes[i]), **{f: self.columns[f][i] for f in self.FIELDS})


class HashedMap(MutableMapping):
    """A dict by key whose entries from a snapshot are found by the key's 64-bit hash (one vectorised
    compare over the snapshot's hashes: nothing is built at load) and moved into the dict when first
    asked for, each checked against the key it stands for (a hash shared by two keys finds only its
    own). Iterating makes every entry: only a full read does that."""

    def __init__(self, hashes, key_of, value_of, hash_of=key_hash):
        self.hashes = hashes  # position -> hash of its key; a callable that reads them when first needed
        self.key_of, self.value_of, self.hash_of = key_of, value_of, hash_of
        self.taken: set[int] = set()  # positions moved into `made` (or dropped with their key)
        self.made: dict = {}

    def _hashes(self) -> np.ndarray | None:
        if callable(self.hashes):
            self.hashes = self.hashes()
        return self.hashes

    def _candidates(self, key) -> list[int]:
        hashes = self._hashes()
        if hashes is None or not len(hashes):
            return []
        found = np.flatnonzero(hashes == np.uint64(self.hash_of(key)))
        return [int(p) for p in found if int(p) not in self.taken]

    def _find(self, key) -> None:
        if key in self.made:
            return
        for position in self._candidates(key):
            if self.key_of(position) == key:
                self.taken.add(position)
                self.made[key] = self.value_of(position)
                return

    def _make_all(self) -> None:
        hashes = self._hashes()
        for position in range(0 if hashes is None else len(hashes)):
            if position not in self.taken:
                self.made.setdefault(self.key_of(position), self.value_of(position))
        self.hashes, self.taken = None, set()

    def __getitem__(self, key):
        self._find(key)
        return self.made[key]

    def __setitem__(self, key, value) -> None:
        self._find(key)  # the snapshot's entry is replaced, not found again later
        self.made[key] = value

    def __delitem__(self, key) -> None:
        self._find(key)
        del self.made[key]

    def __contains__(self, key) -> bool:
        self._find(key)
        return key in self.made

    def __iter__(self):
        self._make_all()
        return iter(list(self.made))

    def __len__(self) -> int:
        self._make_all()
        return len(self.made)


class HashedGroups(HashedMap):
    """A HashedMap whose value is the list of every snapshot position of the key (the slots of one
    normalized text, where a position is a slot), kept as the dict's value."""

    def __init__(self, hashes, slots, key_of):
        super().__init__(hashes, key_of, None)
        self.slots = slots

    def _find(self, key) -> None:
        if key in self.made:
            return
        same = [p for p in self._candidates(key) if self.key_of(int(self.slots[p])) == key]
        if same:
            self.taken.update(same)
            self.made[key] = [int(self.slots[p]) for p in same]

    def _make_all(self) -> None:
        hashes = self._hashes()
        for position in range(0 if hashes is None else len(hashes)):
            if position not in self.taken:
                slot = int(self.slots[position])
                self.made.setdefault(self.key_of(slot), []).append(slot)
        self.hashes, self.taken = None, set()


class _Arrays(dict):
    """A snapshot's arrays by name, each memory-mapped (copy on write) when first used."""

    def __init__(self, folder: Path, names: list[str]):
        super().__init__()
        self.folder, self.names = folder, set(names)

    def __missing__(self, name: str) -> np.ndarray:
        if name not in self.names:
            raise KeyError(name)
        array = self[name] = np.load(self.folder / f"{name}.npy", mmap_mode="c", allow_pickle=False)
        return array


# --- where a snapshot lives and what it must match -------------------------------------------


def _identity(live) -> dict:
    from .learned import DEFAULT_AVGDL
    from .learned_store import TokenLog
    from .userbank import FORMAT as BANK_FORMAT

    index = live.index
    return {"format": FORMAT, "bank_format": BANK_FORMAT, "index": str(Path(index.folder).resolve()),
            "built_at": index.manifest.get("built_at"), "embedder": index.embedder_id, "dim": live.segment.dim,
            "avgdl": float(live.segment.avgdl), "default_avgdl": DEFAULT_AVGDL,
            "tokens": TokenLog(None).header.hex()}


def identity(live) -> dict:
    """What a snapshot must have been made for: this index version, embedder, tokenizer and formats."""
    return _identity(live)


def folder_of(live) -> Path:
    ident = live.snapshot_identity
    tag = hashlib.sha256(f"{ident['index']}|{ident['built_at']}|{ident['embedder']}".encode()).hexdigest()[:16]
    return live.bank.cache_dir / f"snapshot-{tag}"


def _journal_hash(f, offset: int) -> str:
    digest = hashlib.sha256()
    f.seek(0)
    digest.update(f.read(min(offset, 4_096)))
    start = max(0, offset - _TAIL)
    f.seek(start)
    digest.update(f.read(offset - start))
    return digest.hexdigest()


# --- writing ---------------------------------------------------------------------------------


def save(live) -> bool:
    """Write `live`'s state (its journal position included) as its index's snapshot; best effort."""
    follower, seg = live.follower, live.segment
    position = follower.position()
    if position is None:
        return False
    folder = folder_of(live)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    try:
        with open(follower.path, "rb") as f:
            if (os.fstat(f.fileno()).st_dev, os.fstat(f.fileno()).st_ino) != tuple(position["ident"]):
                return False
            position["hash"] = _journal_hash(f, position["offset"])
        shutil.rmtree(tmp, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # the bank's, the user's alone
        tmp.mkdir(mode=0o700)
        n = seg.n
        arrays = {name: _with_room(getattr(seg, name), n) for name in ("rows", "votes", "live", "embedded", "vectors")}
        blob, offsets = _text_arrays(seg.texts[i] for i in range(n))
        arrays |= {"texts.blob": blob, "texts.offsets": offsets}
        slots = [(key_hash(key), slot) for key, slot in seg.slot_of.items()]
        arrays |= {"slot_of.hash": np.array([h for h, _ in slots], dtype=np.uint64),
                   "slot_of.slot": np.array([s for _, s in slots], dtype=np.int64)}
        normalized = [(key_hash(norm), slot) for norm, same in seg.by_normalized.items() for slot in same]
        arrays |= {"normalized.hash": np.array([h for h, _ in normalized], dtype=np.uint64),
                   "normalized.slot": np.array([s for _, s in normalized], dtype=np.int64)}
        records = list(live.held.values())
        for name in Records.FIELDS:
            blob, offsets = _text_arrays(getattr(r, name) for r in records)
            arrays |= {f"held.{name}.blob": blob, f"held.{name}.offsets": offsets}
        arrays |= {"held.vote": np.array([r.vote for r in records], dtype=np.int8),
                   "held.hash": np.array([key_hash(r.key) for r in records], dtype=np.uint64)}
        for i, run in enumerate(seg.runs):
            arrays |= {f"run{i}.terms": run.terms, f"run{i}.indptr": run.indptr, f"run{i}.slots": run.slots,
                       f"run{i}.weights": run.weights}
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
        meta = {**live.snapshot_identity, "journal": position, "n": n, "searchable": seg.searchable,
                "logs": {"vectors": live.vectors.position(), "tokens": live.tokens.position()},
                "runs": [run.docs for run in seg.runs], "arrays": sorted(arrays)}
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")  # last: names a complete folder
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except (OSError, ValueError):
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    _prune(folder)
    return True


def _with_room(array: np.ndarray, n: int) -> np.ndarray:
    """The first n rows and HEADROOM empty ones: the slots of votes after a restore are written in place
    (copy on write, a page each), not into a copy of the whole matrix that growing would make."""
    out = np.zeros((n + HEADROOM, *array.shape[1:]), dtype=array.dtype)
    out[:n] = array[:n]
    return out


def _prune(kept: Path) -> None:
    """Keep the KEEP newest snapshots of the bank (others are of index versions gone by)."""
    others = sorted((p for p in kept.parent.glob("snapshot-*") if p != kept),
                    key=lambda p: p.stat().st_mtime if p.exists() else 0, reverse=True)
    for old in others[KEEP - 1:]:
        shutil.rmtree(old, ignore_errors=True)


# --- reading ---------------------------------------------------------------------------------


def restore(live) -> bool:
    """Bring a fresh LiveLearned to its snapshot's state; False (and `live` untouched) when there is
    none that fits this bank file, this index and these formats."""
    folder = folder_of(live)
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        if {k: meta.get(k) for k in live.snapshot_identity} != live.snapshot_identity:
            return False
        arrays = _Arrays(folder, meta["arrays"])
        for name in ("rows", "votes", "live", "embedded", "vectors", "texts.blob", "texts.offsets"):
            arrays[name]  # noqa: B018 - what every search reads: a damaged file is found now
        journal = meta["journal"]
        if os.stat(live.follower.path).st_size - journal["offset"] > max(REFRESH_BYTES, journal["offset"] // 10):
            return False  # much was written since: a full read, which writes a snapshot of it
        if not live.follower.resume(journal, lambda f: _journal_hash(f, journal["offset"])):
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    _install(live, meta, arrays)
    return True


def _install(live, meta: dict, a: _Arrays) -> None:
    from .bankrecord import normalize
    from .learned import Learned, Run

    seg, n = live.segment, int(meta["n"])
    seg.n, seg.searchable = n, int(meta["searchable"])
    seg.rows, seg.votes, seg.live, seg.embedded, seg.vectors = (a[k] for k in ("rows", "votes", "live", "embedded",
                                                                                 "vectors"))
    texts = seg.texts = TextColumn(a["texts.blob"], a["texts.offsets"])

    def held() -> Records:
        return Records({f: TextColumn(a[f"held.{f}.blob"], a[f"held.{f}.offsets"]) for f in Records.FIELDS},
                       a["held.vote"])

    def record(i: int):
        return held().record(i)

    live.held = HashedMap(lambda: a["held.hash"], lambda i: record(i).key, record)

    def slot_key(position: int) -> tuple | None:
        """The key of the slot at `position`: its record's (the same hash), when the slot's text is that record's."""
        norm = normalize(texts[int(a["slot_of.slot"][position])])
        records = np.flatnonzero(a["held.hash"] == a["slot_of.hash"][position])
        return next((key for key in (record(int(i)).key for i in records) if key[0] == norm), None)

    seg.slot_of = HashedMap(lambda: a["slot_of.hash"], slot_key, lambda p: int(a["slot_of.slot"][p]))
    seg.by_normalized = HashedGroups(lambda: a["normalized.hash"], a["normalized.slot"],
                                     lambda slot: normalize(texts[slot]))
    seg.runs = tuple(Run(a[f"run{i}.terms"], a[f"run{i}.indptr"], a[f"run{i}.slots"], a[f"run{i}.weights"], docs)
                     for i, docs in enumerate(meta["runs"]))
    logs = meta.get("logs") or {}
    live.vectors.skip_to(logs.get("vectors"))  # what later votes need is after it: 100 MB not read for them
    live.tokens.skip_to(logs.get("tokens"))
    live.waiting = [int(s) for s in np.flatnonzero(seg.live[:n] & ~seg.embedded[:n])]
    live._learned = Learned.of(live.index.questions, seg.snapshot())
