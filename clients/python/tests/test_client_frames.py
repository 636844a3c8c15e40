"""Client behaviours a real gateway does not produce on demand (malformed frames, a gap,
a 4001), against a scripted local WebSocket server. The real-gateway tests are test_gateway.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

import pytest
from websockets.asyncio.server import ServerConnection, serve

import wsps
from conftest import final_close_code

HELLO = {"op": "hello", "v": 1, "node": "scripted", "heartbeatMs": 15000, "limits": {"maxSubscriptions": 200}}
Script = Callable[[ServerConnection, "list[dict[str, Any]]", int], Awaitable[None]]


async def scripted(script: Script) -> tuple[str, list[dict[str, Any]], Any]:
    """A local server running ``script(ws, received, connection)`` for each connection (1 for the
    first): what the client sends is appended to ``received``, across connections."""
    received: list[dict[str, Any]] = []
    connections = 0

    async def handler(ws: ServerConnection) -> None:
        nonlocal connections
        connections += 1
        await script(ws, received, connections)

    server = await serve(handler, "127.0.0.1", 0)
    port = next(iter(server.sockets)).getsockname()[1]
    return f"ws://127.0.0.1:{port}/ws", received, server


async def read_sub(ws: ServerConnection, received: list[dict[str, Any]]) -> dict[str, Any]:
    while True:
        msg = json.loads(await ws.recv())
        received.append(msg)
        if msg["op"] == "sub":
            return msg


async def until(pred: Callable[[], bool], timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not pred():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(poll(), timeout)


async def test_token_is_the_first_frame_and_malformed_frames_keep_the_connection() -> None:
    async def script(ws: ServerConnection, received: list[dict[str, Any]], _connection: int) -> None:
        received.append(json.loads(await ws.recv()))
        await ws.send(json.dumps(HELLO))
        sub = await read_sub(ws, received)
        await ws.send(json.dumps({"op": "ack", "id": sub["id"], "symbols": ["AAPL"]}))
        await ws.send("not json")
        await ws.send(json.dumps({"op": "q", "quotes": [{"nosymbol": 1}]}))
        await ws.send(json.dumps({"op": "snap", "quotes": [{"symbol": "AAPL", "seq": 1, "ts": 1, "bid": 1}]}))
        await ws.wait_closed()

    url, received, server = await scripted(script)
    async with server, wsps.Client(url, token=lambda: "jwt-1") as client:
        events: list[wsps.Event] = []
        client.on(events.append)
        assert await client.subscribe(["AAPL"]) == ["AAPL"]
        await until(lambda: client.quote("AAPL") is not None)
        assert received[0] == {"op": "auth", "token": "jwt-1"}
        codes = [e.error.code for e in events if isinstance(e, wsps.ErrorEvent)]
        assert codes == ["BAD_SERVER_FRAME", "BAD_SERVER_FRAME"]
        assert client.live


async def test_a_gap_resubscribes_the_symbol() -> None:
    async def script(ws: ServerConnection, received: list[dict[str, Any]], _connection: int) -> None:
        await ws.send(json.dumps(HELLO))
        sub = await read_sub(ws, received)
        await ws.send(json.dumps({"op": "ack", "id": sub["id"], "symbols": ["AAPL"]}))
        await ws.send(json.dumps({"op": "snap", "quotes": [{"symbol": "AAPL", "seq": 10, "ts": 1, "bid": 1}]}))
        await ws.send(json.dumps({"op": "q", "quotes": [{"symbol": "AAPL", "seq": 12, "ts": 2, "bid": 2}]}))
        await read_sub(ws, received)
        await ws.wait_closed()

    url, received, server = await scripted(script)
    async with server, wsps.Client(url) as client:
        await client.subscribe(["AAPL"], mode="distinct")
        await until(lambda: len(received) >= 3)
        assert [(m["op"], m["symbols"]) for m in received[1:]] == [("unsub", ["AAPL"]), ("sub", ["AAPL"])]
        assert received[2]["mode"] == "distinct" and "since" not in received[2]
        assert client.quote("AAPL")["seq"] == 10


async def test_4001_without_a_token_source_stops_and_iteration_raises() -> None:
    async def script(ws: ServerConnection, received: list[dict[str, Any]], _connection: int) -> None:
        await ws.recv()
        await ws.send(json.dumps({"op": "error", "code": "UNAUTHORIZED", "message": "bad"}))
        await ws.close(4001, "token rejected")

    url, _received, server = await scripted(script)
    async with server:
        client = wsps.Client(url, token="bad")
        assert await final_close_code(client) == 4001
        await client.close()


async def test_1012_reconnects_at_once_and_resumes_with_since() -> None:
    async def script(ws: ServerConnection, received: list[dict[str, Any]], connection: int) -> None:
        await ws.send(json.dumps(HELLO))
        sub = await read_sub(ws, received)
        if connection == 1:
            await ws.send(json.dumps({"op": "ack", "id": sub["id"], "symbols": ["AAPL"]}))
            await ws.send(json.dumps({"op": "snap", "quotes": [{"symbol": "AAPL", "seq": 7, "ts": 1, "epoch": "e1"}]}))
            await ws.send(json.dumps({"op": "q", "quotes": [{"symbol": "AAPL", "seq": 8, "ts": 2}]}))
            await ws.close(1012, "server restart")
            return
        await ws.send(json.dumps({"op": "ack", "id": sub["id"], "symbols": ["AAPL"], "recovered": {"AAPL": True}}))
        await ws.send(json.dumps({"op": "q", "quotes": [{"symbol": "AAPL", "seq": 9, "ts": 3}]}))
        await ws.wait_closed()

    url, received, server = await scripted(script)
    async with server, wsps.Client(url, restart_jitter=0.05, initial_backoff=5) as client:
        events: list[wsps.Event] = []
        client.on(events.append)
        await client.subscribe(["AAPL"], mode="distinct")
        await until(lambda: (client.quote("AAPL") or {}).get("seq") == 9)
        subs = [m for m in received if m["op"] == "sub"]
        assert subs[1]["since"] == {"AAPL": {"seq": 8, "epoch": "e1"}}
        assert [e for e in events if isinstance(e, wsps.RecoveryEvent)] == [wsps.RecoveryEvent("AAPL", True)]
        assert [q.quote["seq"] for q in events if isinstance(q, wsps.QuoteEvent)] == [7, 8, 9]


def bar(t: int, c: float) -> dict[str, Any]:
    return {"t": t, "o": c, "h": c, "l": c, "c": c, "v": 0, "n": 1}


async def test_bars_backfill_then_live_apart_from_quotes_and_asked_again_after_a_reconnect() -> None:
    async def script(ws: ServerConnection, received: list[dict[str, Any]], connection: int) -> None:
        await ws.send(json.dumps(HELLO))
        held: dict[str, set[str]] = {}
        async for text in ws:
            m = json.loads(text)
            received.append(m)
            if m["op"] not in ("sub", "unsub"):
                continue
            if "bars" not in m:
                await ws.send(json.dumps({"op": "ack", "id": m["id"], "symbols": m["symbols"]}))
                continue
            got = held.setdefault(m["bars"], set())
            for s in m["symbols"]:
                (got.add if m["op"] == "sub" else got.discard)(s)
            await ws.send(json.dumps({"op": "ack", "id": m["id"], "bars": m["bars"], "symbols": sorted(got)}))
            if m["op"] != "sub":
                continue
            for s in m["symbols"]:
                await ws.send(json.dumps({"op": "bars", "symbol": s, "interval": m["bars"], "bars": [bar(1000, 1), bar(2000, 2)][-m["backfill"]:],
                                          "current": bar(3000, 3), "complete": True, "delayed": True}))
                await ws.send(json.dumps({"op": "bar", "symbol": s, "interval": m["bars"], "bar": {**bar(3000, 3), "c": 4, "n": 2}, "closed": True, "delayed": True}))
                await ws.send(json.dumps({"op": "bar", "symbol": s, "interval": m["bars"], "bar": bar(2000, 9), "closed": False, "delayed": True}))
                await ws.send(json.dumps({"op": "bar", "symbol": s, "interval": m["bars"], "bar": bar(4000, 5), "closed": False, "delayed": True}))
            if connection == 1:
                await ws.close(1012, "server restart")
                return

    url, received, server = await scripted(script)
    async with server, wsps.Client(url, restart_jitter=0.05) as client:
        events: list[wsps.Event] = []
        client.on(events.append)
        await client.subscribe(["AAPL"])
        assert await client.subscribe_bars(["AAPL"], "1m", backfill=1, delayed=True) == ["AAPL"]
        await until(lambda: sum(isinstance(e, wsps.BarsEvent) for e in events) == 2
                    and (client.bars("AAPL", "1m") or wsps.BarSeries("", "")).current == bar(4000, 5))
        series = client.bars("AAPL", "1m")
        assert series == wsps.BarSeries("AAPL", "1m", [bar(2000, 2), {**bar(3000, 3), "c": 4, "n": 2}], bar(4000, 5), True, True)
        kinds = [(type(e).__name__, getattr(e, "closed", None)) for e in events if isinstance(e, (wsps.BarsEvent, wsps.BarEvent))]
        assert kinds == [("BarsEvent", None), ("BarEvent", True), ("BarEvent", False)] * 2, "the late bar of 2000 was dropped"
        assert all(e.delayed for e in events if isinstance(e, (wsps.BarsEvent, wsps.BarEvent)))
        assert client.symbols == ["AAPL"], "bars do not touch the quote watch set"
        bar_subs = [(m["symbols"], m["bars"], m["backfill"], m["delayed"]) for m in received if m["op"] == "sub" and "bars" in m]
        assert bar_subs == [(["AAPL"], "1m", 1, True), (["AAPL"], "1m", 1, True)], "asked for again after the 1012"
        await client.unsubscribe_bars(["AAPL"], "1m")
        assert client.bars("AAPL", "1m") is None


async def test_a_refused_bars_sub_raises_and_the_rest_is_asked_for_again() -> None:
    async def script(ws: ServerConnection, received: list[dict[str, Any]], _connection: int) -> None:
        await ws.send(json.dumps(HELLO))
        async for text in ws:
            m = json.loads(text)
            received.append(m)
            if m["op"] != "sub":
                continue
            if m["bars"] == "2h":
                await ws.send(json.dumps({"op": "error", "id": m["id"], "code": "BAD_INTERVAL", "message": "bars must be one of 1s, 1m, 5m"}))
            elif "MSFT" in m["symbols"]:
                await ws.send(json.dumps({"op": "error", "id": m["id"], "code": "DELAYED_ONLY", "message": "delayed only", "symbols": ["MSFT"]}))
            else:
                await ws.send(json.dumps({"op": "ack", "id": m["id"], "bars": m["bars"], "symbols": m["symbols"]}))

    url, received, server = await scripted(script)
    async with server, wsps.Client(url) as client:
        with pytest.raises(wsps.WspsError) as info:
            await client.subscribe_bars(["AAPL"], "2h")
        assert info.value.code == wsps.ErrorCode.BAD_INTERVAL
        with pytest.raises(wsps.WspsError) as info:
            await client.subscribe_bars(["IBM", "MSFT"], "1m", delayed=False)
        assert info.value.code == wsps.ErrorCode.DELAYED_ONLY and info.value.symbols == ["MSFT"]
        await until(lambda: any(m.get("symbols") == ["IBM"] for m in received))
        assert await client.subscribe_bars(["IBM"], "1m", delayed=False) == ["IBM"]
