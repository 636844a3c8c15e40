"""The examples in clients/python/examples, run as a user runs them, against the real stack."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from conftest import Stack

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(stack: Stack, script: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--url", stack.gateways[0], *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )


def test_live_table_prints_a_row_per_symbol(stack: Stack) -> None:
    r = run(stack, "live_table.py", "--seconds", "3", "AAPL", "MSFT")
    assert r.returncode == 0, r.stderr
    assert "[live]" in r.stdout, r.stdout[-2000:]
    last = r.stdout.strip().split("[live]")[-2].strip().splitlines()
    assert last[0].split() == ["symbol", "bid", "ask", "last", "volume", "seq"]
    rows = {line.split()[0]: line.split() for line in last[1:]}
    assert set(rows) == {"AAPL", "MSFT"}, last
    assert all(int(row[-1]) > 0 for row in rows.values()), last


def test_ticks_frame_collects_every_tick_as_columns(stack: Stack, tmp_path: Path) -> None:
    out = tmp_path / "ticks.csv"
    r = run(stack, "ticks_frame.py", "--seconds", "3", "--csv", str(out), "AAPL", "MSFT")
    assert r.returncode == 0, r.stderr
    assert "symbols resumed without their missed ticks: 0" in r.stderr
    rows = list(csv.DictReader(out.open()))
    assert rows and set(rows[0]) == {"symbol", "seq", "ts", "bid", "ask", "last", "bidSize", "askSize", "volume"}
    for symbol in ("AAPL", "MSFT"):
        seqs = [int(x["seq"]) for x in rows if x["symbol"] == symbol]
        assert len(seqs) >= 2, f"{symbol}: {len(seqs)} ticks"
        # Distinct: every tick, in order, none skipped.
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
