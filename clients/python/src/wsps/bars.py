"""The bar subscriptions a client wants and the series it holds of each (docs/protocol.md, Bars),
the twin of clients/js/src/bars.js: per (symbol, interval) its backfill and timeline as asked, and
the bars from the ``bars`` and ``bar`` frames. A bar subscription is apart from the quote
subscription of the same symbol."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

MAX_HELD = 500
"""Most closed bars held per series: the largest backfill the protocol allows."""

Bar = dict[str, Any]
"""A bar as on the wire: ``t`` (its start, ms since the epoch), ``o`` ``h`` ``l`` ``c``, ``v`` (volume), ``n`` (ticks)."""


@dataclass
class BarSeries:
    """The bars held of one symbol and interval, updated in place as frames arrive.

    ``bars``: closed bars, oldest first (at most 500); ``current``: the open bar, if any;
    ``complete``: False when the gateway's history held fewer closed bars than the backfill asked
    for; ``delayed``: built from delayed quotes (a delayed grant), show them as such.
    """

    symbol: str
    interval: str
    bars: list[Bar] = field(default_factory=list)
    current: Bar | None = None
    complete: bool = True
    delayed: bool = False


@dataclass(frozen=True)
class Wanted:
    """How a bar subscription is asked for."""

    backfill: int
    delayed: bool | None = None


class BarBook:
    """What bars the client wants and holds."""

    def __init__(self) -> None:
        self._wanted: dict[tuple[str, str], Wanted] = {}
        self._series: dict[tuple[str, str], BarSeries] = {}

    def __len__(self) -> int:
        return len(self._wanted)

    def wants(self, symbol: str, interval: str) -> bool:
        return (symbol, interval) in self._wanted

    def series(self, symbol: str, interval: str) -> BarSeries | None:
        return self._series.get((symbol, interval))

    def of(self, interval: str) -> list[str]:
        """The wanted symbols of an interval, in the order added."""
        return [s for (s, i) in self._wanted if i == interval]

    def watch(self, symbols: Iterable[str], interval: str, wanted: Wanted) -> list[str]:
        """Adds (or changes) bar subscriptions; returns those to ask the server for (new, or on another timeline)."""
        send = []
        for s in symbols:
            was = self._wanted.get((s, interval))
            if was is None or was.delayed != wanted.delayed:
                send.append(s)
            self._wanted[(s, interval)] = wanted
        return send

    def drop(self, symbols: Iterable[str], interval: str | None) -> list[tuple[str, str]]:
        """Forgets bar subscriptions (``interval`` None: every interval of these symbols); returns those that were wanted."""
        named = set(symbols)
        gone = [k for k in self._wanted if k[0] in named and (interval is None or k[1] == interval)]
        for k in gone:
            del self._wanted[k]
            self._series.pop(k, None)
        return gone

    def requests(self, symbols: Iterable[str] | None = None, interval: str | None = None) -> list[tuple[str, Wanted, list[str]]]:
        """Sub requests (interval, how, symbols) for the whole wanted set, or for some symbols of one interval."""
        keys = list(self._wanted) if symbols is None else [(s, interval) for s in symbols if (s, interval) in self._wanted]
        groups: dict[tuple[str, Wanted], list[str]] = {}
        for s, i in keys:
            groups.setdefault((i, self._wanted[(s, i)]), []).append(s)
        return [(i, w, group) for (i, w), group in groups.items()]

    def for_stream(self) -> tuple[str, Wanted, list[str]] | None:
        """What one SSE stream carries of the wanted set (docs/protocol.md, Server-Sent Events: the
        bars of one interval): the series of the interval and timeline of the first one wanted, with
        the largest backfill asked of them, as a sub request (interval, how, symbols); None: none wanted."""
        if not self._wanted:
            return None
        (_, interval), first = next(iter(self._wanted.items()))
        same = [(s, w) for (s, i), w in self._wanted.items() if i == interval and w.delayed == first.delayed]
        return interval, Wanted(max(w.backfill for _, w in same), first.delayed), [s for s, _ in same]

    def backfill(self, msg: dict[str, Any]) -> BarSeries | None:
        """A ``bars`` frame: the series starts over from its backfill (None: not wanted, a late frame)."""
        key = (msg["symbol"], msg["interval"])
        if key not in self._wanted:
            return None
        series = BarSeries(key[0], key[1], list(msg["bars"])[-MAX_HELD:], msg.get("current"),
                           msg.get("complete") is True, msg.get("delayed") is True)
        self._series[key] = series
        return series

    def bar(self, msg: dict[str, Any]) -> BarSeries | None:
        """A ``bar`` frame: the open bar's update, or its final value (None: not held, or a late frame)."""
        series = self._series.get((msg["symbol"], msg["interval"]))
        if series is None:
            return None
        bar = msg["bar"]
        if series.bars and bar["t"] <= series.bars[-1]["t"]:
            return None  # a bar never goes back (a late frame of a series since replaced)
        if msg.get("closed") is True:
            series.bars.append(bar)
            del series.bars[:-MAX_HELD]
            series.current = None
        else:
            series.current = bar
        return series
