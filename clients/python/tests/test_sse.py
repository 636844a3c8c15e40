"""The SSE transport against real gateways (tests/stack.js): a stream for the watch set,
reopened on subscribe/unsubscribe, a refused symbol, the fallback after an upgrade a
proxy strips, resume with ``since`` through a drain, a token refreshed by a new stream,
and bars on the stream."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

import pytest

import wsps
from conftest import Stack, quotes_of, token, wait_until
from wsps.bars import Wanted
from wsps.sse import sse_url_for, stream_url



def test_the_stream_url_beside_the_websocket_url() -> None:
    assert sse_url_for("ws://127.0.0.1:8081/ws") == "http://127.0.0.1:8081/sse"
    assert sse_url_for("wss://quotes.example.com/feed/ws?x=1") == "https://quotes.example.com/feed/sse"
    since = {"AAPL": wsps.Cursor(1042, "hohrttbiv1")}
    assert stream_url("ws://h/ws", ["AAPL", "MSFT"], "distinct", since) == \
        "http://h/sse?symbols=AAPL,MSFT&mode=distinct&since=AAPL:1042:hohrttbiv1"
    assert stream_url("ws://h/ws", ["BRK.B"], "merge", {}) == "http://h/sse?symbols=BRK.B"
    bars = ("1m", Wanted(50, False), ["AAPL", "MSFT"])
    assert stream_url("ws://h/ws", [], "merge", {}, bars) == \
        "http://h/sse?symbols=&bars=1m&barSymbols=AAPL,MSFT&backfill=50&barDelayed=false"


async def test_sse_streams_and_subscribe_unsubscribe_reopen_the_stream(stack: Stack) -> None:
    events: list[wsps.Event] = []
    client = wsps.Client(stack.gateways[0], transport="sse")
    client.on(events.append)
    await client.connect()
    try:
        assert client.transport == "sse"
        assert set(await client.subscribe(["AAPL", "MSFT"])) == {"AAPL", "MSFT"}
        await wait_until(lambda: len(quotes_of(events, "AAPL")) >= 3 and len(quotes_of(events, "MSFT")) >= 3)
        assert quotes_of(events, "AAPL")[0].snapshot

        await client.unsubscribe(["MSFT"])
        after = len(quotes_of(events, "MSFT"))
        n = len(quotes_of(events, "AAPL"))
        await wait_until(lambda: len(quotes_of(events, "AAPL")) >= n + 5)
        assert len(quotes_of(events, "MSFT")) == after  # the new stream does not carry it
        assert client.symbols == ["AAPL"]

        with pytest.raises(wsps.WspsError) as info:
            await client.subscribe(["AAPL", "not a symbol"])
        assert info.value.code == wsps.ErrorCode.BAD_SYMBOL
        assert client.symbols == ["AAPL"]
        await wait_until(lambda: client.live)
        n = len(quotes_of(events, "AAPL"))
        await wait_until(lambda: len(quotes_of(events, "AAPL")) > n)  # streaming again without it
        seqs = [q.quote["seq"] for q in quotes_of(events, "AAPL")]
        assert seqs == sorted(seqs), seqs
    finally:
        await client.close()


async def strip_upgrades(gateway: str) -> tuple[str, asyncio.AbstractServer]:
    """A proxy in front of ``gateway`` that refuses every WebSocket upgrade (as some proxies
    do) and passes plain requests such as ``GET /sse`` through. Returns its ws:// URL."""
    target = urlsplit(gateway)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if b"upgrade: websocket" in head.lower():
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(target.hostname, target.port)
        up_writer.write(head)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return f"ws://127.0.0.1:{port}/ws", server


async def test_auto_falls_back_to_sse_when_a_proxy_refuses_the_upgrade(stack: Stack) -> None:
    url, proxy = await strip_upgrades(stack.gateways[0])
    events: list[wsps.Event] = []
    client = wsps.Client(url, initial_backoff=0.1)
    client.on(events.append)
    try:
        assert client.transport == "websocket"
        await client.connect()
        assert client.transport == "sse"
        await client.subscribe(["AAPL"])
        await wait_until(lambda: len(quotes_of(events, "AAPL")) >= 2)
    finally:
        await client.close()
        proxy.close()


async def test_a_distinct_stream_resumes_through_a_drain_without_losing_a_tick(stack: Stack) -> None:
    symbols = ["AAPL", "MSFT"]
    events: list[wsps.Event] = []
    client = wsps.Client(stack.gateways, transport="sse", restart_jitter=0.2)
    client.on(events.append)
    await client.connect()
    try:
        await client.subscribe(symbols, mode="distinct")
        await wait_until(lambda: all(len(quotes_of(events, s)) >= 5 for s in symbols))
        assert client.hello is not None
        first_node = client.hello["node"]
        await asyncio.to_thread(stack.terminate_gateway, 0)
        before = {s: len(quotes_of(events, s)) for s in symbols}
        await wait_until(lambda: client.live and client.hello is not None and client.hello["node"] != first_node, 30)
        await wait_until(lambda: all(len(quotes_of(events, s)) >= before[s] + 10 for s in symbols), 30)

        statuses = [e for e in events if isinstance(e, wsps.StatusEvent)]
        assert any(e.state == "reconnecting" and e.close_code == 1012 for e in statuses), statuses
        recoveries = [e for e in events if isinstance(e, wsps.RecoveryEvent)]
        assert sorted(r.symbol for r in recoveries) == sorted(symbols) and all(r.recovered for r in recoveries), recoveries
        for s in symbols:
            seqs = [q.quote["seq"] for q in quotes_of(events, s)]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"{s}: ticks lost or repeated: {seqs}"
    finally:
        await client.close()


async def test_over_sse_a_token_is_refreshed_by_a_new_stream_before_it_expires(auth_stack: Stack) -> None:
    minted: list[float] = []

    def source() -> str:
        minted.append(time.monotonic())
        return token(3, sub="sse")

    events: list[wsps.Event] = []
    client = wsps.Client(auth_stack.gateways[0], token=source, transport="sse")
    client.on(events.append)
    await client.connect()
    try:
        await client.subscribe(["AAPL"])
        await wait_until(lambda: time.monotonic() > minted[0] + 5, 15)
        n = len(quotes_of(events, "AAPL"))
        await wait_until(lambda: len(quotes_of(events, "AAPL")) > n)
        assert len(minted) >= 2, minted
        closes = [e.close_code for e in events if isinstance(e, wsps.StatusEvent) and e.state == "reconnecting"]
        assert 4002 not in closes, closes  # reopened before exp, never ended by it
        assert not [e for e in events if isinstance(e, wsps.ErrorEvent)]
    finally:
        await client.close()


async def test_over_sse_bars_come_on_the_stream_and_a_refused_series_leaves_the_rest(auth_stack: Stack) -> None:
    events: list[wsps.Event] = []
    client = wsps.Client(auth_stack.gateways[0], token=lambda: token(600, symbols=["AAPL", "MSFT"]), transport="sse")
    client.on(events.append)

    def closed(symbol: str) -> int:
        return sum(1 for e in events if isinstance(e, wsps.BarEvent) and e.symbol == symbol and e.closed)

    await client.connect()
    try:
        await client.subscribe(["AAPL"])
        assert await asyncio.wait_for(client.subscribe_bars(["AAPL", "MSFT"], "1s", backfill=5), 15) == ["AAPL", "MSFT"]
        await wait_until(lambda: closed("AAPL") >= 2 and closed("MSFT") >= 1)
        series = client.bars("AAPL", "1s")
        assert series is not None and not series.delayed
        starts = [b["t"] for b in series.bars]
        assert starts == sorted(set(starts)), starts
        assert [e for e in events if isinstance(e, wsps.BarsEvent) and e.symbol == "AAPL"], "a backfill first"
        assert len(quotes_of(events, "AAPL")) >= 1, "the quotes on the same stream"

        # Not granted: the stream is refused for it (naming the interval) and reopened without it.
        with pytest.raises(wsps.WspsError) as info:
            await asyncio.wait_for(client.subscribe_bars(["IBM"], "1s"), 15)
        assert (info.value.code, info.value.bars, info.value.symbols) == (wsps.ErrorCode.NOT_ENTITLED, "1s", ["IBM"])
        assert client.bars("IBM", "1s") is None
        await wait_until(lambda: client.live)

        await asyncio.wait_for(client.unsubscribe_bars(["MSFT"], "1s"), 15)
        msft, aapl = closed("MSFT"), closed("AAPL")
        await wait_until(lambda: closed("AAPL") >= aapl + 2)
        assert closed("MSFT") == msft, "the new stream does not carry MSFT's bars"
        assert client.symbols == ["AAPL"], "bars do not touch the quote watch set"
        assert client.transport == "sse"
    finally:
        await client.close()
