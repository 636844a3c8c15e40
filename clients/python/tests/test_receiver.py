from wsps.receiver import Cursor, Outcome, QuoteReceiver, continues


def snap(seq: int, **fields: object) -> dict:
    return {"symbol": "AAPL", "seq": seq, "ts": 1, "bid": 1.0, "ask": 2.0, **fields}


def test_continues_on_seq_minus_one_or_base() -> None:
    assert continues({"seq": 5}, 4)
    assert not continues({"seq": 5}, 3)
    assert continues({"seq": 9, "base": 4}, 4)
    assert not continues({"seq": 5, "base": 3}, 4)


def test_snap_replaces_and_delta_merges() -> None:
    r = QuoteReceiver()
    r.snap(snap(10, epoch="e1"))
    before = r.quote("AAPL")
    assert r.delta({"symbol": "AAPL", "seq": 11, "ts": 2, "bid": 1.5}) is Outcome.APPLIED
    q = r.quote("AAPL")
    assert q == {"symbol": "AAPL", "seq": 11, "ts": 2, "bid": 1.5, "ask": 2.0, "epoch": "e1"}
    assert before is not q and before["seq"] == 10
    r.snap(snap(20))
    assert r.seq("AAPL") == 20 and r.quote("AAPL")["bid"] == 1.0


def test_delta_on_base_drops_base_field() -> None:
    r = QuoteReceiver()
    r.snap(snap(10))
    assert r.delta({"symbol": "AAPL", "seq": 14, "base": 10, "ts": 3, "ask": 3.0}) is Outcome.APPLIED
    assert "base" not in r.quote("AAPL") and r.seq("AAPL") == 14


def test_gap_stale_no_snapshot_change_nothing() -> None:
    r = QuoteReceiver()
    assert r.delta({"symbol": "AAPL", "seq": 1}) is Outcome.NO_SNAPSHOT
    r.snap(snap(10))
    assert r.delta({"symbol": "AAPL", "seq": 12}) is Outcome.GAP
    assert r.delta({"symbol": "AAPL", "seq": 10}) is Outcome.STALE
    assert r.delta({"symbol": "AAPL", "seq": 9}) is Outcome.STALE
    assert r.delta({"symbol": "AAPL", "seq": 15, "base": 9}) is Outcome.STALE
    assert r.seq("AAPL") == 10


def test_resync_drops_deltas_until_snap() -> None:
    r = QuoteReceiver()
    r.snap(snap(10))
    r.resync("AAPL", 5.0)
    assert not r.current("AAPL") and r.resyncing_since("AAPL") == 5.0
    assert r.delta({"symbol": "AAPL", "seq": 11}) is Outcome.RESYNCING
    assert r.seq("AAPL") == 10  # still readable meanwhile
    r.snap(snap(30))
    assert r.current("AAPL") and r.resyncing_since("AAPL") is None
    assert r.delta({"symbol": "AAPL", "seq": 31}) is Outcome.APPLIED


def test_cursor_needs_seq_and_epoch_and_follows_delta_epoch() -> None:
    r = QuoteReceiver()
    assert r.cursor("AAPL") is None
    r.snap(snap(10))
    assert r.cursor("AAPL") is None  # a gateway without history
    r.snap(snap(10, epoch="e1"))
    assert r.cursor("AAPL") == Cursor(10, "e1")
    r.delta({"symbol": "AAPL", "seq": 11, "epoch": "e2"})
    assert r.cursor("AAPL") == Cursor(11, "e2")
    assert r.cursor("AAPL").to_wire() == {"seq": 11, "epoch": "e2"}
    r.snap(snap(40))  # a snap without epoch forgets it
    assert r.cursor("AAPL") is None


def test_forget_and_clear() -> None:
    r = QuoteReceiver()
    r.snap(snap(1, epoch="e"))
    r.snap({"symbol": "MSFT", "seq": 3})
    r.resync("MSFT")
    r.forget("MSFT")
    assert len(r) == 1 and r.resyncing_since("MSFT") is None
    r.clear()
    assert len(r) == 0 and r.cursor("AAPL") is None
