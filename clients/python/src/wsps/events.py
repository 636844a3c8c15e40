"""What a Client reports: one dataclass per kind, delivered to callbacks and async iterators."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Union

from .bars import Bar, BarSeries
from .book import HeldBook
from .errors import WspsError


@dataclass(frozen=True)
class QuoteEvent:
    """A symbol's full quote after an update (``snapshot``: it came in a ``snap``, replacing what was held).

    ``delayed``: the quote is as it was the gateway's delay (15 min by default) ago, never newer,
    because the token grants the symbol delayed only (``quote["delayed"]`` is ``True`` too;
    docs/protocol.md, "Delayed grants"). Show it as delayed.
    """

    symbol: str
    quote: dict[str, Any]
    snapshot: bool
    delayed: bool = False


@dataclass(frozen=True)
class BarsEvent:
    """A bar series (re)started from its backfill: after ``subscribe_bars`` and after every reconnect."""

    symbol: str
    interval: str
    series: BarSeries
    delayed: bool = False


@dataclass(frozen=True)
class BarEvent:
    """A live bar: the open bar's latest value, or (``closed``, once per bar) its final one."""

    symbol: str
    interval: str
    bar: Bar
    closed: bool
    series: BarSeries
    delayed: bool = False


@dataclass(frozen=True)
class BookEvent:
    """An order book changed: a snapshot, ``levels`` applied and checked, or held out of sync
    (``book.sync`` False: shown empty until its next snapshot). ``book`` is a new object per change."""

    symbol: str
    book: HeldBook
    snapshot: bool


@dataclass(frozen=True)
class RecoveryEvent:
    """A resumed subscription's outcome: ``recovered=False`` means ticks were lost (a fresh snapshot follows)."""

    symbol: str
    recovered: bool


@dataclass(frozen=True)
class StaleEvent:
    """These symbols, live until now, must not be shown as live any more: what is held of them is
    from ``since`` (ms since the epoch) or before. The gateway's feed of them is interrupted (a
    ``stale`` frame), or the connection was lost (``since``: its last frame). See ``Client.is_stale``."""

    symbols: list[str]
    since: int


@dataclass(frozen=True)
class FreshEvent:
    """These symbols are live again: the gateway said ``fresh``, and those a lost connection left
    stale were recovered or snapshotted on a new one."""

    symbols: list[str]


@dataclass(frozen=True)
class ErrorEvent:
    """A coded error: a gateway ``error`` frame or one of the client's own."""

    error: WspsError


@dataclass(frozen=True)
class StatusEvent:
    """The connection changed state: ``connecting``, ``live``, ``reconnecting`` (``delay`` seconds) or ``closed``."""

    state: str
    url: str
    node: str | None = None
    close_code: int | None = None
    reason: str = ""
    delay: float | None = None


Event = Union[QuoteEvent, RecoveryEvent, ErrorEvent, StatusEvent, BarsEvent, BarEvent, BookEvent, StaleEvent, FreshEvent]

_END = object()


class EventStream:
    """An async iterator over a client's events, with a bounded buffer.

    A reader that falls ``maxsize`` events behind is not fed silently less:
    its iteration raises ``WspsError("SLOW_CONSUMER")`` (read faster, or use
    a callback). Iteration ends when the client is closed; it raises
    ``ConnectionClosed`` when the server ended the connection for good.
    """

    def __init__(self, maxsize: int) -> None:
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._maxsize = maxsize
        self._failure: BaseException | None = None
        self._ended = False

    def _put(self, event: Event) -> None:
        if self._ended:
            return
        if self._queue.qsize() >= self._maxsize:
            self._end(WspsError("SLOW_CONSUMER", f"the iterator fell {self._maxsize} events behind"))
            return
        self._queue.put_nowait(event)

    def _end(self, failure: BaseException | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        self._failure = failure
        self._queue.put_nowait(_END)

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> Event:
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)  # later reads end too
            if self._failure is not None:
                raise self._failure
            raise StopAsyncIteration
        return item  # type: ignore[return-value]
