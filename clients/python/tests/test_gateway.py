"""The client against real gateway processes (tests/stack.js), not a mock."""

from __future__ import annotations

import asyncio
from typing import AsyncIterable

import pytest

import wsps
from conftest import Stack, quotes_of


async def collect(stream: AsyncIterable[wsps.Event], until, timeout: float = 20.0) -> list[wsps.Event]:
    """Events of ``stream`` (a client's ``events()``) until ``until(events)`` holds."""
    events: list[wsps.Event] = []

    async def read() -> None:
        async for ev in stream:
            events.append(ev)
            if until(events):
                return

    await asyncio.wait_for(read(), timeout)
    return events


async def test_quotes_arrive_and_keep_changing(stack: Stack) -> None:
    async with wsps.Client(stack.gateways[0]) as client:
        assert client.hello is not None and client.hello["v"] == 1
        stream = client.events()
        assert set(await client.subscribe(["AAPL", "MSFT"])) >= {"AAPL", "MSFT"}
        events = await collect(stream, lambda evs: all(len(quotes_of(evs, s)) >= 5 for s in ("AAPL", "MSFT")))
        for symbol in ("AAPL", "MSFT"):
            qs = quotes_of(events, symbol)
            assert qs[0].snapshot
            seqs = [q.quote["seq"] for q in qs]
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
            assert {"bid", "ask", "last", "ts"} <= qs[-1].quote.keys()  # full quote after a delta
            assert client.quote(symbol) == qs[-1].quote
        assert not [e for e in events if isinstance(e, wsps.ErrorEvent)]


async def test_bad_symbol_raises_and_reports_BAD_SYMBOL(stack: Stack) -> None:
    async with wsps.Client(stack.gateways[0]) as client:
        stream = client.events()
        with pytest.raises(wsps.WspsError) as info:
            await client.subscribe(["AAPL", "not a symbol"])
        assert info.value.code == wsps.ErrorCode.BAD_SYMBOL
        assert info.value.symbols == ["not a symbol"]
        assert client.symbols == ["AAPL"]  # the good one is asked for again
        events = await collect(stream, lambda evs: bool(quotes_of(evs, "AAPL")))
        errors = [e.error for e in events if isinstance(e, wsps.ErrorEvent)]
        assert [e.code for e in errors] == ["BAD_SYMBOL"]


async def test_distinct_subscriber_resumes_through_a_drain_without_losing_a_tick(stack: Stack) -> None:
    symbols = ["AAPL", "MSFT", "NVDA"]
    client = wsps.Client(stack.gateways, restart_jitter=0.2)
    events: list[wsps.Event] = []
    client.on(events.append)
    await client.connect()
    try:
        await client.subscribe(symbols, mode="distinct")

        def ticks(n: int) -> bool:
            return all(len(quotes_of(events, s)) >= n for s in symbols)

        async def wait_until(pred, timeout: float = 30.0) -> None:
            async def poll() -> None:
                while not pred():
                    await asyncio.sleep(0.05)
            await asyncio.wait_for(poll(), timeout)

        await wait_until(lambda: ticks(5))
        assert client.hello is not None
        first_node = client.hello["node"]
        await asyncio.to_thread(stack.terminate_gateway, 0)
        before = {s: len(quotes_of(events, s)) for s in symbols}
        await wait_until(lambda: client.live and client.hello is not None and client.hello["node"] != first_node)
        await wait_until(lambda: all(len(quotes_of(events, s)) >= before[s] + 10 for s in symbols))

        statuses = [e for e in events if isinstance(e, wsps.StatusEvent)]
        assert any(e.state == "reconnecting" and e.close_code == 1012 for e in statuses), statuses
        recoveries = [e for e in events if isinstance(e, wsps.RecoveryEvent)]
        assert sorted(r.symbol for r in recoveries) == sorted(symbols), recoveries
        assert all(r.recovered for r in recoveries), recoveries
        for s in symbols:
            qs = quotes_of(events, s)
            seqs = [q.quote["seq"] for q in qs]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"{s}: ticks lost or repeated: {seqs}"
            assert [q.snapshot for q in qs].count(True) == 1  # only the first: the resume replayed, no new snap
        assert not [e for e in events if isinstance(e, wsps.ErrorEvent)]
    finally:
        await client.close()


async def test_bars_backfill_then_live_closed_bars_in_order(stack: Stack) -> None:
    async with wsps.Client(stack.gateways[1]) as client:
        stream = client.events()
        assert await client.subscribe_bars(["BARPY"], "1s", backfill=10) == ["BARPY"]
        events = await collect(stream, lambda evs: sum(isinstance(e, wsps.BarEvent) and e.closed for e in evs) >= 3)
        assert isinstance(events[0], wsps.BarsEvent) and events[0].interval == "1s"
        series = client.bars("BARPY", "1s")
        assert series is not None and not series.delayed
        ts = [b["t"] for b in series.bars]
        assert ts == sorted(set(ts)) and len(ts) >= 3, ts
        assert all(b["n"] >= 1 and b["l"] <= min(b["o"], b["c"]) and b["h"] >= max(b["o"], b["c"]) for b in series.bars)
        with pytest.raises(wsps.WspsError) as info:
            await client.subscribe_bars(["BARPY"], "2m")
        assert info.value.code == wsps.ErrorCode.BAD_INTERVAL
        assert not [e for e in events if isinstance(e, wsps.ErrorEvent)]


async def test_protobuf_and_json_clients_get_the_same_quotes(stack: Stack) -> None:
    # docs/protocol.md, Binary encoding: the default asks for wsps.v1.proto; encoding="json" for JSON only.
    symbols = ["AAPL", "MSFT"]
    clients = {enc: wsps.Client(stack.gateways[0], encoding=enc) for enc in ("auto", "json")}
    events: dict[str, list[wsps.Event]] = {enc: [] for enc in clients}
    for enc, client in clients.items():
        client.on(events[enc].append)
        await client.connect()
        await client.subscribe(symbols, mode="distinct")
    try:
        def common(symbol: str) -> tuple[list[dict], list[dict]]:
            a = [q.quote for q in quotes_of(events["json"], symbol) if not q.snapshot]
            b = [q.quote for q in quotes_of(events["auto"], symbol) if not q.snapshot]
            if not a or not b:
                return [], []
            lo, hi = max(a[0]["seq"], b[0]["seq"]), min(a[-1]["seq"], b[-1]["seq"])
            return [q for q in a if lo <= q["seq"] <= hi], [q for q in b if lo <= q["seq"] <= hi]

        async def enough() -> None:
            while not all(len(common(s)[0]) >= 10 for s in symbols):
                await asyncio.sleep(0.05)

        await asyncio.wait_for(enough(), 30)
        for s in symbols:
            a, b = common(s)
            assert a == b and [q["seq"] for q in a] == list(range(a[0]["seq"], a[0]["seq"] + len(a)))
        assert clients["auto"]._ws is not None and clients["auto"]._ws.subprotocol == "wsps.v1.proto"
        assert clients["json"]._ws is not None and clients["json"]._ws.subprotocol == "wsps.v1.json"
        assert clients["auto"]._binary_out, "frames go out in Protobuf once the gateway spoke it"
        for enc in clients:
            assert not [e for e in events[enc] if isinstance(e, wsps.ErrorEvent)], enc
    finally:
        for client in clients.values():
            await client.close()


async def test_books_held_verified_and_equal_across_gateways_through_a_drain(stack: Stack) -> None:
    """Two clients hold AAPL's book (depth 10 merged, 25 distinct) on different gateways: every checksum matches,
    the same seq is the same book on both, and the drained one's client is out of sync in between,
    then in sync on the other gateway."""
    with pytest.raises(wsps.WspsError) as info:
        await wsps.Client(stack.gateways[0]).subscribe_book(["AAPL"], 7)
    assert info.value.code == wsps.ErrorCode.BAD_BOOK

    a = wsps.Client(stack.gateways[1])
    b = wsps.Client(stack.gateways, restart_jitter=0.2)
    seen: dict[str, dict[int, tuple]] = {"a": {}, "b": {}}
    syncs: list[bool] = []

    def keep(name: str, depth: int):
        def on(ev: wsps.Event) -> None:
            if isinstance(ev, wsps.BookEvent):
                if name == "b":
                    syncs.append(ev.book.sync)
                if ev.book.sync:
                    seen[name][ev.book.seq] = (ev.book.epoch, ev.book.bids[:10], ev.book.asks[:10])
                assert len(ev.book.bids) <= depth and len(ev.book.asks) <= depth
        return on

    a.on(keep("a", 10))
    b.on(keep("b", 25))
    await a.connect()
    await b.connect()
    try:
        assert await a.subscribe_book(["AAPL"], 10) == wsps.BookSubscribed(10, ["AAPL"], [])
        assert (await b.subscribe_book(["AAPL"], 25, mode="distinct")).symbols == ["AAPL"]
        with pytest.raises(wsps.WspsError):
            await a.subscribe_book(["AAPL"], 10, mode="distinct", max_rate=5)

        async def wait_until(pred, timeout: float = 30.0) -> None:
            async def poll() -> None:
                while not pred():
                    await asyncio.sleep(0.05)
            await asyncio.wait_for(poll(), timeout)

        def common() -> list[int]:
            return sorted(set(seen["a"]) & set(seen["b"]))

        await wait_until(lambda: len(common()) >= 20)
        before = len(common())
        assert b.hello is not None
        first_node = b.hello["node"]
        await asyncio.to_thread(stack.terminate_gateway, 0)
        await wait_until(lambda: b.hello is not None and b.hello["node"] != first_node and (b.book("AAPL") or wsps.HeldBook("", 0, 0, "", False, (), ())).sync)
        assert False in syncs, "out of sync between the gateways, never frozen"
        await wait_until(lambda: len(common()) >= before + 20)
        for seq in common():
            assert seen["a"][seq] == seen["b"][seq], f"seq {seq}: the same book on both gateways"
        assert (a.book_resyncs, b.book_resyncs) == (0, 0)
        book = a.book("AAPL")
        assert book is not None and book.sync and 0 < len(book.bids) <= 10
        assert wsps.book_checksum(book.bids, book.asks) == wsps.book_checksum(*seen["a"][book.seq][1:])
    finally:
        await a.close()
        await b.close()
