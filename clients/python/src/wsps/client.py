"""wsps.Client: one connection to a wsps gateway that stays connected by itself
and keeps a consistent quote per watched symbol (the Python twin of
the JS client, clients/js).

One task runs the connection loop: connect (rotating over the URLs), send
``auth`` as the first frame when there is a token, wait for ``hello``,
resubscribe the whole watch set (with ``since`` per symbol that holds a seq
and epoch), then read frames until the socket closes, and pick the delay
before the next attempt by the close code (1012: at once, jittered; others:
backoff; 1000/4001/4002/4003: stop, unless a token callable can give a new
token). Quotes are held by the receiver rules (receiver.py).

Staleness (staleness.py): a symbol must not be shown as live while the gateway says its feed is
interrupted (``stale`` until ``fresh``), or after the connection was lost, until the symbol is
recovered or snapshotted on a new one (``is_stale``, ``stale_since``; ``StaleEvent``, ``FreshEvent``).

Bars (docs/protocol.md, Bars): ``subscribe_bars`` keeps bar subscriptions apart from the quote
watch set (bars.py holds them and their series); every new WebSocket connection asks for them
again with their backfill. Over SSE the stream carries the bars of one interval (the first one
wanted) and is reopened when they change; the others wait, with an ``ErrorEvent`` BAD_BARS,
until the client is on a WebSocket.

Encodings (docs/protocol.md, Binary encoding): a WebSocket asks for ``wsps.v1.proto`` first and
``wsps.v1.json`` second (``encoding="json"``: JSON only) and reads whichever the gateway chose
(encoding.py); its frames go out in Protobuf once the gateway's first binary frame came. The events
are the same either way. SSE is JSON.

Order books (docs/protocol.md, Order books): ``subscribe_book`` holds each symbol's book at one
depth by the receiver rules (book.py, ``BookReceiver``), checking every checksum; a gap or a
checksum that differs resubscribes that book by itself (``book_resyncs``); a lost or quiet
connection holds every book out of sync (``BookEvent`` with ``sync`` False) until its next
snapshot; every new WebSocket connection asks for them again. Books go over WebSocket only.

Transports: WebSocket first; with ``transport="auto"`` an upgrade the server
answers without upgrading (a proxy stripped it) makes the next attempt an SSE
stream (sse.py), and an SSE attempt nothing answers sends the next one back to
WebSocket. Over SSE the watch set is part of the request, so subscribe(),
unsubscribe() and a token refresh reopen the stream (once per burst).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence, Union

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed as WsClosed
from websockets.exceptions import InvalidHandshake

from .backoff import Retry
from .bars import BarBook, BarSeries, Wanted
from .book import BOOK_DEPTHS, BookReceiver, BookVerdict, HeldBook
from .encoding import ENCODINGS, read_frame, subprotocols, write_frame
from .errors import ConnectionClosed, WspsError
from .events import BarEvent, BarsEvent, BookEvent, ErrorEvent, Event, EventStream, FreshEvent, QuoteEvent, RecoveryEvent, StaleEvent, StatusEvent
from .protocol import (
    AUTH_CLOSE_CODES,
    DEFAULT_BACKFILL,
    MAX_SYMBOLS_PER_REQUEST,
    NO_RECONNECT_CODES,
    PROTOCOL_VERSION,
    ClientOp,
    CloseCode,
    ErrorCode,
    Mode,
    ServerOp,
    Subprotocol,
)
from .receiver import Cursor, Outcome, QuoteReceiver
from .sse import SseRefused, SseStream, stream_url
from .staleness import Staleness

log = logging.getLogger("wsps")

TokenSource = Union[str, Callable[[], Union[str, Awaitable[str]]]]
"""A fixed token, or a callable (sync or async) asked for one before every connection and refresh."""
Callback = Callable[[Event], Union[None, Awaitable[None]]]
TRANSPORTS = ("auto", "websocket", "sse")

# Errors whose `symbols` leave the watch set even when they answer no request of ours.
_DROPS_NAMED = frozenset({ErrorCode.GRANT_REVOKED, ErrorCode.BAD_SYMBOL, ErrorCode.NOT_ENTITLED, ErrorCode.TOO_MANY_SUBSCRIPTIONS})
# Refusals of a bars sub that name the symbols at fault: the rest of the request is asked for again.
_BARS_DROP_NAMED = frozenset({ErrorCode.BAD_SYMBOL.value, ErrorCode.NOT_ENTITLED.value, ErrorCode.DELAYED_ONLY.value})
# Refusals of a book sub that end the whole request (the others name their symbols).
_BOOK_DROP_ALL = frozenset({ErrorCode.TOO_MANY_SUBSCRIPTIONS.value, ErrorCode.BAD_BOOK.value, ErrorCode.BAD_REQUEST.value})


@dataclass(frozen=True)
class BookSubscribed:
    """What ``subscribe_book`` returns: the depth, the symbols the gateway holds at it from the
    call, and those it has no book of (NO_BOOK; no longer wanted)."""

    depth: int
    symbols: list[str]
    no_book: list[str]


@dataclass(frozen=True)
class Delivery:
    """A subscription's delivery (docs/protocol.md, Delivery modes)."""

    mode: str = Mode.MERGE.value
    max_rate: float | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode}
        if self.max_rate is not None:
            out["maxRate"] = self.max_rate
        return out


@dataclass
class _Request:
    op: str
    symbols: list[str]
    future: asyncio.Future[list[str]] | None
    bars: str | None = None
    """A bars request's interval."""
    book: int | None = None
    """A book request's depth."""
    no_book: list[str] | None = None
    """A book sub's symbols refused with NO_BOOK before its ack."""


class Client:
    """A self-healing connection to one of ``urls``.

    Use as ``async with wsps.Client(url) as client:`` (or ``await
    client.connect()`` / ``await client.close()``), then ``await
    client.subscribe([...])`` and either ``async for event in client`` or
    ``client.on(callback)``.
    """

    def __init__(
        self,
        url: str | Sequence[str],
        token: TokenSource | None = None,
        *,
        token_in_header: bool = False,
        transport: str = "auto",
        encoding: str = "auto",
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        restart_jitter: float = 0.5,
        stable: float = 5.0,
        connect_timeout: float = 10.0,
        request_timeout: float = 10.0,
        resync_grace: float = 5.0,
        max_queue: int = 100_000,
        quiet: float = 1.5,
    ) -> None:
        """
        :param url: a gateway's ``ws://host/ws``, or several, tried in turn
        :param token: a JWT, or a (sync or async) callable returning one; asked before every
            connection and before the token expires (a callable is what lets 4001/4002/4003 reconnect)
        :param token_in_header: send the token as ``Authorization: Bearer`` on the upgrade
            (a bad token is then refused with HTTP 401) instead of as the first frame
        :param transport: ``"auto"``: WebSocket, and SSE (``GET /sse`` beside the URL) when an
            upgrade is refused; ``"websocket"`` or ``"sse"`` to use only that one
        :param encoding: a WebSocket's frames: ``"auto"`` asks for Protobuf (``wsps.v1.proto``) first and
            JSON second and reads whichever the gateway chose; ``"json"`` asks for JSON only
        :param initial_backoff: seconds before the first retry (doubles per failure, equal jitter)
        :param max_backoff: cap of the backoff, seconds
        :param restart_jitter: a 1012 (drain) close is retried within this many seconds
        :param stable: a connection live this long resets the backoff
        :param connect_timeout: an attempt without ``hello`` in this many seconds is abandoned
        :param request_timeout: ``subscribe``/``unsubscribe`` wait this long for their ack
        :param resync_grace: deltas of a symbol awaiting its snapshot are dropped quietly this long
        :param max_queue: events an ``async for`` reader may fall behind before it fails with SLOW_CONSUMER
        :param quiet: WebSocket: a connection that received nothing for this many seconds is probed with a
            ping; if nothing arrives within as long again (a frozen gateway), its symbols are told stale
            since its last frame, and fresh at its next frame (0: never)
        """
        self.urls = [url] if isinstance(url, str) else list(url)
        if not self.urls:
            raise TypeError("wsps.Client: url is empty")
        if max_queue < 1:
            raise TypeError("wsps.Client: max_queue must be at least 1")
        if transport not in TRANSPORTS:
            raise TypeError(f"wsps.Client: transport must be one of {TRANSPORTS}, not {transport!r}")
        self._transport = transport
        if encoding not in ENCODINGS:
            raise TypeError(f"wsps.Client: encoding must be one of {ENCODINGS}, not {encoding!r}")
        self._subprotocols = subprotocols(encoding)
        self._binary_out = False
        """The current WebSocket's frames go out in Protobuf: it negotiated wsps.v1.proto and a binary frame came."""
        self._use_sse = transport == "sse"
        self._sse: SseStream | None = None
        self._last_event_id = ""
        self._streamed: list[str] = []
        """SSE: the watch set the current stream was asked for, and its cursors."""
        self._streamed_since: dict[str, Cursor] = {}
        self._streamed_bars: tuple[str, Wanted, list[str]] | None = None
        """SSE: the bars the current stream was asked for (interval, how, symbols)."""
        self._restarting = False
        """SSE: the stream is being reopened for a new watch set or token (not a reconnect)."""
        self._limits: dict[str, Any] = {}
        """The last ``hello``'s limits: a reopened stream asks for no more than maxSubscriptions."""
        self._stream_waiters: list[asyncio.Future[list[str]]] = []
        """SSE: subscribe()/unsubscribe() calls waiting for the reopened stream's ack."""
        self._token = token
        self._token_in_header = token_in_header
        self._connect_timeout = connect_timeout
        self._request_timeout = request_timeout
        self._resync_grace = resync_grace
        self._max_queue = max_queue
        self._retry = Retry(
            self.urls, initial_backoff=initial_backoff, max_backoff=max_backoff, restart_jitter=restart_jitter, stable=stable
        )
        self._receiver = QuoteReceiver()
        self._watch: dict[str, Delivery] = {}
        self._bars = BarBook()
        self._books = BookReceiver()
        self._book_delivery: dict[str, dict[str, Any]] = {}
        """Books wanted with another delivery than merge at full rate: the sub's ``mode``/``maxRate``."""
        self.book_resyncs = 0
        """Books resubscribed by the client itself after a lost update or a checksum mismatch."""
        self._stale = Staleness()
        self._last_frame_at = 0
        """When the last frame arrived (ms since the epoch): a lost connection's symbols are stale from then."""
        self._quiet_after = quiet
        self._is_quiet = False
        """The current connection's probe went unanswered: its symbols are stale until its next frame."""
        self._inflight: dict[int, _Request] = {}
        self._next_id = 1
        self._callbacks: list[Callback] = []
        self._streams: list[EventStream] = []
        self._ws: ClientConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self._refresh_task: asyncio.Task[None] | None = None
        self._live = asyncio.Event()
        self._delay_ms: int | None = None
        self._stopped = True
        self._failure: ConnectionClosed | None = None
        self.hello: dict[str, Any] | None = None
        """The ``hello`` of the current connection (None while not live)."""
        self.url: str = self.urls[0]
        """The URL of the current (or next) attempt."""

    # ---- public API -----------------------------------------------------------

    async def __aenter__(self) -> "Client":
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self, wait: bool = True) -> None:
        """Starts connecting (and staying connected). With ``wait``, returns once live
        (raises ``TimeoutError`` after ``connect_timeout``; the client keeps trying)."""
        if self._stopped:
            self._stopped = False
            self._failure = None
            self._task = asyncio.get_running_loop().create_task(self._run(), name="wsps-client")
        if wait:
            await asyncio.wait_for(self._live.wait(), self._connect_timeout)

    async def close(self) -> None:
        """Closes for good (1000); async iterators end."""
        self._end(None)
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass

    @property
    def live(self) -> bool:
        """True while a connection has said ``hello``."""
        return self._live.is_set()

    @property
    def transport(self) -> str:
        """``"websocket"`` or ``"sse"``: the transport of the current (or next) connection."""
        return "sse" if self._use_sse else "websocket"

    @property
    def symbols(self) -> list[str]:
        """The watch set, in the order added."""
        return list(self._watch)

    @property
    def delay_ms(self) -> int | None:
        """How old the gateway serves delayed quotes (ms; 900000: "delayed 15 min"), once an ack said so; None before."""
        return self._delay_ms

    def quote(self, symbol: str) -> dict[str, Any] | None:
        """The latest full quote held for ``symbol``."""
        return self._receiver.quote(symbol)

    def is_stale(self, symbol: str) -> bool:
        """What is held of ``symbol`` must not be shown as live: the gateway's feed of it is interrupted
        (a ``stale`` frame, until ``fresh``), or the connection was lost and it is not restored on a new one yet."""
        return self._stale.is_stale(symbol)

    def stale_since(self, symbol: str) -> int | None:
        """While ``is_stale(symbol)``: the quote held is from this moment (ms since the epoch) or before; None when fresh."""
        return self._stale.since(symbol)

    def bars(self, symbol: str, interval: str) -> BarSeries | None:
        """The bars held of a bar subscription (closed ones oldest first, and the open one), once its backfill came."""
        return self._bars.series(symbol, interval)

    def book(self, symbol: str) -> HeldBook | None:
        """The order book held (each side best first, at most its depth of levels), None before its snapshot."""
        return self._books.book(symbol)

    def on(self, callback: Callback) -> Callable[[], None]:
        """Calls ``callback(event)`` for every event (a coroutine function's result is scheduled as a task).
        A callback that raises does not break the client. Returns a function that removes it."""
        self._callbacks.append(callback)
        return lambda: self._callbacks.remove(callback) if callback in self._callbacks else None

    def events(self) -> EventStream:
        """A new async iterator over the events from now on (each iterator sees every event)."""
        stream = EventStream(self._max_queue)
        if self._stopped and self._task is None and self._failure is not None:
            stream._end(self._failure)
        self._streams.append(stream)
        return stream

    def __aiter__(self) -> EventStream:
        return self.events()

    async def subscribe(self, symbols: Iterable[str], mode: str = "merge", max_rate: float | None = None) -> list[str]:
        """Adds symbols to the watch set (with this delivery) and, when live, waits for the gateway's ack.

        Returns the connection's subscriptions after it. Raises ``WspsError`` with the gateway's code
        (BAD_SYMBOL, NOT_ENTITLED, BAD_MODE, BAD_RATE, TOO_MANY_SUBSCRIPTIONS, ...): refused symbols
        leave the watch set; the others of the same call are asked for again.
        """
        if mode not in (Mode.MERGE.value, Mode.DISTINCT.value):
            raise WspsError(ErrorCode.BAD_MODE.value, f"mode must be 'merge' or 'distinct', not {mode!r}")
        delivery = Delivery(mode, max_rate)
        wanted = list(dict.fromkeys(symbols))
        for s in wanted:
            self._watch[s] = delivery
        if not self._live.is_set():
            return self.symbols
        if self._sse is not None:
            return await asyncio.wait_for(self._reopen_stream(), self._request_timeout)
        futures = [self._send_request(ClientOp.SUB.value, chunk, delivery, want_answer=True) for chunk in _chunks(wanted)]
        acked: list[str] = []
        for f in futures:
            assert f is not None
            acked = await asyncio.wait_for(f, self._request_timeout)
        return acked

    async def unsubscribe(self, symbols: Iterable[str]) -> None:
        """Removes symbols from the watch set; their quotes stop at once (late frames for them are ignored)."""
        removed = [s for s in dict.fromkeys(symbols) if self._watch.pop(s, None) is not None]
        for s in removed:
            self._receiver.forget(s)
        self._stale.forget(removed)
        if not self._live.is_set() or not removed:
            return
        if self._sse is not None:
            await asyncio.wait_for(self._reopen_stream(), self._request_timeout)
            return
        futures = [self._send_request(ClientOp.UNSUB.value, chunk, None, want_answer=True) for chunk in _chunks(removed)]
        for f in futures:
            assert f is not None
            await asyncio.wait_for(f, self._request_timeout)

    async def subscribe_bars(
        self, symbols: Iterable[str], interval: str, backfill: int = DEFAULT_BACKFILL, delayed: bool | None = None
    ) -> list[str]:
        """Subscribes to live bars of ``interval`` (``"1s"``, ``"1m"``, ``"5m"``) of these symbols, apart
        from their quotes: a ``BarsEvent`` with the backfill (the last ``backfill`` closed bars, 0-500, and
        the open one), then a ``BarEvent`` per update of the open bar and once per bar closed. ``delayed``:
        as a sub's (True: delayed bars; False: real-time only). Every reconnect asks for the backfill again.

        When live, waits for the ack and returns the connection's bar subscriptions of that interval.
        Raises ``WspsError`` (BAD_INTERVAL, BAD_BARS, NOT_ENTITLED, DELAYED_ONLY, TOO_MANY_SUBSCRIPTIONS, ...):
        refused symbols leave the bar subscriptions, the others of the call are asked for again.
        Over SSE the stream is reopened with them (it carries the bars of the first interval wanted;
        those of another wait for a WebSocket connection).
        """
        wanted = list(dict.fromkeys(symbols))
        send = self._bars.watch(wanted, interval, Wanted(backfill, delayed))
        if not self._live.is_set() or not send:
            return self._bars.of(interval)
        if self._sse is not None:
            await asyncio.wait_for(self._reopen_stream(), self._request_timeout)
            return self._bars.of(interval)
        futures = [f for f in self._request_bars(ClientOp.SUB.value, send, interval, want_answer=True) if f is not None]
        acked = self._bars.of(interval)
        for f in futures:
            acked = await asyncio.wait_for(f, self._request_timeout)
        return acked

    async def unsubscribe_bars(self, symbols: Iterable[str], interval: str) -> None:
        """Ends bar subscriptions; their series are forgotten at once (late frames for them are ignored)."""
        removed = [s for s, _ in self._bars.drop(list(dict.fromkeys(symbols)), interval)]
        if not self._live.is_set() or not removed:
            return
        if self._sse is not None:
            await asyncio.wait_for(self._reopen_stream(), self._request_timeout)
            return
        for f in self._request_bars(ClientOp.UNSUB.value, removed, interval, want_answer=True):
            if f is not None:
                await asyncio.wait_for(f, self._request_timeout)

    async def subscribe_book(self, symbols: Iterable[str], depth: int, mode: str = "merge", max_rate: float | None = None) -> BookSubscribed:
        """Subscribes to the order books of these symbols at ``depth`` (one of BOOK_DEPTHS), apart from
        their quotes and bars: a ``BookEvent`` per change of each; ``book(symbol)`` reads it. One depth
        per symbol (a new depth replaces the old one). ``mode``: ``"merge"`` (the changes of a batching
        window in one frame) or ``"distinct"`` (every change its own frame); ``max_rate`` (merge): at most
        that many frames a second, the changes in between merged. When live, waits for the ack. Raises
        ``WspsError`` (BAD_BOOK, TOO_MANY_SUBSCRIPTIONS, ...) when the gateway refused them; those it
        has no book of (NO_BOOK) are in ``no_book`` and no longer wanted.
        """
        if depth not in BOOK_DEPTHS:
            raise WspsError(ErrorCode.BAD_BOOK.value, f"book must be one of {', '.join(map(str, BOOK_DEPTHS))}")
        if mode not in (Mode.MERGE.value, Mode.DISTINCT.value):
            raise WspsError(ErrorCode.BAD_BOOK.value, f"mode must be 'merge' or 'distinct', not {mode!r}")
        if max_rate is not None and (mode == Mode.DISTINCT.value or not 0.1 <= max_rate <= 1000):
            raise WspsError(ErrorCode.BAD_BOOK.value, "max_rate must be from 0.1 to 1000, with mode 'merge'")
        delivery: dict[str, Any] = {"mode": mode} if mode == Mode.DISTINCT.value else {} if max_rate is None else {"maxRate": max_rate}
        wanted = list(dict.fromkeys(symbols))
        moved: dict[int, list[str]] = {}
        send: list[str] = []
        for s in wanted:
            was = self._books.depth_of(s)
            changed = self._book_delivery.get(s, {}) != delivery
            if delivery:
                self._book_delivery[s] = delivery
            else:
                self._book_delivery.pop(s, None)
            if was == depth:
                if changed:
                    send.append(s)  # the gateway moves it to the other delivery (a sub, no unsub)
                continue
            if was is not None:
                moved.setdefault(was, []).append(s)
            self._books.want(s, depth)
            send.append(s)
        if not self._live.is_set() or self._sse is not None or not send:
            return BookSubscribed(depth, wanted, [])
        for old, group in moved.items():
            self._request_book(ClientOp.UNSUB.value, group, old)
        futures = self._request_book(ClientOp.SUB.value, send, depth, want_answer=True)
        requests = [r for r in self._inflight.values() if any(r.future is f for f in futures if f is not None)]
        for f in futures:
            if f is not None:
                await asyncio.wait_for(f, self._request_timeout)
        no_book = [s for r in requests for s in (r.no_book or [])]
        return BookSubscribed(depth, [s for s in wanted if s not in no_book], no_book)

    async def unsubscribe_book(self, symbols: Iterable[str]) -> None:
        """Ends book subscriptions; their books are forgotten at once (late frames are ignored)."""
        by_depth: dict[int, list[str]] = {}
        for s in dict.fromkeys(symbols):
            d = self._books.depth_of(s)
            if d is not None:
                by_depth.setdefault(d, []).append(s)
                self._books.forget(s)
                self._book_delivery.pop(s, None)
        if not self._live.is_set() or self._sse is not None:
            return
        for d, group in by_depth.items():
            for f in self._request_book(ClientOp.UNSUB.value, group, d, want_answer=True):
                if f is not None:
                    await asyncio.wait_for(f, self._request_timeout)

    # ---- connection loop ------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopped:
            self.url = url = self._retry.url
            if not self._restarting:
                self._emit(StatusEvent("connecting", url))
            self._restarting = False
            code: int | None = None
            reason = ""
            try:
                code, reason = await (self._stream_connection(url) if self._use_sse else self._connection(url))
            except asyncio.CancelledError:
                raise
            except WspsError as err:  # no token
                self._emit(ErrorEvent(err))
            except Exception as err:  # refused upgrade (HTTP 503/401), DNS, connection refused, timeout
                reason = f"{type(err).__name__}: {err}"
                log.debug("wsps: connection to %s failed: %s", url, reason)
                self._pick_transport(err)
            finally:
                if self._restarting:
                    self._stale.hand_over()  # not a loss: the next stream's gateway says again what is stale
                else:
                    self._connection_lost()
                self._drop_connection(keep_waiters=self._restarting)
            if self._stopped:
                return
            if self._restarting:
                continue  # the same stream asked for again with the current watch set (or token)
            if code is not None and code in NO_RECONNECT_CODES and not (code in AUTH_CLOSE_CODES and callable(self._token)):
                self._end(ConnectionClosed(code, reason))
                return
            delay = self._retry.next(code)
            self._emit(StatusEvent("reconnecting", self._retry.url, close_code=code, reason=reason, delay=delay))
            await asyncio.sleep(delay)

    async def _connection(self, url: str) -> tuple[int | None, str]:
        """One connection, from the upgrade to its close: returns the close code and reason."""
        token = await self._get_token() if self._token is not None else None
        headers = {"Authorization": f"Bearer {token}"} if token is not None and self._token_in_header else None
        ws = await asyncio.wait_for(
            connect(url, additional_headers=headers, open_timeout=None, max_size=None, subprotocols=self._subprotocols),  # type: ignore[arg-type]
            self._connect_timeout,
        )
        self._ws = ws
        self._binary_out = False
        try:
            if token is not None and not self._token_in_header:
                # Browsers cannot set headers, and the JS client does the same: the token is the first frame.
                await ws.send(self._frame({"op": ClientOp.AUTH.value, "token": token}))
            # Frames before hello are read too: a rejected token is an error frame, then a 4001 close.
            await asyncio.wait_for(self._until_hello(ws), self._connect_timeout)
            probe = asyncio.get_running_loop().create_task(self._probe_quiet(ws)) if self._quiet_after > 0 else None
            try:
                async for data in ws:
                    self._on_message(ws, data)
            finally:
                if probe is not None:
                    probe.cancel()
        except WsClosed:
            pass
        except asyncio.TimeoutError:
            await ws.close()
            return None, "no hello from the server"
        await ws.wait_closed()
        return ws.close_code, ws.close_reason or ""

    async def _probe_quiet(self, ws: ClientConnection) -> None:
        """A gateway that freezes (a long GC pause, a stopped or starved process) keeps its socket open
        and says nothing: its prices would look live until the connection is found dead. A connection
        that received nothing for ``quiet`` seconds is pinged; nothing within as long again and its
        symbols are stale since its last frame (``_on_text`` makes them fresh at the next one)."""
        after = self._quiet_after
        while True:
            idle = (_now_ms() - self._last_frame_at) / 1000
            if idle < after or not (self._watch or self._books.symbols):
                await asyncio.sleep(max(after - idle, after / 4))
                continue
            sent = _now_ms()
            rid = self._next_id
            self._next_id += 1
            try:
                await ws.send(self._frame({"op": ClientOp.PING.value, "id": rid}))
            except WsClosed:
                return
            await asyncio.sleep(after)
            if self._last_frame_at < sent and not self._is_quiet:
                self._is_quiet = True
                flipped = self._stale.quiet(self.symbols, self._last_frame_at)
                if flipped:
                    self._emit(StaleEvent(flipped, self._last_frame_at))
                self._books_interrupted(ask=True)

    async def _until_hello(self, ws: ClientConnection) -> None:
        while not self._live.is_set():
            self._on_message(ws, await ws.recv())

    def _connection_lost(self) -> None:
        """A live connection is gone (any close, 1006 included): every watched symbol is stale from the
        last frame received until it is restored on a new connection. Call before ``_drop_connection``."""
        if not self._live.is_set():
            return
        flipped = self._stale.lost(self.symbols, self._last_frame_at)
        if flipped:
            self._emit(StaleEvent(flipped, self._last_frame_at))
        self._books_interrupted()

    def _books_interrupted(self, ask: bool = False) -> None:
        """The link is lost or quiet: no book held may be shown as live (held out of sync until its
        next snapshot). A quiet link that may still hold is asked for the snapshots at once (``ask``);
        a lost one asks on reconnecting."""
        now = time.monotonic()
        for symbol in self._books.interrupt():
            book = self._books.book(symbol)
            assert book is not None
            self._emit(BookEvent(symbol, book, False))
            if ask:
                self._ask_book_again(symbol, book.depth, now)

    def _ask_book_again(self, symbol: str, depth: int, now: float) -> None:
        """Starts a book over: ``unsub`` + ``sub`` (a fresh snapshot); its ``levels`` are dropped until it comes."""
        self._books.resync(symbol, now)
        self._request_book(ClientOp.UNSUB.value, [symbol], depth)
        self._request_book(ClientOp.SUB.value, [symbol], depth)

    def _drop_connection(self, keep_waiters: bool = False) -> None:
        """Forgets the current socket and what was tied to it; keeps the watch set and the held quotes
        (and, for a stream reopened on purpose, the calls waiting for the next stream's ack)."""
        self._ws = None
        self._sse = None
        self._is_quiet = False
        if not keep_waiters:
            self._settle_waiters(self.symbols)
        self._live.clear()
        self.hello = None
        for req in self._inflight.values():
            if req.future is not None and not req.future.done():
                # Not an error: the next connection asks again for the whole watch set.
                req.future.set_result(self.symbols if req.bars is None else self._bars.of(req.bars))
        self._inflight.clear()
        if self._refresh_task is not None:
            self._refresh_task.cancel()
            self._refresh_task = None

    def _end(self, failure: ConnectionClosed | None) -> None:
        """Stops for good; ``failure`` is what iterators raise (None: they just end)."""
        self._stopped = True
        self._failure = failure
        ws = self._ws
        if ws is not None:
            asyncio.get_running_loop().create_task(ws.close(CloseCode.NORMAL.value))
        self._connection_lost()
        self._drop_connection()
        self._emit(StatusEvent("closed", self.url, close_code=failure.close_code if failure else CloseCode.NORMAL.value,
                               reason=failure.reason if failure else "client closed"))
        for stream in self._streams:
            stream._end(failure)
        self._streams.clear()

    async def _get_token(self) -> str:
        source = self._token
        try:
            token = source() if callable(source) else source
            if inspect.isawaitable(token):
                token = await token
        except Exception as err:
            raise WspsError(ErrorCode.TOKEN_FAILED.value, f"token() failed: {err}") from err
        return str(token)

    def _schedule_refresh(self, expires_in_ms: Any) -> None:
        """Asks the token callable for a new token a bit before ``expiresInMs`` runs out."""
        if not callable(self._token) or not isinstance(expires_in_ms, (int, float)):
            return
        if self._refresh_task is not None:
            self._refresh_task.cancel()
        lead = min(30_000, expires_in_ms / 4)
        self._refresh_task = asyncio.get_running_loop().create_task(self._refresh(max(0.0, (expires_in_ms - lead) / 1000)))

    async def _refresh(self, delay: float) -> None:
        await asyncio.sleep(delay)
        if self._sse is not None:
            # The token is part of the stream's request: a new stream asks for a new one.
            self._restart_stream()
            return
        while self._live.is_set():
            try:
                token = await self._get_token()
            except WspsError as err:
                # The connection lives until exp (then 4002 and a reconnect); try again before that.
                self._emit(ErrorEvent(err))
                await asyncio.sleep(1)
                continue
            self._send_request(ClientOp.AUTH.value, [], None, extra={"token": token})
            return

    # ---- SSE --------------------------------------------------------------------

    def _pick_transport(self, err: Exception) -> None:
        """auto: an upgrade answered without upgrading makes the next attempt SSE; a stream that
        nothing (or something that is not the gateway) answered makes it WebSocket again."""
        if self._transport != "auto":
            return
        if not self._use_sse and isinstance(err, InvalidHandshake):
            self._use_sse = True
        elif self._use_sse and not (isinstance(err, SseRefused) and err.error is not None):
            self._use_sse = False

    async def _stream_connection(self, url: str) -> tuple[int | None, str]:
        """One SSE stream for the watch set (one delivery: distinct when every symbol wants it),
        resuming from the held cursors: returns its close code and reason."""
        token = await self._get_token() if self._token is not None else None
        max_subs = self._limits.get("maxSubscriptions")
        self._streamed = self.symbols if not isinstance(max_subs, int) else self.symbols[:max_subs]
        self._streamed_since = self._cursors(self._streamed)
        distinct = bool(self._streamed) and all(self._watch[s].mode == Mode.DISTINCT.value for s in self._streamed)
        self._streamed_bars = self._bars.for_stream()
        target = stream_url(url, self._streamed, Mode.DISTINCT.value if distinct else Mode.MERGE.value, self._streamed_since,
                            self._streamed_bars)
        try:
            stream = await asyncio.wait_for(SseStream.open(target, token=token, last_event_id=self._last_event_id), self._connect_timeout)
        except SseRefused as refused:
            if refused.error is None:
                raise
            # The gateway refused the request itself: the error frame it answered with, as on a WebSocket.
            self._emit(ErrorEvent(refused.error))
            streamed_bars = self._streamed_bars
            if refused.error.bars is not None and streamed_bars is not None and refused.error.bars == streamed_bars[0]:
                # Refused for its bars (the error names their interval): the named series leave, or all it carried.
                named = refused.error.symbols if refused.error.code in _BARS_DROP_NAMED and refused.error.symbols else streamed_bars[2]
                self._bars.drop(named, streamed_bars[0])
            elif refused.error.symbols and refused.error.code in _DROPS_NAMED:
                self._reject(refused.error.symbols, refused.error)
            self._settle_waiters(refused.error)
            return refused.close_code, str(refused)
        self._sse = stream
        try:
            async for data in stream.frames(self._idle_timeout):
                self._on_text(data)
        finally:
            self._last_event_id = stream.last_event_id
            await stream.close()
        if not self._live.is_set() and stream.close_reason.startswith("no event"):
            return None, "no hello from the server"
        return stream.close_code, stream.close_reason

    def _idle_timeout(self) -> float:
        """Before hello: the connect timeout; after: nothing at all for 2 x heartbeatMs means the stream is dead."""
        heartbeat = (self.hello or {}).get("heartbeatMs")
        return 2 * heartbeat / 1000 if isinstance(heartbeat, (int, float)) and heartbeat > 0 else self._connect_timeout

    async def _reopen_stream(self) -> list[str]:
        """Reopens the stream with the current watch set; returns the new stream's ack (its symbols)."""
        future: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self._stream_waiters.append(future)
        self._restart_stream()
        return await future

    def _restart_stream(self) -> None:
        """Closes the stream so the loop opens the next one at once (changes in one turn share it)."""
        if self._restarting or self._sse is None:
            return
        self._restarting = True
        stream = self._sse
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(stream.close()))

    def _settle_waiters(self, outcome: list[str] | WspsError) -> None:
        waiters, self._stream_waiters = self._stream_waiters, []
        for f in waiters:
            if f.done():
                continue
            if isinstance(outcome, WspsError):
                f.set_exception(outcome)
            else:
                f.set_result(outcome)

    # ---- frames -----------------------------------------------------------------

    def _frame(self, frame: dict[str, Any]) -> str | bytes:
        """A client frame in the current WebSocket's encoding (encoding.py)."""
        return write_frame(frame, self._binary_out)

    def _on_message(self, ws: ClientConnection, data: str | bytes) -> None:
        """A WebSocket message: a binary one on a wsps.v1.proto socket shows the gateway speaks Protobuf."""
        if not self._binary_out and not isinstance(data, str) and ws.subprotocol == Subprotocol.PROTO.value:
            self._binary_out = True
        self._on_text(data)

    def _on_text(self, text: str | bytes) -> None:
        self._last_frame_at = _now_ms()
        if self._is_quiet:
            self._is_quiet = False
            self._fresh(self._stale.answered())
        try:
            msg = read_frame(text)
            if not isinstance(msg, dict):
                raise ValueError("not an object")
            op = msg.get("op")
            if op == ServerOp.HELLO.value:
                self._on_hello(msg)
            elif op == ServerOp.QUOTES.value:
                self._on_deltas(msg["quotes"])
            elif op == ServerOp.SNAP.value:
                self._on_snap(msg["quotes"], msg.get("recovered") is False)
            elif op == ServerOp.ACK.value:
                self._on_ack(msg)
            elif op == ServerOp.ERROR.value:
                self._on_error(msg)
            elif op == ServerOp.BARS.value:
                series = self._bars.backfill(msg)
                if series is not None:
                    self._emit(BarsEvent(series.symbol, series.interval, series, series.delayed))
            elif op == ServerOp.BAR.value:
                series = self._bars.bar(msg)
                if series is not None:
                    self._emit(BarEvent(series.symbol, series.interval, msg["bar"], msg.get("closed") is True, series, series.delayed))
            elif op in (ServerOp.BOOK.value, ServerOp.LEVELS.value):
                self._on_book(msg)
            elif op == ServerOp.STALE.value:
                self._on_stale(msg)
            elif op == ServerOp.FRESH.value:
                self._fresh(self._stale.server_fresh(self._watched(msg["symbols"])))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            # A malformed frame is reported with a code; the connection stays.
            self._emit(ErrorEvent(WspsError(ErrorCode.BAD_SERVER_FRAME.value, f"malformed frame from the server: {err}")))

    def _on_book(self, msg: dict[str, Any]) -> None:
        """A ``book`` or ``levels`` frame by the receiver rules; a gap or a checksum that differs
        starts the book over (``unsub`` + ``sub``: a fresh snapshot), ``levels`` dropped meanwhile."""
        verdict = self._books.frame(msg)
        symbol = msg["symbol"]
        if verdict is BookVerdict.IGNORED:
            return
        if verdict in (BookVerdict.APPLIED, BookVerdict.OUT_OF_SYNC):
            book = self._books.book(symbol)
            assert book is not None
            self._emit(BookEvent(symbol, book, msg["op"] == ServerOp.BOOK.value))
            return
        now = time.monotonic()
        since = self._books.resyncing_since(symbol)
        if verdict is BookVerdict.RESYNCING and since is not None and now - since < self._resync_grace:
            return
        depth = self._books.depth_of(symbol)
        assert depth is not None
        log.info("wsps: book %s %s (seq %s): resubscribing", symbol, verdict.value, msg.get("seq"))
        self.book_resyncs += 1
        self._ask_book_again(symbol, depth, now)

    def _on_stale(self, msg: dict[str, Any]) -> None:
        """The gateway's feed of these symbols is interrupted: what is held of them is from ``since`` or
        before. A frame without a ``since`` is taken as news of now (what is held is older, whatever it is)."""
        since = msg.get("since")
        at = int(since) if isinstance(since, (int, float)) and not isinstance(since, bool) else _now_ms()
        flipped = self._stale.server_stale(self._watched(msg["symbols"]), at)
        if flipped:
            self._emit(StaleEvent(flipped, at))

    def _watched(self, symbols: Any) -> list[str]:
        """The watched ones of a frame's ``symbols`` (late frames for others are ignored)."""
        if not isinstance(symbols, list):
            raise TypeError("symbols is not a list")
        return [s for s in symbols if isinstance(s, str) and s in self._watch]

    def _fresh(self, symbols: list[str]) -> None:
        if symbols:
            self._emit(FreshEvent(symbols))

    def _on_hello(self, hello: dict[str, Any]) -> None:
        if hello.get("v") != PROTOCOL_VERSION:
            self._emit(ErrorEvent(WspsError(ErrorCode.BAD_SERVER_FRAME.value,
                                            f"server speaks protocol v{hello.get('v')}, this client v{PROTOCOL_VERSION}")))
        self.hello = hello
        self._limits = hello.get("limits") or {}
        self._live.set()
        self._retry.live()
        self._emit(StatusEvent("live", self.url, node=hello.get("node")))
        self._schedule_refresh(hello.get("expiresInMs"))
        self._resubscribe_all()

    def _resubscribe_all(self) -> None:
        """A new connection holds nothing: ask for the whole watch set again, resuming from held cursors."""
        limits = (self.hello or {}).get("limits") or {}
        max_subs = limits.get("maxSubscriptions")
        keep = self.symbols if not isinstance(max_subs, int) else self.symbols[:max_subs]
        over = self.symbols[len(keep):]
        if over:
            self._reject(over, WspsError(ErrorCode.TOO_MANY_SUBSCRIPTIONS.value, f"this gateway allows {max_subs} subscriptions"))
        since = self._streamed_since if self._sse is not None else self._cursors(keep)
        now = time.monotonic()
        for s in keep:
            # A resumed symbol's replay continues what is held: its deltas must apply, not wait for a snapshot.
            if s not in since:
                self._receiver.resync(s, now)
        if self._sse is None:
            self._request_sub(keep, since)
            # Every bar series starts over from its backfill.
            for interval, wanted, group in self._bars.requests():
                self._request_bars(ClientOp.SUB.value, group, interval, wanted)
            # Books are not resumed: each comes again as a fresh snapshot.
            for depth, group in self._books.by_depth().items():
                self._request_book(ClientOp.SUB.value, group, depth)
            return
        if self._books.symbols:
            self._emit(ErrorEvent(WspsError(ErrorCode.BAD_BOOK.value, "order books go over WebSocket only; they start once the client is on one")))
        bars = self._bars.for_stream()
        if set(keep) != set(self._streamed) or not _same_stream_bars(bars, self._streamed_bars):
            # The stream carries the watch set of the moment it was asked for; it changed meanwhile.
            self._restart_stream()
        elif bars is not None and len(bars[2]) < len(self._bars):
            self._bars_over_sse()

    def _cursors(self, symbols: Iterable[str]) -> dict[str, Cursor]:
        out: dict[str, Cursor] = {}
        for s in symbols:
            c = self._receiver.cursor(s) if self._receiver.current(s) else None
            if c is not None:
                out[s] = c
        return out

    def _on_snap(self, quotes: list[dict[str, Any]], lost: bool) -> None:
        snapped: list[str] = []
        for q in quotes:
            symbol = q["symbol"]
            if symbol not in self._watch:
                continue  # a late answer for a symbol since removed
            if lost:
                self._emit(RecoveryEvent(symbol, False))
            held = self._receiver.snap(q)
            snapped.append(symbol)
            self._emit(QuoteEvent(symbol, held, True, held.get("delayed") is True))
        # A snapshot on the new connection restores what a lost one left stale.
        self._fresh(self._stale.restored(snapped))

    def _on_deltas(self, deltas: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        gaps: list[str] = []
        for d in deltas:
            symbol = d["symbol"]
            if symbol not in self._watch or symbol in gaps:
                continue
            outcome = self._receiver.delta(d)
            if outcome is Outcome.APPLIED:
                quote = self._receiver.quote(symbol) or {}
                self._emit(QuoteEvent(symbol, quote, False, quote.get("delayed") is True))
                continue
            # Receiver rule 3. Right after a (re)subscribe this is expected until the snapshot arrives.
            since = self._receiver.resyncing_since(symbol)
            if outcome is Outcome.RESYNCING and since is not None and now - since < self._resync_grace:
                continue
            log.info("wsps: %s %s (held %s, delta seq %s base %s): resubscribing", symbol, outcome.value,
                     self._receiver.seq(symbol), d.get("seq"), d.get("base"))
            gaps.append(symbol)
        if not gaps:
            return
        for s in gaps:
            self._receiver.resync(s, now)
        # unsub + sub: a plain sub of a held symbol is a no-op and sends no snapshot.
        for chunk in _chunks(gaps):
            self._send_request(ClientOp.UNSUB.value, chunk, None)
        self._request_sub(gaps, {})

    def _on_ack(self, ack: dict[str, Any]) -> None:
        if isinstance(ack.get("delayMs"), int):
            self._delay_ms = ack["delayMs"]
        if isinstance(ack.get("book"), int) and not isinstance(ack.get("book"), bool):
            # The answer to a book request: the connection's book subscriptions of its depth.
            kreq = self._inflight.pop(ack["id"], None) if isinstance(ack.get("id"), int) else None
            if kreq is not None and kreq.future is not None and not kreq.future.done():
                kreq.future.set_result(list(ack.get("symbols") or []))
            return
        if isinstance(ack.get("bars"), str):
            # The answer to a bars request: the connection's bar subscriptions of its interval.
            breq = self._inflight.pop(ack["id"], None) if isinstance(ack.get("id"), int) else None
            if breq is not None and breq.future is not None and not breq.future.done():
                breq.future.set_result(list(ack.get("symbols") or []))
            return
        recovered = ack.get("recovered")
        if isinstance(recovered, dict):
            resumed: list[str] = []
            for symbol, ok in recovered.items():
                if symbol in self._watch:
                    self._emit(RecoveryEvent(symbol, ok is True))
                    if ok is True:
                        resumed.append(symbol)
            # Nothing was lost on them: what a lost connection left stale is live again.
            self._fresh(self._stale.restored(resumed))
        if self._sse is not None and "id" not in ack and not self._restarting:
            self._settle_waiters(list(ack.get("symbols") or []))  # the stream's own ack: its request is answered
        req = self._inflight.pop(ack["id"], None) if isinstance(ack.get("id"), int) else None
        if req is not None and req.op == ClientOp.AUTH.value:
            self._schedule_refresh(ack.get("expiresInMs"))
        if req is not None and req.future is not None and not req.future.done():
            req.future.set_result(list(ack.get("symbols") or []))

    def _on_error(self, msg: dict[str, Any]) -> None:
        error = WspsError.from_frame(msg)
        rid = msg.get("id") if isinstance(msg.get("id"), int) else None
        if rid is not None and error.code == ErrorCode.NO_BOOK.value and rid in self._inflight:
            # The others of the request are subscribed; its ack follows.
            self._emit(ErrorEvent(error))
            self._no_book(self._inflight[rid], error.symbols)
            return
        req = self._inflight.pop(rid, None) if rid is not None else None
        self._emit(ErrorEvent(error))
        if req is not None and req.book is not None:
            if req.op == ClientOp.SUB.value and error.code in _BOOK_DROP_ALL:
                for s in req.symbols:
                    if self._books.depth_of(s) == req.book:
                        self._books.forget(s)
            elif req.op == ClientOp.SUB.value and error.code != ErrorCode.DRAINING.value and error.symbols:
                for s in error.symbols:
                    self._books.forget(s)
                rest = [s for s in req.symbols if s not in error.symbols and self._books.depth_of(s) == req.book]
                if rest:
                    self._request_book(ClientOp.SUB.value, rest, req.book)
        elif req is not None and req.op == ClientOp.SUB.value and req.bars is not None:
            if error.code in _BARS_DROP_NAMED:
                bad = error.symbols or req.symbols
                self._bars.drop(bad, req.bars)
                rest = [s for s in req.symbols if self._bars.wants(s, req.bars)]
                for interval, wanted, group in self._bars.requests(rest, req.bars):
                    self._request_bars(ClientOp.SUB.value, group, interval, wanted)
            elif error.code != ErrorCode.DRAINING.value:
                self._bars.drop(req.symbols, req.bars)
        elif req is not None and req.op == ClientOp.SUB.value:
            if error.code in (ErrorCode.BAD_SYMBOL.value, ErrorCode.NOT_ENTITLED.value):
                # The whole request was refused: drop the named symbols, ask again for the others.
                bad = error.symbols or req.symbols
                self._reject(bad, error)
                rest = [s for s in req.symbols if s in self._watch]
                if rest:
                    self._request_sub(rest, {})
            elif error.code != ErrorCode.DRAINING.value:
                self._reject(req.symbols, error)
        elif req is None and error.symbols and error.code in _DROPS_NAMED:
            self._reject(error.symbols, error)
            if error.code == ErrorCode.GRANT_REVOKED.value:
                self._bars.drop(error.symbols, None)  # a revoked grant ends the symbol's bars and book too
                for s in error.symbols:
                    self._books.forget(s)
        if req is not None and req.future is not None and not req.future.done():
            req.future.set_exception(error)

    def _no_book(self, req: _Request, symbols: list[str]) -> None:
        """NO_BOOK: these of a book sub have no book: no longer wanted."""
        named = [s for s in (symbols or req.symbols) if self._books.depth_of(s) == req.book]
        for s in named:
            self._books.forget(s)
        req.no_book = (req.no_book or []) + named

    def _reject(self, symbols: Iterable[str], error: WspsError) -> None:
        for s in symbols:
            if self._watch.pop(s, None) is not None:
                self._receiver.forget(s)
                self._stale.forget([s])

    # ---- sending ------------------------------------------------------------------

    def _request_sub(self, symbols: Sequence[str], since: Mapping[str, Cursor]) -> None:
        """``sub`` requests for ``symbols``, one per delivery, at most 100 symbols each, with their cursors."""
        groups: dict[Delivery, list[str]] = {}
        for s in symbols:
            delivery = self._watch.get(s)
            if delivery is not None:
                groups.setdefault(delivery, []).append(s)
        for delivery, group in groups.items():
            for chunk in _chunks(group):
                cursors = {s: since[s].to_wire() for s in chunk if s in since}
                self._send_request(ClientOp.SUB.value, chunk, delivery, extra={"since": cursors} if cursors else None)

    def _request_bars(
        self, op: str, symbols: Sequence[str], interval: str, wanted: Wanted | None = None, *, want_answer: bool = False
    ) -> list[asyncio.Future[list[str]] | None]:
        """Bars ``sub`` (with its backfill and timeline) or ``unsub`` requests, at most 100 symbols each."""
        if wanted is None and op == ClientOp.SUB.value:
            return [f for i, w, group in self._bars.requests(symbols, interval)
                    for f in self._request_bars(op, group, i, w, want_answer=want_answer)]
        extra: dict[str, Any] = {"bars": interval}
        if wanted is not None:
            extra["backfill"] = wanted.backfill
            if wanted.delayed is not None:
                extra["delayed"] = wanted.delayed
        return [self._send_request(op, chunk, None, want_answer=want_answer, extra=extra, bars=interval) for chunk in _chunks(list(symbols))]

    def _request_book(self, op: str, symbols: Sequence[str], depth: int, *, want_answer: bool = False) -> list[asyncio.Future[list[str]] | None]:
        """Book ``sub`` or ``unsub`` requests at ``depth``, at most 100 symbols each; a sub says how
        each is wanted (its mode and maxRate)."""
        if self._sse is not None:
            return []
        groups: list[tuple[list[str], dict[str, Any]]] = [(list(symbols), {"book": depth})]
        if op == ClientOp.SUB.value:
            by: dict[str, tuple[list[str], dict[str, Any]]] = {}
            for s in symbols:
                d = self._book_delivery.get(s, {})
                by.setdefault(repr(sorted(d.items())), ([], {"book": depth, **d}))[0].append(s)
            groups = list(by.values())
        return [self._send_request(op, chunk, None, want_answer=want_answer, extra=extra, book=depth)
                for group, extra in groups for chunk in _chunks(group)]

    def _bars_over_sse(self) -> None:
        self._emit(ErrorEvent(WspsError(ErrorCode.BAD_BARS.value,
                                        "an SSE stream carries the bars of one interval; the others start once the client is on a WebSocket")))

    def _send_request(
        self, op: str, symbols: list[str], delivery: Delivery | None, *, want_answer: bool = False,
        extra: dict[str, Any] | None = None, bars: str | None = None, book: int | None = None,
    ) -> asyncio.Future[list[str]] | None:
        ws = self._ws
        future: asyncio.Future[list[str]] | None = asyncio.get_running_loop().create_future() if want_answer else None
        if self._sse is not None and op != ClientOp.AUTH.value:
            # A gap's resubscribe over SSE: a new stream for the watch set (a snapshot for the gap).
            self._restart_stream()
        if ws is None:
            if future is not None:
                future.set_result(self.symbols if bars is None else self._bars.of(bars))
            return future
        rid = self._next_id
        self._next_id += 1
        self._inflight[rid] = _Request(op, symbols, future, bars, book)
        frame: dict[str, Any] = {"op": op, "id": rid}
        if op != ClientOp.AUTH.value:
            frame["symbols"] = symbols
        if delivery is not None:
            frame.update(delivery.to_wire())
        if extra:
            frame.update(extra)
        asyncio.get_running_loop().create_task(self._send(ws, self._frame(frame)))
        return future

    @staticmethod
    async def _send(ws: ClientConnection, text: str | bytes) -> None:
        try:
            await ws.send(text)
        except WsClosed:
            pass  # the read loop sees the close and reconnects

    # ---- events ---------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        for cb in list(self._callbacks):
            try:
                result = cb(event)
                if inspect.isawaitable(result):
                    asyncio.ensure_future(result)
            except Exception:
                log.exception("wsps: an event callback raised")
        for stream in self._streams:
            stream._put(event)


def _same_stream_bars(a: tuple[str, Wanted, list[str]] | None, b: tuple[str, Wanted, list[str]] | None) -> bool:
    """The same series (a backfill alone asks for no new one, as over WebSocket)."""
    if a is None or b is None:
        return a is b
    return a[0] == b[0] and a[1].delayed == b[1].delayed and set(a[2]) == set(b[2])


def _now_ms() -> int:
    return int(time.time() * 1000)


def _chunks(symbols: Sequence[str]) -> list[list[str]]:
    return [list(symbols[i:i + MAX_SYMBOLS_PER_REQUEST]) for i in range(0, len(symbols), MAX_SYMBOLS_PER_REQUEST)]
