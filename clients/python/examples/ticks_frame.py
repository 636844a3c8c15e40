"""Every tick of some symbols, collected as columns a pandas DataFrame takes as is.

    python examples/ticks_frame.py [--url ws://127.0.0.1:8080/ws] [--seconds 10] [--csv FILE] AAPL MSFT

Distinct delivery: every tick in order, none merged, resumed with no tick
lost through a gateway drain (a ``RecoveryEvent(recovered=False)`` says
where history could not cover a hole, and is counted). With pandas
installed it prints ``DataFrame.describe()``; without, the columns as CSV
(to ``--csv`` or standard output): ``pandas.read_csv`` reads them back.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import sys
from typing import Any

import wsps

FIELDS = ("symbol", "seq", "ts", "bid", "ask", "last", "bidSize", "askSize", "volume")


async def collect(url: str, symbols: list[str], seconds: float) -> tuple[dict[str, list[Any]], int]:
    """Columns (field -> values, one per tick) and how many resumed symbols lost ticks."""
    columns: dict[str, list[Any]] = {f: [] for f in FIELDS}
    not_recovered = 0
    async with wsps.Client(url) as client:
        await client.subscribe(symbols, mode="distinct")

        async def read() -> None:
            nonlocal not_recovered
            async for ev in client:
                if isinstance(ev, wsps.QuoteEvent):
                    for f in FIELDS:
                        columns[f].append(ev.symbol if f == "symbol" else ev.quote.get(f))
                elif isinstance(ev, wsps.RecoveryEvent) and not ev.recovered:
                    not_recovered += 1

        try:
            await asyncio.wait_for(read(), seconds)
        except asyncio.TimeoutError:
            pass
    return columns, not_recovered


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="ws://127.0.0.1:8080/ws")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--csv", help="write the ticks as CSV to this file (default: standard output, without pandas)")
    p.add_argument("symbols", nargs="*", default=["AAPL", "MSFT"])
    a = p.parse_args()
    columns, not_recovered = asyncio.run(collect(a.url, a.symbols, a.seconds))
    n = len(columns["seq"])
    print(f"{n} ticks of {len(a.symbols)} symbols in {a.seconds:g} s; symbols resumed without their missed ticks: {not_recovered}", file=sys.stderr)
    try:
        import pandas as pd  # type: ignore[import-not-found]
    except ImportError:
        pd = None
    if pd is not None and not a.csv:
        frame = pd.DataFrame(columns)
        frame["ts"] = pd.to_datetime(frame["ts"], unit="ms")
        print(frame.groupby("symbol")[["bid", "ask", "last"]].describe())
        return
    out = open(a.csv, "w", newline="") if a.csv else sys.stdout
    try:
        w = csv.writer(out)
        w.writerow(FIELDS)
        w.writerows(zip(*(columns[f] for f in FIELDS)))
    finally:
        if a.csv:
            out.close()


if __name__ == "__main__":
    main()
