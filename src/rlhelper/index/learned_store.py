"""What the learned questions cost to make, kept on disk beside the bank: their vectors per embedder
(VectorLog) and their BM25 tokens (TokenLog), both by text, both append-only.

    <data_dir>/questions.jsonl.learned/usem3.f32     vectors
    <data_dir>/questions.jsonl.learned/tokens.bin    tokens, with the terms they use

A process that starts with 20,000 learned questions reads these instead of embedding and
tokenizing them again (tokenizing 20,000 texts of 1,900 characters took longer than every other step
of the first search together). A record cut by a crash is dropped before the next append; a file
of another format, embedder or tokenizer is written anew. `compact(keep)` rewrites a file with only
the texts still wanted once most of it is for others. Writing is best effort: a read-only data
folder only means the work is done again next time.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections import Counter
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

import numpy as np

from . import lexical, questions


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


class _AppendOnly:
    """An append-only file read incrementally: a header, then records; replaced (compacted) by
    another process, it is read again from the start."""

    HEADER = 128

    def __init__(self, path: Path, header: bytes):
        self.path = Path(path)
        self.header = header.ljust(self.HEADER, b"\0")[:self.HEADER]
        self._ident: tuple[int, int] | None = None
        self._read_to = 0
        self._skipped = 0  # bytes before _read_to passed over by skip_to, not read yet

    def read_new(self) -> bytes:
        """The bytes appended since the last call (all of them when the file was replaced); b"" when
        the file is missing or of another kind."""
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                if (st.st_dev, st.st_ino) != self._ident:
                    self._ident, self._read_to, self._skipped = (st.st_dev, st.st_ino), 0, 0
                    self.restart()
                if self._read_to == 0:
                    if f.read(self.HEADER) != self.header:
                        return b""
                    self._read_to = self.HEADER
                f.seek(self._read_to)
                return f.read()
        except OSError:
            return b""

    def consumed(self, n: int) -> None:
        self._read_to += n

    def position(self) -> list[int] | None:
        """[device, inode, size] of the file now, for `skip_to` in a later process (a bank's snapshot)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return [st.st_dev, st.st_ino, st.st_size]

    def skip_to(self, position) -> None:
        """Read on from `position` (what `position()` said when a snapshot was made) when the file is still
        that one: what is before it is read only when something asked for is not found after it."""
        if not isinstance(position, list) or len(position) != 3 or self.position() is None:
            return
        st = os.stat(self.path)
        dev, ino, size = position
        if (st.st_dev, st.st_ino) == (dev, ino) and self.HEADER <= size <= st.st_size:
            self._ident, self._read_to, self._skipped = (dev, ino), size, size

    def read_skipped(self) -> bytes:
        """The bytes `skip_to` passed over (once; b"" when there are none or the file was replaced since)."""
        end, self._skipped = self._skipped, 0
        if not end:
            return b""
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                if (st.st_dev, st.st_ino) != self._ident or f.read(self.HEADER) != self.header:
                    return b""
                return f.read(end - self.HEADER)
        except OSError:
            return b""

    def restart(self) -> None:
        """The file was replaced: forget what was read of the old one (subclasses)."""

    def append(self, build) -> bool:
        """Append under the file's lock what `build(fd, size)` makes: (where the whole records end,
        the bytes), so a record a crash left half written is cut first. Whether it was written."""
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the bank's, the user's alone
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return False
        try:
            _lock(fd)
            size = os.fstat(fd).st_size
            if size < self.HEADER or os.pread(fd, self.HEADER, 0) != self.header:
                os.ftruncate(fd, 0)
                os.pwrite(fd, self.header, 0)
                size = self.HEADER
            end, data = build(fd, size)
            if end != size:
                os.ftruncate(fd, end)
            os.pwrite(fd, data, end)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def rewrite(self, data: bytes) -> bool:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "wb") as out:
                out.write(self.header + data)
            os.replace(tmp, self.path)
        except OSError:
            with suppress(OSError):
                tmp.unlink()
            return False
        return True


def _lock(fd: int) -> None:
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd is closed
    except ImportError:
        pass


class VectorLog(_AppendOnly):
    """Vectors of learned questions for one embedder: records of a 16-byte key (a hash of the
    embedder and the text) and the float32 vector."""

    def __init__(self, folder: Path, embedder_id: str, dim: int):
        ident = embedder_id.encode()[:100]
        super().__init__(Path(folder) / f"{_safe(embedder_id)}.f32",
                         b"RLHVEC1\n" + struct.pack("<II", dim, len(ident)) + ident)
        self.embedder_id, self.dim = embedder_id, dim
        self._dtype = np.dtype([("key", "V16"), ("vector", "<f4", (dim,))])
        self._held: dict[bytes, np.ndarray] = {}

    def key(self, text: str) -> bytes:
        return hashlib.blake2b(f"{self.embedder_id}\0{text}".encode(), digest_size=16).digest()

    def _read(self) -> None:
        data = self.read_new()
        whole = len(data) // self._dtype.itemsize
        if whole:
            records = np.frombuffer(data, dtype=self._dtype, count=whole)
            for key, vector in zip(records["key"], records["vector"], strict=True):
                self._held[bytes(key)] = vector
            self.consumed(whole * self._dtype.itemsize)

    def _take(self, data: bytes) -> int:
        whole = len(data) // self._dtype.itemsize
        if whole:
            records = np.frombuffer(data, dtype=self._dtype, count=whole)
            for key, vector in zip(records["key"], records["vector"], strict=True):
                self._held.setdefault(bytes(key), vector)  # a vector read later (appended after) stays
        return whole * self._dtype.itemsize

    def get(self, texts: list[str]) -> dict[str, np.ndarray]:
        """The vectors held for `texts`, by text."""
        self._read()
        keys = [self.key(t) for t in texts]
        if any(k not in self._held for k in keys):
            self._take(self.read_skipped())
        return {t: self._held[k] for t, k in zip(texts, keys, strict=True) if k in self._held}

    def add(self, texts: list[str], vectors: np.ndarray) -> None:
        records = np.zeros(len(texts), dtype=self._dtype)
        records["key"] = [np.void(self.key(t)) for t in texts]
        records["vector"] = vectors
        for key, vector in zip(records["key"], records["vector"], strict=True):
            self._held[bytes(key)] = vector
        size = self._dtype.itemsize
        self.append(lambda fd, end: (self.HEADER + (end - self.HEADER) // size * size, records.tobytes()))

    def compact(self, keep: Iterable[str]) -> None:
        self._read()
        wanted = {self.key(t) for t in keep}
        if len(self._held) <= 2 * len(wanted) + 1_000:
            return
        kept = {k: v for k, v in self._held.items() if k in wanted}
        records = np.zeros(len(kept), dtype=self._dtype)
        if kept:
            records["key"] = [np.void(k) for k in kept]
            records["vector"] = np.stack(list(kept.values()))
        if self.rewrite(records.tobytes()):
            self._held = kept


_ENTRY = struct.Struct("<16sII")  # key, distinct terms, tokens


def term_hash(term: str) -> int:
    """A term as a 64-bit number: learned questions are searched by these, so no process holds a
    vocabulary of every word pair of every pasted log (millions, for 20,000 long questions)."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=8).digest(), "little")


class TokenLog(_AppendOnly):
    """The BM25 tokens of learned questions (questions.tokens: words and word pairs): per question,
    its key, then its distinct terms' hashes (uint64) and counts (uint16). What a search asks for is
    handed out and not kept: the postings hold it from then on."""

    def __init__(self, folder: Path | None):
        version = hashlib.blake2b(f"{lexical.TOKENIZER_VERSION}|words+pairs".encode(), digest_size=16).digest()
        super().__init__(Path(folder) / "tokens.bin" if folder else Path(os.devnull), b"RLHTOK2\n" + version)
        self.persist = folder is not None
        self._held: dict[bytes, tuple[np.ndarray, np.ndarray, int]] = {}

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.blake2b(text.encode(), digest_size=16).digest()

    def _parse(self, data: bytes) -> int:
        """Take the whole entries of `data`; the bytes taken."""
        at = 0
        while at + _ENTRY.size <= len(data):
            key, n, length = _ENTRY.unpack_from(data, at)
            end = at + _ENTRY.size + 10 * n
            if end > len(data):
                break
            start = at + _ENTRY.size
            self._held[key] = (np.frombuffer(data, dtype="<u8", count=n, offset=start),
                               np.frombuffer(data, dtype="<u2", count=n, offset=start + 8 * n).astype(np.float32),
                               length)
            at = end
        return at

    def of(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray, int]]:
        """(term hashes, counts, number of tokens) of each text, tokenized only when not on file."""
        if self.persist:
            self.consumed(self._parse(self.read_new()))
            if any(self.key(text) not in self._held for text in texts):
                self._parse(self.read_skipped())
        made, fresh = [], {}
        for text in texts:
            key = self.key(text)
            found = self._held.pop(key, None) or fresh.get(key)
            if found is None:
                tokens = questions.tokens(text)
                counts = Counter(tokens)
                found = fresh[key] = (np.fromiter(map(term_hash, counts), dtype=np.uint64, count=len(counts)),
                                      np.fromiter(counts.values(), dtype=np.float32, count=len(counts)), len(tokens))
            made.append(found)
        if fresh and self.persist:
            self._write(b"".join(_entry(key, *found) for key, found in fresh.items()))
        return made

    def _write(self, data: bytes) -> None:
        def build(fd: int, size: int) -> tuple[int, bytes]:
            """Read what others appended since (a file replaced: all of it), then append after the
            last whole entry."""
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != self._ident or not self.HEADER <= self._read_to <= size:
                self._ident, self._read_to = (st.st_dev, st.st_ino), self.HEADER
            if size > self._read_to:
                self.consumed(self._parse(os.pread(fd, size - self._read_to, self._read_to)))
            return self._read_to, data

        if self.append(build):
            self.consumed(len(data))
        else:
            self._ident = None

    def compact(self, keep: Iterable[str]) -> None:
        """Nothing held is kept; the file is written anew with only the entries of `keep` when most
        of it is for others (read again whole to know)."""
        if not self.persist:
            return
        self._ident, self._held = None, {}
        self.consumed(self._parse(self.read_new()))
        wanted = {self.key(t) for t in keep}
        if len(self._held) > 2 * len(wanted) + 1_000:
            self.rewrite(b"".join(_entry(k, *v) for k, v in self._held.items() if k in wanted))
        self._ident, self._held = None, {}


def _entry(key: bytes, hashes: np.ndarray, counts: np.ndarray, length: int) -> bytes:
    return (_ENTRY.pack(key, len(hashes), length) + hashes.astype("<u8").tobytes()
            + np.minimum(counts, 65_535).astype("<u2").tobytes())
