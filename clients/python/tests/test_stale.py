"""Staleness against scripted servers speaking the ``stale`` / ``fresh`` frames of docs/protocol.md:
the gateway's word, the client's own connection loss, the two combined, over WebSocket (a real
``websockets`` server) and SSE (a raw HTTP server); and every 1012 (ISOLATED among them) retried alike."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

import wsps
from test_client_frames import HELLO, read_sub, until


def quote(**q: Any) -> dict[str, Any]:
    return {"bid": 1, "ask": 2, "last": 1.5, "bidSize": 1, "askSize": 1, "volume": 1, "open": 1, "high": 2, "low": 1,
            "prevClose": 1, "ts": int(time.time() * 1000), **q}


def now_ms() -> int:
    return int(time.time() * 1000)


def staleness(events: list[wsps.Event]) -> list[wsps.StaleEvent | wsps.FreshEvent]:
    return [e for e in events if isinstance(e, (wsps.StaleEvent, wsps.FreshEvent))]


async def test_stale_fresh_frames_a_lost_connection_on_top_and_each_symbol_fresh_again_when_restored() -> None:
    conns: list[ServerConnection] = []
    subs: list[dict[str, Any]] = []

    async def handler(ws: ServerConnection) -> None:
        conns.append(ws)
        await ws.send(json.dumps(HELLO))
        subs.append(await read_sub(ws, []))
        async for text in ws:  # the test answers the rest, but for unsubs
            m = json.loads(text)
            if m["op"] == "unsub":
                await ws.send(json.dumps({"op": "ack", "id": m["id"], "symbols": [s for s in subs[-1]["symbols"] if s not in m["symbols"]]}))

    t1 = now_ms() - 60_000
    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        client = wsps.Client(f"ws://127.0.0.1:{port}/ws", initial_backoff=0.01)
        events: list[wsps.Event] = []
        client.on(events.append)
        await client.subscribe(["AAPL", "MSFT", "IBM"])
        await client.connect()
        try:
            await until(lambda: len(subs) == 1)
            one = conns[0]
            await one.send(json.dumps({"op": "ack", "id": subs[0]["id"], "symbols": ["AAPL", "MSFT", "IBM"]}))
            # AAPL and MSFT carry an epoch (they resume with since); IBM does not.
            await one.send(json.dumps({"op": "snap", "quotes": [quote(symbol="AAPL", seq=10, epoch="e1"), quote(symbol="MSFT", seq=20, epoch="e1"),
                                                                quote(symbol="IBM", seq=30)]}))
            await until(lambda: client.quote("IBM") is not None)
            assert staleness(events) == [], "nothing is stale while the feed is live"
            assert (client.is_stale("AAPL"), client.stale_since("AAPL")) == (False, None)

            # The gateway's feed of AAPL and MSFT is interrupted (XYZ is not watched: ignored).
            await one.send(json.dumps({"op": "stale", "symbols": ["AAPL", "MSFT", "XYZ"], "since": t1}))
            await until(lambda: len(staleness(events)) == 1)
            assert staleness(events) == [wsps.StaleEvent(["AAPL", "MSFT"], t1)]
            assert [(client.is_stale(s), client.stale_since(s)) for s in ("AAPL", "MSFT", "IBM", "XYZ")] == \
                [(True, t1), (True, t1), (False, None), (False, None)]
            # Gap fill while stale: applied, still not live.
            await one.send(json.dumps({"op": "q", "quotes": [{"symbol": "AAPL", "seq": 11, "ts": now_ms(), "last": 2}]}))
            await until(lambda: (client.quote("AAPL") or {}).get("seq") == 11)
            assert client.is_stale("AAPL")
            await one.send(json.dumps({"op": "fresh", "symbols": ["AAPL"]}))
            await until(lambda: len(staleness(events)) == 2)
            assert staleness(events)[1] == wsps.FreshEvent(["AAPL"])
            assert (client.is_stale("AAPL"), client.stale_since("AAPL"), client.stale_since("MSFT")) == (False, None, t1)

            # The last frame, then silence, then the TCP connection is cut (1006, no close frame):
            # the symbols still live are stale from that last frame, not from the cut.
            last_sent = now_ms()
            await one.send(json.dumps({"op": "q", "quotes": [{"symbol": "AAPL", "seq": 12, "ts": now_ms(), "last": 3}]}))
            await until(lambda: (client.quote("AAPL") or {}).get("seq") == 12)
            await asyncio.sleep(0.3)
            cut_at = now_ms()
            one.transport.abort()
            await until(lambda: len(staleness(events)) == 3)
            lost = staleness(events)[2]
            assert isinstance(lost, wsps.StaleEvent)
            assert lost.symbols == ["AAPL", "IBM"], "one event for the symbols that were live; MSFT was stale already"
            assert last_sent <= lost.since < cut_at - 200, f"since {lost.since} is the last frame's time ({last_sent}), not the cut's ({cut_at})"
            assert [client.stale_since(s) for s in ("AAPL", "MSFT", "IBM")] == [lost.since, t1, lost.since], "each keeps the earlier of its two"

            # The next connection: AAPL resumed and recovered, MSFT not (a snapshot replaces it), IBM
            # snapshotted; meanwhile this gateway says IBM is stale on its side.
            await until(lambda: len(subs) == 2)
            two = conns[1]
            assert subs[1]["since"] == {"AAPL": {"seq": 12, "epoch": "e1"}, "MSFT": {"seq": 20, "epoch": "e1"}}
            await two.send(json.dumps({"op": "ack", "id": subs[1]["id"], "symbols": ["AAPL", "MSFT", "IBM"], "recovered": {"AAPL": True, "MSFT": False}}))
            await until(lambda: len(staleness(events)) == 4)
            assert staleness(events)[3] == wsps.FreshEvent(["AAPL"])
            assert [client.is_stale(s) for s in ("AAPL", "MSFT", "IBM")] == [False, True, True]
            await two.send(json.dumps({"op": "snap", "quotes": [quote(symbol="MSFT", seq=25, epoch="e1")], "recovered": False}))
            await until(lambda: len(staleness(events)) == 5)
            assert staleness(events)[4] == wsps.FreshEvent(["MSFT"]), "the first connection's stale MSFT does not outlive it"
            t2 = now_ms()
            await two.send(json.dumps({"op": "stale", "symbols": ["IBM"], "since": t2}))
            await two.send(json.dumps({"op": "q", "quotes": [{"symbol": "AAPL", "seq": 13, "ts": now_ms(), "last": 4}]}))  # to know it was read
            await until(lambda: (client.quote("AAPL") or {}).get("seq") == 13)
            assert client.stale_since("IBM") == lost.since, "both hold: the earlier since"
            await two.send(json.dumps({"op": "snap", "quotes": [quote(symbol="IBM", seq=31)]}))
            await until(lambda: (client.quote("IBM") or {}).get("seq") == 31)
            await asyncio.sleep(0.05)
            assert len(staleness(events)) == 5, "IBM: restored on the new connection, but this gateway calls it stale: no FreshEvent"
            assert (client.is_stale("IBM"), client.stale_since("IBM")) == (True, t2), "only the gateway's word holds now"
            await two.send(json.dumps({"op": "fresh", "symbols": ["IBM"]}))
            await until(lambda: len(staleness(events)) == 6)
            assert staleness(events)[5] == wsps.FreshEvent(["IBM"])
            assert [(client.is_stale(s), client.stale_since(s)) for s in ("AAPL", "MSFT", "IBM")] == [(False, None)] * 3

            # Unsubscribed: neither stale nor fresh. A malformed frame is reported, the connection stays.
            await two.send(json.dumps({"op": "stale", "symbols": ["AAPL"], "since": t2}))
            await until(lambda: client.is_stale("AAPL"))
            await client.unsubscribe(["AAPL"])
            assert (client.is_stale("AAPL"), client.stale_since("AAPL")) == (False, None)
            await two.send(json.dumps({"op": "stale", "symbols": "IBM"}))
            await until(lambda: any(isinstance(e, wsps.ErrorEvent) and e.error.code == wsps.ErrorCode.BAD_SERVER_FRAME for e in events))
            assert client.live and not client.is_stale("IBM")
        finally:
            await client.close()
        # close(): what is still live goes stale.
        last = staleness(events)[-1]
        assert isinstance(last, wsps.StaleEvent) and last.symbols == ["MSFT", "IBM"]
        assert client.is_stale("MSFT") and client.stale_since("MSFT") == last.since


async def test_every_1012_is_retried_at_once_matched_on_its_code_and_each_loss_makes_the_symbols_stale() -> None:
    closes = [wsps.Disconnect.SERVICE_RESTART, wsps.Disconnect.NOT_RESTORED, wsps.Disconnect.ISOLATED]
    n = 0

    async def handler(ws: ServerConnection) -> None:
        nonlocal n
        n += 1
        me = n
        await ws.send(json.dumps(HELLO))
        sub = await read_sub(ws, [])
        await ws.send(json.dumps({"op": "ack", "id": sub["id"], "symbols": sub["symbols"]}))
        await ws.send(json.dumps({"op": "snap", "quotes": [quote(symbol="AAPL", seq=me)]}))
        if me <= len(closes):
            await asyncio.sleep(0.02)
            await ws.close(closes[me - 1].code, closes[me - 1].reason)
            return
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        # A failed attempt would wait seconds (initial_backoff); a 1012, under restart_jitter.
        client = wsps.Client(f"ws://127.0.0.1:{port}/ws", initial_backoff=5, restart_jitter=0.05)
        events: list[wsps.Event] = []
        client.on(events.append)
        await client.subscribe(["AAPL"])
        await client.connect()
        try:
            await until(lambda: (client.quote("AAPL") or {}).get("seq") == 4 and not client.is_stale("AAPL"))
            waits = [e for e in events if isinstance(e, wsps.StatusEvent) and e.state == "reconnecting"]
            assert [(e.close_code, e.reason) for e in waits] == [(1012, d.reason) for d in closes]
            assert all(e.delay is not None and e.delay < 0.05 for e in waits), [e.delay for e in waits]
            assert [type(e).__name__ for e in staleness(events)] == ["StaleEvent", "FreshEvent"] * 3
        finally:
            await client.close()


async def test_stale_and_fresh_over_sse_and_a_stream_that_ends_makes_the_live_symbols_stale() -> None:
    streams: list[asyncio.StreamWriter] = []

    def event(frame: dict[str, Any]) -> bytes:
        return f"event: {frame['op']}\ndata: {json.dumps(frame)}\n\n".encode()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()).strip():
            pass  # the request head
        streams.append(writer)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        writer.write(event({**HELLO, "heartbeatMs": 15000}) + event({"op": "ack", "symbols": ["AAPL"]})
                     + event({"op": "snap", "quotes": [quote(symbol="AAPL", seq=len(streams))]}))
        if len(streams) == 1:
            writer.write(event({"op": "stale", "symbols": ["AAPL"], "since": 1234}))
        await writer.drain()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        client = wsps.Client(f"ws://127.0.0.1:{port}/ws", transport="sse", initial_backoff=0.01)
        events: list[wsps.Event] = []
        client.on(events.append)
        await client.subscribe(["AAPL"])
        await client.connect()
        try:
            await until(lambda: len(staleness(events)) == 1)
            assert staleness(events) == [wsps.StaleEvent(["AAPL"], 1234)]
            streams[0].write(event({"op": "fresh", "symbols": ["AAPL"]}))
            await until(lambda: len(staleness(events)) == 2)
            assert staleness(events)[1] == wsps.FreshEvent(["AAPL"]) and not client.is_stale("AAPL")
            # The stream ends without a close event (cut: 1006); the next one's snapshot restores AAPL.
            streams[0].close()
            await until(lambda: len(staleness(events)) == 4)
            assert [type(e).__name__ for e in staleness(events)[2:]] == ["StaleEvent", "FreshEvent"]
            assert (client.quote("AAPL") or {}).get("seq") == 2 and not client.is_stale("AAPL")
        finally:
            await client.close()
            for w in streams:
                w.close()


async def test_a_gateway_that_stops_answering_makes_every_symbol_stale_since_its_last_frame_and_its_next_frame_fresh() -> None:
    conns: list[ServerConnection] = []
    answering = [True]

    async def handler(ws: ServerConnection) -> None:
        conns.append(ws)
        await ws.send(json.dumps(HELLO))
        sub = await read_sub(ws, [])
        await ws.send(json.dumps({"op": "ack", "id": sub["id"], "symbols": ["AAPL", "MSFT"]}))
        await ws.send(json.dumps({"op": "snap", "quotes": [quote(symbol="AAPL", seq=1), quote(symbol="MSFT", seq=1)]}))
        async for text in ws:  # pings answered, as a gateway does, until it freezes
            m = json.loads(text)
            if m["op"] == "ping" and answering[0]:
                await ws.send(json.dumps({"op": "pong", "id": m["id"]}))

    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        client = wsps.Client(f"ws://127.0.0.1:{port}/ws", initial_backoff=0.01, quiet=0.15)
        events: list[wsps.Event] = []
        client.on(events.append)
        await client.subscribe(["AAPL", "MSFT"])
        await client.connect()
        try:
            await until(lambda: client.quote("MSFT") is not None)
            await asyncio.sleep(0.7)
            assert staleness(events) == [], "a quiet gateway that answers its probes is live"
            last_frame = now_ms()
            answering[0] = False
            await until(lambda: len(staleness(events)) == 1, timeout=2.0)
            told = staleness(events)[0]
            assert isinstance(told, wsps.StaleEvent)
            assert sorted(told.symbols) == ["AAPL", "MSFT"]
            assert told.since <= last_frame + 150, "since the last frame, not when it was found"
            assert client.is_stale("AAPL")
            await conns[0].send(json.dumps({"op": "q", "quotes": [{"symbol": "AAPL", "seq": 2, "ts": now_ms(), "last": 2}]}))
            await until(lambda: len(staleness(events)) == 2)
            fresh = staleness(events)[1]
            assert isinstance(fresh, wsps.FreshEvent) and sorted(fresh.symbols) == ["AAPL", "MSFT"]
            assert not client.is_stale("MSFT")
            assert len(conns) == 1, "one connection throughout"
        finally:
            await client.close()
