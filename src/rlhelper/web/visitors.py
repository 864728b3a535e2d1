"""Who a web visitor is, and what their own votes change in their own searches (issue 31).

    visitors = Visitors(helper, VisitorBank(...), key)
    token = visitors.mint(address)           # a new visitor's id, signed; None past the minting limit
    visitor = visitors.verify(token)         # the id, or None for a forged or damaged token
    own = visitors.own_votes(visitor)        # learned.Learned for Helper.ask(own_votes=...), or None

A visitor is a browser: the page keeps a signed id in the browser's storage (gr.BrowserState) and
sends it back on load, so their votes follow them across reloads and server restarts; with
`serve --auth-file` a visitor is the signed-in user instead ("user:NAME"), on any browser. The id
is random, signed with a key kept in the data folder (0600), so a hand-made id is refused; a new
one is free to get only MINTS_PER_HOUR times an hour per address (IPv6: per /64), so "a new browser"
is no cheap way round the per-visitor vote limit, and the visitor count of a suggestion costs
something to inflate. The default is sized for a team behind one address (issue 37: an office's NAT,
or a proxy the operator has not named with `--trusted-proxy`); `serve --new-visitors-per-hour`
changes it. What one address can hold is bounded in the store as well (visitorbank.py).

A visitor's votes (index/visitorbank.py) are applied after the operator's bank, for that visitor's
searches alone: their thumbs-up leads for them, their thumbs-down never leads for them, and
"matched:" shows their own words to them only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..index import learned
from ..index.visitorbank import VisitorBank
from ..measure.feedback import WriteLimiter

log = logging.getLogger(__name__)

KEY_FILE = "web_visitor.key"
MINTS_PER_HOUR = 600  # new visitor ids handed to one address in an hour: an office of 200, three browsers each
CACHED_VISITORS = 256  # visitors whose own votes are held ready to search with
CACHED_VECTORS = 4096  # vectors of visitors' questions held in memory


def load_key(folder: Path) -> bytes:
    """The server's signing key, made on first use (0600) beside the visitors' votes."""
    path = Path(folder) / KEY_FILE
    try:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    except FileNotFoundError:
        pass
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "wb") as out:
        out.write(key)
    try:
        os.link(tmp, path)  # of two servers starting at once, both use the first key written
    except FileExistsError:
        key = path.read_bytes()
    finally:
        tmp.unlink(missing_ok=True)
    return key


class Visitors:
    """Visitor ids (minted, verified) and each visitor's votes ready for their searches."""

    def __init__(self, helper, bank: VisitorBank, key: bytes, *, mints_per_hour: int = MINTS_PER_HOUR,
                 clock=time.monotonic):
        """`helper`: a Helper, or an api.LiveHelper whose current index a vote is keyed to."""
        self._helper, self.bank, self._key = helper, bank, key
        self.mints_per_hour = mints_per_hour
        self._mints = WriteLimiter(mints_per_hour, clock=clock, window=3600.0)
        self._warned: set[str] = set()
        self._own: OrderedDict[tuple[str, int], learned.Learned] = OrderedDict()
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def helper(self):
        """The helper answering now (a synced index is picked up without a restart)."""
        current = getattr(self._helper, "current", None)
        return current() if callable(current) else self._helper

    @property
    def storage_secret(self) -> str:
        """The key the page's BrowserState encrypts the id with: fixed, so a restart keeps it, and not
        the signing key (it is sent to every browser)."""
        return hmac.new(self._key, b"browser-state", hashlib.sha256).hexdigest()[:32]

    # -- ids ----------------------------------------------------------------------------------

    def _sign(self, visitor: str) -> str:
        return base64.urlsafe_b64encode(hmac.new(self._key, visitor.encode(), hashlib.sha256).digest()[:12]).decode()

    def mint(self, address: str) -> str | None:
        """A new visitor's token; None when `address` had MINTS_PER_HOUR of them this hour (the
        operator is told once per address, with what to change)."""
        if not self._mints.allow(address):
            if address not in self._warned and len(self._warned) < 1000:
                self._warned.add(address)
                log.warning("%s has had %d new visitor ids this hour, the limit: its new browsers' votes teach no "
                            "one until the hour passes. For a team behind one address raise it (`rlhelper serve "
                            "--new-visitors-per-hour N`); behind a reverse proxy, name it (`--trusted-proxy ADDR`).",
                            address, self.mints_per_hour)
            return None
        visitor = "v-" + secrets.token_urlsafe(16)
        return f"{visitor}.{self._sign(visitor)}"

    def at_mint_limit(self, address: str) -> bool:
        """Whether `address` has had all its new visitor ids for this hour."""
        return self._mints.at_limit(address)

    def verify(self, token) -> str | None:
        """The visitor a token names, or None (missing, forged, damaged)."""
        if not isinstance(token, str) or len(token) > 200 or token.count(".") != 1:
            return None
        visitor, signature = token.split(".")
        if not visitor.startswith("v-") or not hmac.compare_digest(signature, self._sign(visitor)):
            return None
        return visitor

    # -- their own votes ----------------------------------------------------------------------

    def changed(self, visitor: str) -> None:
        """Their votes changed: read them again at their next search."""
        with self._lock:
            for key in [k for k in self._own if k[0] == visitor]:
                del self._own[key]

    def own_votes(self, visitor: str | None) -> learned.Learned | None:
        """`visitor`'s votes keyed to the index's rows, for Helper.ask(own_votes=...); None without any."""
        if not visitor:
            return None
        index = self.helper.index
        key = (visitor, id(index))  # rows are the index's: a reloaded one keys the votes anew
        with self._lock:
            if key in self._own:
                self._own.move_to_end(key)
                return self._own[key]
        records = self.bank.votes_of(visitor)
        own = learned.learned_from(records, index, self._vectors_of, dim=index.dim) if records else None
        with self._lock:
            self._own[key] = own
            while len(self._own) > CACHED_VISITORS:
                self._own.popitem(last=False)
        return own

    def _vectors_of(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            fresh = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if fresh:
            embedded = np.asarray(self.helper.retriever.embedder.embed_documents(fresh), dtype=np.float32)
            with self._lock:
                self._vectors.update(zip(fresh, embedded, strict=True))
                while len(self._vectors) > CACHED_VECTORS:
                    self._vectors.popitem(last=False)
        with self._lock:
            held = [self._vectors.get(t) for t in texts]
        missing = [t for t, v in zip(texts, held, strict=True) if v is None]
        if missing:  # evicted meanwhile by another visitor's: embed those again
            again = dict(zip(missing, self.helper.retriever.embedder.embed_documents(missing), strict=True))
            held = [v if v is not None else np.asarray(again[t], dtype=np.float32) for t, v in zip(texts, held,
                                                                                                strict=True)]
        return np.stack(held).astype(np.float32)
