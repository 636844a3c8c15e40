"""The receiver rules of docs/protocol.md, ported from services/protocol/receiver.js.

Pure: no I/O, no clock. The client (client.py) feeds it frames and acts on
what it answers; the unit tests feed it by hand.

1. ``snap()`` replaces the held quote of its symbol.
2. ``delta()`` merges a delta whose base equals the held seq.
3. Any other delta is not applied: ``delta()`` says why (GAP, STALE,
   NO_SNAPSHOT). The caller then calls ``resync()`` and resubscribes the
   symbol (``unsub`` + ``sub``); deltas are dropped (RESYNCING) until the
   fresh snapshot arrives. Nothing is skipped silently.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping

Quote = dict[str, Any]
"""A full quote (``symbol``, ``seq``, ``ts``, ``bid``, ... and ``epoch`` when the gateway keeps history)."""


def continues(delta: Mapping[str, Any], held_seq: int) -> bool:
    """True when ``delta`` applies on top of the quote with seq ``held_seq``.

    A delta applies on top of seq ``base`` when present, else on ``seq - 1``.
    """
    base = delta.get("base")
    if base is None:
        base = delta["seq"] - 1
    return bool(base == held_seq)


class Outcome(str, enum.Enum):
    """What ``QuoteReceiver.delta`` did with a delta. Only APPLIED changes the held quote."""

    APPLIED = "applied"
    """It continued the held quote and was merged into it."""
    GAP = "gap"
    """Its base is past the held seq: updates were lost. Rule 3: resync the symbol."""
    STALE = "stale"
    """Its base is before the held seq: a duplicate or out of order. Rule 3 too."""
    NO_SNAPSHOT = "no_snapshot"
    """Nothing is held for the symbol (no snapshot yet). Rule 3 too."""
    RESYNCING = "resyncing"
    """The symbol awaits a fresh snapshot since ``resync()``: deltas are dropped until it arrives."""


@dataclass(frozen=True)
class Cursor:
    """Where a resumed subscription picks up: a ``sub``'s ``since`` entry."""

    seq: int
    epoch: str

    def to_wire(self) -> dict[str, Any]:
        return {"seq": self.seq, "epoch": self.epoch}


class QuoteReceiver:
    """Held quotes of one client across its reconnections, kept by the receiver rules."""

    def __init__(self) -> None:
        self._quotes: dict[str, Quote] = {}
        self._epochs: dict[str, str] = {}
        self._resyncing: dict[str, float] = {}

    def snap(self, quote: Mapping[str, Any]) -> Quote:
        """Rule 1: a snapshot quote replaces the held one and ends a resync. Returns the held quote."""
        symbol = quote["symbol"]
        held = {k: v for k, v in quote.items() if k != "base"}
        self._quotes[symbol] = held
        epoch = quote.get("epoch")
        if isinstance(epoch, str):
            self._epochs[symbol] = epoch
        else:
            self._epochs.pop(symbol, None)
        self._resyncing.pop(symbol, None)
        return held

    def delta(self, delta: Mapping[str, Any]) -> Outcome:
        """Rules 2 and 3: merges the delta when it continues the held quote, else says why not."""
        symbol = delta["symbol"]
        if symbol in self._resyncing:
            return Outcome.RESYNCING
        held = self._quotes.get(symbol)
        if held is None:
            return Outcome.NO_SNAPSHOT
        held_seq = held["seq"]
        if not continues(delta, held_seq):
            base = delta.get("base")
            if base is None:
                base = delta["seq"] - 1
            return Outcome.GAP if base > held_seq else Outcome.STALE
        epoch = delta.get("epoch")
        if isinstance(epoch, str):
            self._epochs[symbol] = epoch
        # A new dict per update: callers may keep the previous one.
        merged = dict(held)
        merged.update((k, v) for k, v in delta.items() if k != "base")
        self._quotes[symbol] = merged
        return Outcome.APPLIED

    def resync(self, symbol: str, since: float = 0) -> None:
        """Rule 3: the symbol is being resubscribed; its deltas are dropped until the next ``snap()``."""
        self._resyncing[symbol] = since

    def resyncing_since(self, symbol: str) -> float | None:
        """The ``since`` given to a pending ``resync()``, None when none is pending."""
        return self._resyncing.get(symbol)

    def forget(self, symbol: str) -> None:
        """Forgets a symbol (unsubscribed): its held quote and any pending resync."""
        self._quotes.pop(symbol, None)
        self._epochs.pop(symbol, None)
        self._resyncing.pop(symbol, None)

    def clear(self) -> None:
        """Forgets every symbol."""
        self._quotes.clear()
        self._epochs.clear()
        self._resyncing.clear()

    def seq(self, symbol: str) -> int | None:
        """The held seq, None when nothing is held."""
        held = self._quotes.get(symbol)
        return None if held is None else int(held["seq"])

    def cursor(self, symbol: str) -> Cursor | None:
        """The held seq and its epoch; None when either is unknown (such a symbol resumes with a fresh snap)."""
        held = self._quotes.get(symbol)
        epoch = self._epochs.get(symbol)
        if held is None or epoch is None:
            return None
        return Cursor(int(held["seq"]), epoch)

    def quote(self, symbol: str) -> Quote | None:
        """The held full quote."""
        return self._quotes.get(symbol)

    def current(self, symbol: str) -> bool:
        """True when a quote is held and no resync is pending."""
        return symbol in self._quotes and symbol not in self._resyncing

    def __len__(self) -> int:
        return len(self._quotes)
