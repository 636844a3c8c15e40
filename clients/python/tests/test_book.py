"""wsps.book: the checksum of docs/protocol.md's examples, and each receiver rule broken once (as services/protocol/test/book-receiver.test.js)."""

from __future__ import annotations

import random

from wsps.book import BookReceiver, BookVerdict, OrderBook, book_checksum

S = "BTC-USD"
SNAPSHOT = {"op": "book", "symbol": S, "depth": 10, "seq": 41, "epoch": "hohrttbiv1", "ts": 1,
            "bids": [["100.5", "2"], ["100.4", "1.25"]], "asks": [["100.6", "3"]], "checksum": 764765537}
AFTER_42 = ([("100.4", "1.25"), ("100.3", "4")], [("100.6", "3")])


def levels(seq: int, prev: int, bids: list, after: tuple = AFTER_42, **extra: object) -> dict:
    return {"op": "levels", "symbol": S, "depth": 10, "seq": seq, "prev": prev, "bids": bids, "asks": [], "checksum": book_checksum(*after), **extra}


def holding() -> BookReceiver:
    r = BookReceiver()
    r.want(S, 10)
    assert r.frame(SNAPSHOT) is BookVerdict.APPLIED
    return r


DELTA_42 = [["100.5", "0"], ["100.3", "4"]]


def test_the_documented_checksums() -> None:
    assert book_checksum(SNAPSHOT["bids"], SNAPSHOT["asks"]) == 764765537
    assert book_checksum([], []) == 2343686810
    assert levels(42, 41, DELTA_42)["checksum"] == 2463534139


def test_the_documented_delta_applies() -> None:
    r = holding()
    before = r.book(S)
    assert r.frame(levels(42, 41, DELTA_42)) is BookVerdict.APPLIED
    held = r.book(S)
    assert held is not None and (held.seq, list(held.bids), list(held.asks)) == (42, *AFTER_42)
    assert before is not None and before.seq == 41


def test_prev_rule_and_epoch() -> None:
    assert holding().frame(levels(50, 30, DELTA_42)) is BookVerdict.APPLIED
    for seq, prev in [(43, 42), (41, 40), (40, 39)]:
        r = holding()
        held = r.book(S)
        assert r.frame(levels(seq, prev, DELTA_42)) is BookVerdict.GAP
        assert r.book(S) is held
    assert holding().frame(levels(42, 41, DELTA_42, epoch="other")) is BookVerdict.GAP
    fresh = BookReceiver()
    fresh.want(S, 10)
    assert fresh.frame(levels(42, 41, DELTA_42)) is BookVerdict.GAP


def test_checksum_mismatch_and_sync_false() -> None:
    assert holding().frame({**levels(42, 41, DELTA_42), "checksum": 2463534138}) is BookVerdict.CHECKSUM_MISMATCH
    assert holding().frame(levels(42, 41, [["100.3", "4"]])) is BookVerdict.CHECKSUM_MISMATCH
    r = holding()
    gone = {"op": "book", "symbol": S, "depth": 10, "seq": 41, "epoch": "hohrttbiv1", "sync": False, "bids": [], "asks": [], "checksum": 2343686810}
    assert r.frame(gone) is BookVerdict.OUT_OF_SYNC
    held = r.book(S)
    assert held is not None and not held.sync and held.bids == ()
    assert r.frame(levels(42, 41, [["1", "1"]], ([("1", "1")], []))) is BookVerdict.GAP


def test_interrupt_holds_every_synced_book_out_of_sync() -> None:
    r = holding()
    r.want("ETH-USD", 25)
    assert r.interrupt() == [S]
    held = r.book(S)
    assert held is not None and (held.sync, held.bids, held.asks, held.seq) == (False, (), (), 41)
    assert r.interrupt() == []
    assert r.frame(levels(42, 41, DELTA_42)) is BookVerdict.GAP
    assert r.frame(SNAPSHOT) is BookVerdict.APPLIED


def test_resync_and_ignored() -> None:
    r = holding()
    r.resync(S)
    assert r.frame(levels(42, 41, DELTA_42)) is BookVerdict.RESYNCING
    assert r.frame({**SNAPSHOT, "seq": 60}) is BookVerdict.APPLIED
    assert r.frame({**levels(61, 60, DELTA_42), "depth": 25}) is BookVerdict.IGNORED
    assert r.frame({**levels(61, 60, DELTA_42), "symbol": "ETH-USD"}) is BookVerdict.IGNORED


def test_random_windows_like_the_gateway() -> None:
    rnd = random.Random(11)
    ref = OrderBook()
    ref.reset([(str(100 - i / 4), "1") for i in range(1, 31)], [(str(100 + i / 4), "1") for i in range(1, 31)])
    r = BookReceiver()
    r.want(S, 10)
    window = ref.top(10)
    assert r.frame({"op": "book", "symbol": S, "depth": 10, "seq": 1, "epoch": "e", "bids": window[0], "asks": window[1], "checksum": book_checksum(*window)}) is BookVerdict.APPLIED
    window_seq, sent = 1, 0
    for seq in range(2, 600):
        side = rnd.random() < 0.5
        off = 1 + rnd.randrange(40) / 4
        level = (str(100 - off if side else 100 + off), "0" if rnd.random() < 0.3 else str(rnd.randrange(1, 100)))
        ref.apply([level] if side else [], [] if side else [level])
        nxt = ref.top(10)
        delta = [_delta(window[i], nxt[i]) for i in (0, 1)]
        if not delta[0] and not delta[1]:
            continue
        frame = {"op": "levels", "symbol": S, "depth": 10, "seq": seq, "prev": window_seq, "bids": delta[0], "asks": delta[1], "checksum": book_checksum(*nxt)}
        assert r.frame(frame) is BookVerdict.APPLIED
        window, window_seq, sent = nxt, seq, sent + 1
        held = r.book(S)
        assert held is not None and (list(held.bids), list(held.asks)) == nxt
    assert sent > 100


def _delta(before: list, after: list) -> list:
    now = dict(after)
    was = dict(before)
    return [(p, "0") for p, _ in before if p not in now] + [(p, s) for p, s in after if was.get(p) != s]
