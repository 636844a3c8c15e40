"""Client behaviours a real gateway does not produce on demand (malformed frames, a gap,
a 4001), against a scripted local WebSocket server. The real-gateway tests are test_gateway.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest
from websockets.asyncio.server import ServerConnection, serve

import wsps

HELLO = {"op": "hello", "v": 1, "node": "scripted", "heartbeatMs": 15000, "limits": {"maxSubscriptions": 200}}
Script = Callable[[ServerConnection, "list[dict[str, Any]]"], Awaitable[None]]


async def scripted(script: Script) -> tuple[str, list[dict[str, Any]], Any]:
    received: list[dict[str, Any]] = []

    async def handler(ws: ServerConnection) -> None:
        await script(ws, received)

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
    async def script(ws: ServerConnection, received: list[dict[str, Any]]) -> None:
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
    async def script(ws: ServerConnection, received: list[dict[str, Any]]) -> None:
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
    async def script(ws: ServerConnection, received: list[dict[str, Any]]) -> None:
        await ws.recv()
        await ws.send(json.dumps({"op": "error", "code": "UNAUTHORIZED", "message": "bad"}))
        await ws.close(4001, "token rejected")

    url, _received, server = await scripted(script)
    async with server:
        client = wsps.Client(url, token="bad")
        stream = client.events()
        await client.connect(wait=False)
        with pytest.raises(wsps.ConnectionClosed) as info:
            async for _ev in stream:
                pass
        assert info.value.close_code == 4001
        await client.close()


async def test_1012_reconnects_at_once_and_resumes_with_since() -> None:
    connections = 0

    async def script(ws: ServerConnection, received: list[dict[str, Any]]) -> None:
        nonlocal connections
        connections += 1
        await ws.send(json.dumps(HELLO))
        sub = await read_sub(ws, received)
        if connections == 1:
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
