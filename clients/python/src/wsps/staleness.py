"""Which watched symbols must not be shown as live, and since when (ported from the JS client's
client/staleness.js).

Three sources, held apart and combined: the gateway says its feed of a symbol is interrupted (a
``stale`` frame, until its ``fresh``), the gateway does not answer (the connection is quiet: until its
next frame), and the client's own connection was lost (until the symbol is resubscribed and recovered
or snapshotted on a new one). A symbol is fresh only when none holds; its ``since`` is the earliest. Every change returns the symbols whose combined state it
flipped, so the client tells each flip once.
"""

from __future__ import annotations

from typing import Iterable


class Staleness:
    def __init__(self) -> None:
        self._server: dict[str, int] = {}
        """The gateway's ``stale`` frames of the current connection: symbol -> since (ms since the epoch)."""
        self._lost: dict[str, int] = {}
        """A lost connection's: symbol -> since, until restored on a new one."""
        self._quiet: dict[str, int] = {}
        """The current connection does not answer: symbol -> since (its last frame)."""

    def is_stale(self, symbol: str) -> bool:
        return symbol in self._server or symbol in self._lost or symbol in self._quiet

    def since(self, symbol: str) -> int | None:
        """What is held of ``symbol`` is from then (ms since the epoch) or before; None when fresh."""
        times = [t for t in (self._server.get(symbol), self._lost.get(symbol), self._quiet.get(symbol)) if t is not None]
        return min(times) if times else None

    def server_stale(self, symbols: Iterable[str], since: int) -> list[str]:
        """A ``stale`` frame naming these watched symbols: returns those that were fresh."""
        symbols = list(symbols)
        flipped = [s for s in symbols if not self.is_stale(s)]
        for s in symbols:
            self._server[s] = min(since, self._server.get(s, since))
        return flipped

    def server_fresh(self, symbols: Iterable[str]) -> list[str]:
        """A ``fresh`` frame: returns those that are fresh now and were not."""
        return [s for s in symbols if self._server.pop(s, None) is not None and not self.is_stale(s)]

    def quiet(self, symbols: Iterable[str], since: int) -> list[str]:
        """The connection does not answer: every symbol of the watch set is stale from ``since`` (its
        last frame) until ``answered``. Returns those that were fresh."""
        symbols = list(symbols)
        flipped = [s for s in symbols if not self.is_stale(s)]
        for s in symbols:
            self._quiet.setdefault(s, since)
        return flipped

    def answered(self) -> list[str]:
        """A frame arrived on the quiet connection: returns those that are fresh now and were not."""
        symbols = list(self._quiet)
        self._quiet.clear()
        return [s for s in symbols if not self.is_stale(s)]

    def lost(self, symbols: Iterable[str], since: int) -> list[str]:
        """The connection was lost: every symbol of the watch set is stale from ``since`` (its last
        frame) until ``restored`` on a new connection. Returns those that were fresh."""
        symbols = list(symbols)
        flipped = [s for s in symbols if not self.is_stale(s)]
        for s, t in self._quiet.items():
            self._lost[s] = min(t, self._lost.get(s, t))
        self._quiet.clear()
        self.hand_over()
        for s in symbols:
            self._lost.setdefault(s, since)
        return flipped

    def hand_over(self) -> None:
        """The connection is replaced on purpose (an SSE stream reopened): the gateway's word ends with
        it. Its stale symbols stay stale until restored on the next one, whose gateway (maybe another
        pod) says again if its feed of them is still interrupted."""
        for s, since in self._server.items():
            self._lost[s] = min(since, self._lost.get(s, since))
        self._server.clear()

    def restored(self, symbols: Iterable[str]) -> list[str]:
        """Resubscribed and recovered (the ack's ``recovered``) or snapshotted on the new connection:
        returns those that are fresh now and were not."""
        return [s for s in symbols if self._lost.pop(s, None) is not None and not self.is_stale(s)]

    def forget(self, symbols: Iterable[str]) -> None:
        """No longer watched: neither stale nor fresh."""
        for s in symbols:
            self._server.pop(s, None)
            self._lost.pop(s, None)
            self._quiet.pop(s, None)
