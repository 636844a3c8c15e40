"""wsps.protocol copies services/protocol/index.js (the one wire contract) by hand: this reads that
file's values through node (from PATH, as `make test-python` sets it) and checks every copy equals
them, so a code added or changed there fails here until the SDK follows."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from wsps import book, protocol

PROTOCOL_JS = Path(__file__).resolve().parents[3] / "services" / "protocol" / "index.js"

# What the SDK has beyond the contract: the client's own, never sent by a gateway.
CLIENT_ERROR_CODES = {"BAD_SERVER_FRAME", "TOKEN_FAILED", "CLOSED"}

_PRINT = """
const p = await import(process.argv[1])
console.log(JSON.stringify({
  PROTOCOL_VERSION: p.PROTOCOL_VERSION, ClientOp: p.ClientOp, ServerOp: p.ServerOp, DeliveryMode: p.DeliveryMode,
  ErrorCode: p.ErrorCode, CloseCode: p.CloseCode, ClientCloseCode: p.ClientCloseCode, Disconnect: p.Disconnect, Limits: p.Limits, BAR_INTERVALS: p.BAR_INTERVALS,
  AUTH_CLOSE_CODES: p.AUTH_CLOSE_CODES, NO_RECONNECT_CODES: p.NO_RECONNECT_CODES, Subprotocol: p.Subprotocol
}))
"""


@pytest.fixture(scope="module")
def js() -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH (run through `make test-python`)")
    out = subprocess.run([node, "--input-type=module", "-e", _PRINT, PROTOCOL_JS.as_uri()],
                         check=True, capture_output=True, text=True, timeout=30).stdout
    return json.loads(out)


def members(enum: Any) -> dict[str, Any]:
    return {m.name: m.value for m in enum}


def test_the_protocol_file_is_read(js: dict[str, Any]) -> None:
    # A guard for the test itself: an empty or wrong import would make every comparison vacuous.
    assert js["ServerOp"]["HELLO"] == "hello" and js["CloseCode"]["SERVICE_RESTART"] == 1012


def test_server_ops(js: dict[str, Any]) -> None:
    assert members(protocol.ServerOp) == js["ServerOp"]


def test_subprotocols(js: dict[str, Any]) -> None:
    assert members(protocol.Subprotocol) == js["Subprotocol"]


def test_client_ops_and_delivery_modes(js: dict[str, Any]) -> None:
    assert members(protocol.ClientOp) == js["ClientOp"]
    assert members(protocol.Mode) == js["DeliveryMode"]


def test_error_codes(js: dict[str, Any]) -> None:
    ours = members(protocol.ErrorCode)
    assert {k: v for k, v in ours.items() if k not in CLIENT_ERROR_CODES} == js["ErrorCode"]
    assert CLIENT_ERROR_CODES <= ours.keys() and not CLIENT_ERROR_CODES & js["ErrorCode"].keys()


def test_close_codes(js: dict[str, Any]) -> None:
    ours = members(protocol.CloseCode)
    assert {k: v for k, v in ours.items() if k in js["CloseCode"]} == js["CloseCode"]
    # The rest are the client's own (1006 ABNORMAL), with the contract's values (ClientCloseCode).
    client_side = {k: v for k, v in ours.items() if k not in js["CloseCode"]}
    assert client_side and client_side.items() <= js["ClientCloseCode"].items()
    assert sorted(protocol.AUTH_CLOSE_CODES) == sorted(js["AUTH_CLOSE_CODES"])
    assert sorted(protocol.NO_RECONNECT_CODES) == sorted(js["NO_RECONNECT_CODES"])


def test_disconnects(js: dict[str, Any]) -> None:
    assert {d.name: {"code": d.code, "reason": d.reason} for d in protocol.Disconnect} == js["Disconnect"]


def test_limits_and_versions(js: dict[str, Any]) -> None:
    assert protocol.PROTOCOL_VERSION == js["PROTOCOL_VERSION"]
    assert protocol.BAR_INTERVALS == js["BAR_INTERVALS"]
    assert protocol.MAX_SYMBOLS_PER_REQUEST == js["Limits"]["MAX_SYMBOLS_PER_REQUEST"]
    assert protocol.MAX_BACKFILL == js["Limits"]["MAX_BACKFILL"]
    assert protocol.DEFAULT_BACKFILL == js["Limits"]["DEFAULT_BACKFILL"]


def test_book_depths() -> None:
    # services/protocol/book.js, read the same way as index.js.
    node = shutil.which("node")
    assert node is not None
    out = subprocess.run([node, "--input-type=module", "-e", "console.log(JSON.stringify((await import(process.argv[1])).BOOK_DEPTHS))",
                          PROTOCOL_JS.with_name("book.js").as_uri()], check=True, capture_output=True, text=True, timeout=30).stdout
    assert list(book.BOOK_DEPTHS) == json.loads(out)
