"""A live quote table in the terminal: one row per symbol, redrawn as quotes arrive.

    python examples/live_table.py [--url ws://127.0.0.1:8080/ws] [--seconds N] AAPL MSFT ...

Merge delivery (the latest state per symbol is all a table needs); the
client resumes by itself through a gateway drain. Ends after ``--seconds``
(0: never) or on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import wsps

COLUMNS = ("symbol", "bid", "ask", "last", "volume", "seq")


def render(rows: dict[str, dict], status: str) -> str:
    lines = [f"{c:>10}" for c in COLUMNS]
    out = ["".join(lines)]
    for symbol in sorted(rows):
        q = rows[symbol]
        out.append("".join(f"{q.get(c, symbol if c == 'symbol' else ''):>10}" for c in COLUMNS))
    out.append(f"[{status}]")
    return "\n".join(out)


async def main(url: str, symbols: list[str], seconds: float, tty: bool) -> None:
    rows: dict[str, dict] = {}
    async with wsps.Client(url) as client:
        # `async with` returns once live; later changes come as StatusEvents.
        status = "live"
        await client.subscribe(symbols)

        async def show() -> None:
            nonlocal status
            async for ev in client:
                if isinstance(ev, wsps.QuoteEvent):
                    rows[ev.symbol] = ev.quote
                elif isinstance(ev, wsps.StatusEvent):
                    status = ev.state
                elif isinstance(ev, wsps.ErrorEvent):
                    print(f"error {ev.error.code}: {ev.error}", file=sys.stderr)
                    continue
                # Redraw in place on a terminal; one table per update otherwise (pipes, logs).
                print(("\x1b[H\x1b[J" if tty else "") + render(rows, status), flush=True)

        try:
            await asyncio.wait_for(show(), seconds if seconds > 0 else None)
        except asyncio.TimeoutError:
            pass


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="ws://127.0.0.1:8080/ws")
    p.add_argument("--seconds", type=float, default=0, help="stop after this many seconds (0: run until Ctrl-C)")
    p.add_argument("symbols", nargs="*", default=["AAPL", "MSFT", "GOOG"])
    a = p.parse_args()
    try:
        asyncio.run(main(a.url, a.symbols, a.seconds, sys.stdout.isatty()))
    except KeyboardInterrupt:
        pass
