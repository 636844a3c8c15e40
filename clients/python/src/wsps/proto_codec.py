"""The binary encoding of protocol v1 (wsps.v1.proto, docs/protocol.md "Binary encoding").

A server frame's Protobuf bytes to the dict its JSON parses to, and a client frame's dict to its
bytes: the same mapping as services/protocol/proto-codec.js, so the rest of the client never knows
which encoding a connection speaks. The message classes are generated (``wsps_v1_pb2``, written by
tools/proto-generate.js); this module only maps the JSON frame's shape onto them.
"""

from __future__ import annotations

import json
from typing import Any

from . import wsps_v1_pb2 as pb

DECIMAL_FIELDS = ("bid", "ask", "last", "bidSize", "askSize", "volume", "open", "high", "low", "prevClose")
"""Quote fields that are decimal strings on the binary wire and numbers in JSON."""

_PROTO_NAMES = {"bidSize": "bid_size", "askSize": "ask_size", "prevClose": "prev_close"}
_BAR_DECIMALS = ("o", "h", "l", "c", "v")


def _number(text: str) -> int | float:
    """A decimal string of the binary wire as the number its JSON text is (int or float, as json reads it)."""
    return json.loads(text)


def _double(v: float) -> int | float:
    """A double field as JSON would give it: an integral value is an int."""
    return int(v) if v.is_integer() else v


def _id_into(frame: dict[str, Any], msg: Any) -> None:
    which = msg.WhichOneof("id")
    if which == "id_number":
        frame["id"] = _double(msg.id_number)
    elif which == "id_string":
        frame["id"] = msg.id_string


def _id_out(msg: Any, frame: dict[str, Any]) -> None:
    rid = frame.get("id")
    if isinstance(rid, bool) or rid is None:
        return
    if isinstance(rid, (int, float)):
        msg.id_number = float(rid)
    elif isinstance(rid, str):
        msg.id_string = rid


def _quote(m: Any) -> dict[str, Any]:
    q: dict[str, Any] = {"symbol": m.symbol, "seq": m.seq, "ts": _double(m.ts)}
    if m.HasField("base"):
        q["base"] = m.base
    for f in DECIMAL_FIELDS:
        name = _PROTO_NAMES.get(f, f)
        if m.HasField(name):
            q[f] = _number(getattr(m, name))
    if m.HasField("epoch"):
        q["epoch"] = m.epoch
    if m.HasField("delayed"):
        q["delayed"] = m.delayed
    return q


def _bar(m: Any) -> dict[str, Any]:
    b: dict[str, Any] = {"t": m.t}
    for f in _BAR_DECIMALS:
        b[f] = _number(getattr(m, f))
    b["n"] = m.n
    return b


def _levels(levels: Any) -> list[list[str]]:
    return [[lv.price, lv.size] for lv in levels]


def decode_server_frame(data: bytes) -> dict[str, Any]:
    """A server frame's bytes as the dict its JSON would be. A case this client does not know has no
    ``op`` (as an unknown op in JSON). Raises ``google.protobuf.message.DecodeError`` on bytes that are
    not a ServerFrame."""
    frame = pb.ServerFrame.FromString(data)
    case = frame.WhichOneof("frame")
    f: dict[str, Any] = {"op": case}
    if case == "hello":
        m = frame.hello
        f.update(v=m.v, node=m.node, heartbeatMs=m.heartbeat_ms, limits={k: _double(v) for k, v in m.limits.items()})
        if m.HasField("expires_in_ms"):
            f["expiresInMs"] = m.expires_in_ms
    elif case == "ack":
        m = frame.ack
        _id_into(f, m)
        f["symbols"] = list(m.symbols)
        if m.HasField("mode"):
            f["mode"] = m.mode
        if m.HasField("max_rate"):
            f["maxRate"] = _double(m.max_rate)
        if m.HasField("bars"):
            f["bars"] = m.bars
        if m.HasField("book"):
            f["book"] = m.book
        if m.HasField("expires_in_ms"):
            f["expiresInMs"] = m.expires_in_ms
        if m.HasField("delay_ms"):
            f["delayMs"] = m.delay_ms
        if m.HasField("recovered"):
            f["recovered"] = dict(m.recovered.symbols)
        if m.HasField("delayed"):
            f["delayed"] = list(m.delayed.symbols)
    elif case == "error":
        m = frame.error
        _id_into(f, m)
        f["code"] = m.code
        if m.HasField("message"):
            f["message"] = m.message
        if m.HasField("bars"):
            f["bars"] = m.bars
        if m.HasField("symbols"):
            f["symbols"] = list(m.symbols.symbols)
    elif case == "snap":
        f["quotes"] = [_quote(q) for q in frame.snap.quotes]
        if frame.snap.HasField("recovered"):
            f["recovered"] = frame.snap.recovered
    elif case == "q":
        f["quotes"] = [_quote(q) for q in frame.q.quotes]
    elif case == "bars":
        m = frame.bars
        f.update(symbol=m.symbol, interval=m.interval, bars=[_bar(b) for b in m.bars])
        if m.HasField("current"):
            f["current"] = _bar(m.current)
        f["complete"] = m.complete
        if m.HasField("delayed"):
            f["delayed"] = m.delayed
    elif case == "bar":
        m = frame.bar
        f.update(symbol=m.symbol, interval=m.interval, bar=_bar(m.bar), closed=m.closed)
        if m.HasField("delayed"):
            f["delayed"] = m.delayed
    elif case == "book":
        m = frame.book
        f.update(symbol=m.symbol, depth=m.depth, seq=m.seq)
        if m.HasField("epoch"):
            f["epoch"] = m.epoch
        f["ts"] = _double(m.ts)
        if m.HasField("sync"):
            f["sync"] = m.sync
        f.update(bids=_levels(m.bids), asks=_levels(m.asks), checksum=m.checksum)
    elif case == "levels":
        m = frame.levels
        f.update(symbol=m.symbol, depth=m.depth, seq=m.seq, prev=m.prev, ts=_double(m.ts), bids=_levels(m.bids), asks=_levels(m.asks), checksum=m.checksum)
    elif case == "pong":
        _id_into(f, frame.pong)
    elif case == "stale":
        f.update(symbols=list(frame.stale.symbols), since=_double(frame.stale.since))
    elif case == "fresh":
        f["symbols"] = list(frame.fresh.symbols)
    return f


def encode_client_frame(frame: dict[str, Any]) -> bytes:
    """A client frame (``sub``, ``unsub``, ``ping``, ``auth``) as its ClientFrame bytes."""
    op = frame.get("op")
    out = pb.ClientFrame()
    if op in ("sub", "unsub"):
        m = out.sub if op == "sub" else out.unsub
        m.SetInParent()
        _id_out(m, frame)
        m.symbols.extend(frame.get("symbols", []))
        if "mode" in frame:
            m.mode = frame["mode"]
        if "maxRate" in frame:
            m.max_rate = float(frame["maxRate"])
        if "delayed" in frame:
            m.delayed = bool(frame["delayed"])
        if "bars" in frame:
            m.bars = frame["bars"]
        if "backfill" in frame:
            m.backfill = int(frame["backfill"])
        if "book" in frame:
            m.book = int(frame["book"])
        for symbol, c in (frame.get("since") or {}).items():
            cursor = m.since[symbol]
            cursor.seq = int(c["seq"])
            cursor.epoch = c["epoch"]
            if "held" in c:
                cursor.held = bool(c["held"])
    elif op == "ping":
        out.ping.SetInParent()
        _id_out(out.ping, frame)
    elif op == "auth":
        out.auth.SetInParent()
        _id_out(out.auth, frame)
        out.auth.token = frame.get("token", "")
    else:
        raise TypeError(f"no binary encoding for client op {op!r}")
    return out.SerializeToString()
