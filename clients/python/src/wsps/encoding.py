"""The encoding of a WebSocket's frames (docs/protocol.md, Binary encoding).

Which subprotocols the client asks for, and reading and writing frames: the gateway chooses; a
text message is JSON, a binary one Protobuf of wsps.v1.proto (proto_codec.py), both read into the
same dicts, so nothing past this module knows which encoding the connection speaks.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.message import DecodeError

from .proto_codec import decode_server_frame, encode_client_frame
from .protocol import Subprotocol

ENCODINGS = ("auto", "json")
"""``auto``: Protobuf where the gateway speaks it, else JSON; ``json``: JSON only."""


def subprotocols(encoding: str) -> list[str]:
    """The subprotocols a WebSocket asks for, best first."""
    if encoding == "json":
        return [Subprotocol.JSON.value]
    return [Subprotocol.PROTO.value, Subprotocol.JSON.value]


def read_frame(data: str | bytes) -> Any:
    """A server frame from a message, whichever encoding it came in. Raises ``ValueError`` on one
    that is neither JSON nor a ServerFrame."""
    if isinstance(data, str):
        return json.loads(data)
    try:
        return decode_server_frame(bytes(data))
    except DecodeError as err:
        raise ValueError(f"not a wsps.v1 ServerFrame: {err}") from err


def write_frame(frame: dict[str, Any], binary: bool) -> str | bytes:
    """A client frame as a message: Protobuf once the gateway showed it speaks it (its first binary
    frame on a ``wsps.v1.proto`` socket), JSON before and otherwise. A gateway that knows no
    subprotocols echoes the first one asked and speaks JSON: the client keeps to JSON with it."""
    return encode_client_frame(frame) if binary else json.dumps(frame)
