"""Order books, ported from services/protocol/book.js and book-receiver.js (docs/protocol.md, Order books).

Pure: no I/O, no clock. Prices and sizes are canonical decimal strings,
so a level's identity is its string and the checksum is the one every
party computes: CRC-32 (zlib's) of ``bids|asks``, each level
``price:size``, levels joined by ``,``.

1. ``want()`` names the depth a symbol is held at; frames of other depths
   (or symbols not wanted) are IGNORED.
2. A ``book`` frame replaces the held book and ends a resync.
3. A ``levels`` frame applies when ``prev`` <= the held seq < its ``seq``,
   in the held epoch and while in sync; else GAP and nothing changes.
4. After every frame applied the held book's checksum must equal the
   frame's, else CHECKSUM_MISMATCH. On GAP or CHECKSUM_MISMATCH the caller
   calls ``resync()`` and resubscribes the book (``unsub`` + ``sub``).
5. When the client's link is lost or silent, ``interrupt()``: every book is
   held out of sync until its next snapshot.
"""

from __future__ import annotations

import bisect
import enum
import zlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterable, Mapping, Sequence

BOOK_DEPTHS = (10, 25, 100, 500)
"""The depths a book subscription may ask for (``"book": N``)."""

Level = tuple[str, str]
"""(price, size), canonical decimals; size "0" (in a delta) deletes the level."""


def book_checksum(bids: Sequence[Sequence[str]], asks: Sequence[Sequence[str]]) -> int:
    """CRC-32 of the canonical string of a window (bids best first, then asks best first)."""
    text = ",".join(f"{p}:{s}" for p, s in bids) + "|" + ",".join(f"{p}:{s}" for p, s in asks)
    return zlib.crc32(text.encode("ascii"))


class _Side:
    """One side of a book, prices kept sorted best first (by exact decimal value)."""

    def __init__(self, best_high: bool) -> None:
        self._sign = -1 if best_high else 1
        self._keys: list[Decimal] = []
        self._prices: list[str] = []
        self._sizes: dict[str, str] = {}

    def set(self, price: str, size: str) -> None:
        key = self._sign * Decimal(price)
        had = price in self._sizes
        if size == "0":
            if had:
                i = bisect.bisect_left(self._keys, key)
                del self._keys[i], self._prices[i], self._sizes[price]
            return
        self._sizes[price] = size
        if not had:
            i = bisect.bisect_left(self._keys, key)
            self._keys.insert(i, key)
            self._prices.insert(i, price)

    def top(self, n: int | None = None) -> list[Level]:
        return [(p, self._sizes[p]) for p in self._prices[:n]]

    def clear(self) -> None:
        self._keys.clear()
        self._prices.clear()
        self._sizes.clear()


class OrderBook:
    """Bids and asks by price; ``apply()`` takes levels in order (absolute sizes, "0" deletes)."""

    def __init__(self) -> None:
        self._bids = _Side(best_high=True)
        self._asks = _Side(best_high=False)

    def apply(self, bids: Iterable[Sequence[str]] = (), asks: Iterable[Sequence[str]] = ()) -> None:
        for p, s in bids:
            self._bids.set(p, s)
        for p, s in asks:
            self._asks.set(p, s)

    def reset(self, bids: Iterable[Sequence[str]] = (), asks: Iterable[Sequence[str]] = ()) -> None:
        self._bids.clear()
        self._asks.clear()
        self.apply(bids, asks)

    def top(self, depth: int | None = None) -> tuple[list[Level], list[Level]]:
        """The best ``depth`` levels of each side (None: all), best first."""
        return self._bids.top(depth), self._asks.top(depth)


class BookVerdict(str, enum.Enum):
    """What ``BookReceiver.frame`` did with a ``book`` or ``levels`` frame."""

    APPLIED = "applied"
    """Applied, and the checksum matches: the held book is the gateway's."""
    GAP = "gap"
    """A levels frame that does not continue the held book: not applied; resync."""
    CHECKSUM_MISMATCH = "checksum_mismatch"
    """Applied, but the book held then differs from the gateway's: resync."""
    OUT_OF_SYNC = "out_of_sync"
    """A ``"sync": false`` snapshot: held empty until the feed's next snapshot comes by itself (no resync)."""
    RESYNCING = "resyncing"
    """The book awaits its fresh snapshot since ``resync()``: levels are dropped until it comes."""
    IGNORED = "ignored"
    """Not a book held at that depth: nothing changed."""


@dataclass(frozen=True)
class HeldBook:
    """What a client shows of a book; a new object per change."""

    symbol: str
    depth: int
    seq: int
    epoch: str
    sync: bool
    bids: tuple[Level, ...]
    asks: tuple[Level, ...]


@dataclass
class _Entry:
    depth: int
    book: OrderBook | None = None
    view: HeldBook | None = None
    resyncing: float | None = None
    """When resync() was called (the caller's clock), None when not."""


class BookReceiver:
    """Held books of one client, by the rules in this module's docstring (as book-receiver.js)."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def want(self, symbol: str, depth: int) -> None:
        entry = self._entries.get(symbol)
        if entry is None or entry.depth != depth:
            self._entries[symbol] = _Entry(depth)

    def forget(self, symbol: str) -> None:
        self._entries.pop(symbol, None)

    def depth_of(self, symbol: str) -> int | None:
        entry = self._entries.get(symbol)
        return None if entry is None else entry.depth

    @property
    def symbols(self) -> list[str]:
        """The symbols wanted."""
        return list(self._entries)

    def by_depth(self) -> dict[int, list[str]]:
        """The symbols wanted, by depth (a new connection asks for all of them)."""
        out: dict[int, list[str]] = {}
        for symbol, entry in self._entries.items():
            out.setdefault(entry.depth, []).append(symbol)
        return out

    def book(self, symbol: str) -> HeldBook | None:
        entry = self._entries.get(symbol)
        return None if entry is None else entry.view

    def interrupt(self) -> list[str]:
        """The client's own link is lost or silent: every book in sync is held out of sync (empty) until its next snapshot."""
        flipped = []
        for symbol, entry in self._entries.items():
            if entry.book is None or entry.view is None or not entry.view.sync:
                continue
            entry.book.reset((), ())
            v = entry.view
            entry.view = HeldBook(v.symbol, v.depth, v.seq, v.epoch, False, (), ())
            flipped.append(symbol)
        return flipped

    def resync(self, symbol: str, since: float = 0.0) -> None:
        """Rule 4's "then": ``levels`` are RESYNCING until the next snapshot (``since``: any clock the caller likes)."""
        entry = self._entries.get(symbol)
        if entry is not None:
            entry.resyncing = since

    def resyncing_since(self, symbol: str) -> float | None:
        entry = self._entries.get(symbol)
        return None if entry is None else entry.resyncing

    def frame(self, frame: Mapping[str, Any]) -> BookVerdict:
        entry = self._entries.get(frame["symbol"])
        if entry is None or entry.depth != frame.get("depth"):
            return BookVerdict.IGNORED
        if frame["op"] == "book":
            entry.book = entry.book or OrderBook()
            entry.book.reset(frame.get("bids", ()), frame.get("asks", ()))
            entry.resyncing = None
            sync = frame.get("sync") is not False
            verdict = self._held(entry, frame, frame["seq"], str(frame.get("epoch", "")), sync)
            return BookVerdict.OUT_OF_SYNC if verdict is BookVerdict.APPLIED and not sync else verdict
        if entry.resyncing is not None:
            return BookVerdict.RESYNCING
        held = entry.view
        if entry.book is None or held is None or not held.sync:
            return BookVerdict.GAP
        prev = frame.get("prev")
        if not isinstance(prev, int) or not prev <= held.seq < frame["seq"]:
            return BookVerdict.GAP
        if frame.get("epoch") is not None and frame["epoch"] != held.epoch:
            return BookVerdict.GAP
        entry.book.apply(frame.get("bids", ()), frame.get("asks", ()))
        return self._held(entry, frame, frame["seq"], held.epoch, True)

    @staticmethod
    def _held(entry: _Entry, frame: Mapping[str, Any], seq: int, epoch: str, sync: bool) -> BookVerdict:
        # The checksum of everything held, not of the top `depth`: a frame that left more is caught too.
        assert entry.book is not None
        bids, asks = entry.book.top()
        entry.view = HeldBook(frame["symbol"], entry.depth, seq, epoch, sync, tuple(bids[:entry.depth]), tuple(asks[:entry.depth]))
        return BookVerdict.APPLIED if book_checksum(bids, asks) == frame.get("checksum") else BookVerdict.CHECKSUM_MISMATCH
