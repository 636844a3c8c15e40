"""Tokens against real gateways with auth on (tests/stack.js --auth-secret): the first
frame, the header, the in-band refresh past the first token's exp, a refused token,
and grants (NOT_ENTITLED on subscribe, GRANT_REVOKED on a refresh; a delayed grant's quotes
marked and old enough, a delayed claim of the wrong shape refused with BAD_GRANT)."""

from __future__ import annotations

import time

import pytest

import wsps
from conftest import Stack, final_close_code, quotes_of, token, wait_until


@pytest.mark.parametrize("in_header", [False, True], ids=["first-frame", "header"])
async def test_a_token_callable_is_refreshed_in_band_and_keeps_the_connection_past_exp(auth_stack: Stack, in_header: bool) -> None:
    minted: list[float] = []

    def source() -> str:
        minted.append(time.monotonic())
        return token(3, sub="py")  # short: the refresh comes ~2 s in

    events: list[wsps.Event] = []
    client = wsps.Client(auth_stack.gateways[0], token=source, token_in_header=in_header)
    client.on(events.append)
    await client.connect()
    try:
        await client.subscribe(["AAPL"])
        first_exp = minted[0] + 3
        await wait_until(lambda: time.monotonic() > first_exp + 2, timeout=15)
        n = len(quotes_of(events, "AAPL"))
        await wait_until(lambda: len(quotes_of(events, "AAPL")) > n)  # still flowing past the first exp
        assert len(minted) >= 2, minted
        assert client.live
        states = [e.state for e in events if isinstance(e, wsps.StatusEvent)]
        assert "reconnecting" not in states, states  # refreshed on the same connection: no 4002
        assert not [e for e in events if isinstance(e, wsps.ErrorEvent)]
    finally:
        await client.close()


async def test_a_refused_fixed_token_stops_with_4001(auth_stack: Stack) -> None:
    client = wsps.Client(auth_stack.gateways[0], token="not.a.jwt")
    assert await final_close_code(client) == 4001
    await client.close()


async def test_without_a_token_the_gateway_closes_with_4003_and_the_client_stops(auth_stack: Stack) -> None:
    client = wsps.Client(auth_stack.gateways[0])
    assert await final_close_code(client) == 4003
    await client.close()


async def test_a_refused_token_from_a_callable_is_retried_with_a_new_one(auth_stack: Stack) -> None:
    calls = 0

    async def source() -> str:
        nonlocal calls
        calls += 1
        return "not.a.jwt" if calls == 1 else token(60, sub="retry")

    events: list[wsps.Event] = []
    client = wsps.Client(auth_stack.gateways, token=source, initial_backoff=0.1)
    client.on(events.append)
    await client.connect()
    try:
        assert calls >= 2
        assert any(isinstance(e, wsps.StatusEvent) and e.close_code == 4001 for e in events), events
        assert set(await client.subscribe(["AAPL"])) >= {"AAPL"}
    finally:
        await client.close()


async def test_grants_NOT_ENTITLED_on_subscribe_and_GRANT_REVOKED_on_a_refresh(auth_stack: Stack) -> None:
    grants = ["AAPL", "MSFT"]
    events: list[wsps.Event] = []
    client = wsps.Client(auth_stack.gateways[0], token=lambda: token(3, sub="grants", symbols=grants))
    client.on(events.append)
    await client.connect()
    try:
        with pytest.raises(wsps.WspsError) as info:
            await client.subscribe(["NVDA"])
        assert info.value.code == wsps.ErrorCode.NOT_ENTITLED
        assert "NVDA" not in client.symbols

        await client.subscribe(["AAPL", "MSFT"])
        await wait_until(lambda: bool(quotes_of(events, "AAPL")) and bool(quotes_of(events, "MSFT")))
        grants = ["AAPL"]  # the next token, asked for before the first expires, no longer grants MSFT
        await wait_until(lambda: any(isinstance(e, wsps.ErrorEvent) and e.error.code == wsps.ErrorCode.GRANT_REVOKED for e in events), 15)
        revoked = next(e.error for e in events if isinstance(e, wsps.ErrorEvent) and e.error.code == wsps.ErrorCode.GRANT_REVOKED)
        assert revoked.symbols == ["MSFT"]
        assert client.symbols == ["AAPL"]
        assert client.live
    finally:
        await client.close()


async def test_a_delayed_grant_gets_quotes_marked_delayed_and_at_least_the_delay_old(auth_stack: Stack) -> None:
    # The auth stack's gateways serve delayed grants 1.5 s late (tests/stack.js).
    received: list[tuple[float, wsps.QuoteEvent]] = []

    def on_event(ev: wsps.Event) -> None:
        if isinstance(ev, wsps.QuoteEvent):
            received.append((time.time() * 1000, ev))

    client = wsps.Client(auth_stack.gateways[0], token=lambda: token(60, sub="late", symbols=["MSFT"], delayedSymbols=["AAPL"]))
    client.on(on_event)
    await client.connect()
    try:
        await client.subscribe(["AAPL", "MSFT"])
        await wait_until(lambda: sum(ev.symbol == "AAPL" for _, ev in received) >= 5 and sum(ev.symbol == "MSFT" for _, ev in received) >= 5)
        for at, ev in received:
            if ev.symbol == "AAPL":
                assert ev.delayed and ev.quote["delayed"] is True, ev
                assert ev.quote["ts"] <= at - 1500, (at - ev.quote["ts"], ev)
            else:
                assert not ev.delayed and "delayed" not in ev.quote, ev
        assert client.delay_ms == 1500
    finally:
        await client.close()


async def test_a_delayed_claim_of_the_wrong_shape_is_refused_with_BAD_GRANT_and_4001(auth_stack: Stack) -> None:
    events: list[wsps.Event] = []
    client = wsps.Client(auth_stack.gateways[0], token=token(60, sub="odd", delayedSymbols="AAPL"))
    client.on(events.append)
    assert await final_close_code(client) == 4001
    codes = [e.error.code for e in events if isinstance(e, wsps.ErrorEvent)]
    assert wsps.ErrorCode.BAD_GRANT in codes, codes
    await client.close()
