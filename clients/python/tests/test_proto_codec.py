"""The binary encoding in Python against the JS reference (services/protocol/proto-codec.js, through
node): the recorded session of services/protocol/test/fixtures/session.json (every frame type) encoded
by the gateway's codec decodes here to the very dicts its JSON parses to, any one field changed is
seen, and the client frames this SDK encodes decode on the gateway's side to their JSON."""

from __future__ import annotations

import base64
import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from wsps.encoding import read_frame, subprotocols, write_frame
from wsps.proto_codec import decode_server_frame, encode_client_frame

PROTOCOL = Path(__file__).resolve().parents[3] / "services" / "protocol"
SESSION = json.loads((PROTOCOL / "test" / "fixtures" / "session.json").read_text())

# Reads JSON lines {"dir": "server"|"client", "frame"|"b64"} and answers one line each:
# a server frame's bytes (base64), or a client frame's bytes decoded.
_CODEC = """
import { readFileSync } from 'node:fs'
const c = await import(process.argv[1])
for (const line of readFileSync(0, 'utf8').split('\\n').filter(Boolean)) {
  const m = JSON.parse(line)
  if (m.dir === 'server') console.log(JSON.stringify(Buffer.from(c.encodeServerFrame(m.frame)).toString('base64')))
  else console.log(JSON.stringify(c.decodeClientFrame(Buffer.from(m.b64, 'base64'))))
}
"""


def js(requests: list[dict[str, Any]]) -> list[Any]:
    """Answers of the JS codec, one per request (one node process for all)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH (run through `make test-python`)")
    out = subprocess.run([node, "--input-type=module", "-e", _CODEC, (PROTOCOL / "proto-codec.js").as_uri()],
                         input="\n".join(json.dumps(r) for r in requests), check=True, capture_output=True, text=True, timeout=60).stdout
    return [json.loads(line) for line in out.splitlines()]


def js_encode_server(frames: list[dict[str, Any]]) -> list[bytes]:
    return [base64.b64decode(b) for b in js([{"dir": "server", "frame": f} for f in frames])]


def leaves(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """Every leaf of a frame (``op`` aside), as the path of keys to it."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not path and k == "op":
                continue
            yield from leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, (*path, i))
    else:
        yield path


def mutate(frame: dict[str, Any], path: tuple) -> dict[str, Any]:
    copied = copy.deepcopy(frame)
    at: Any = copied
    for k in path[:-1]:
        at = at[k]
    v = at[path[-1]]
    at[path[-1]] = (not v) if isinstance(v, bool) else v + 1 if isinstance(v, (int, float)) else f"{v}X"
    return copied


def test_every_server_frame_of_the_session_decodes_to_its_json() -> None:
    for frame, data in zip(SESSION["server"], js_encode_server(SESSION["server"])):
        assert decode_server_frame(data) == frame
        assert read_frame(data) == read_frame(json.dumps(frame))


def test_changing_any_one_field_is_seen() -> None:
    mutants = [(f, mutate(f, p)) for f in SESSION["server"] for p in leaves(f)]
    assert len(mutants) > 150
    for (original, mutant), data in zip(mutants, js_encode_server([m for _, m in mutants])):
        got = decode_server_frame(data)
        assert got == mutant and got != original


def test_client_frames_encoded_here_decode_to_their_json_on_the_gateways_side() -> None:
    frames = SESSION["client"]
    decoded = js([{"dir": "client", "b64": base64.b64encode(encode_client_frame(f)).decode()} for f in frames])
    # JSON's `undefined` keys drop out; what is left must be the frame.
    assert decoded == frames


def test_bytes_that_are_no_server_frame_are_a_value_error() -> None:
    with pytest.raises(ValueError):
        read_frame(b"\xff\xff\xff")


def test_the_client_asks_for_protobuf_first_unless_told_json() -> None:
    assert subprotocols("auto") == ["wsps.v1.proto", "wsps.v1.json"]
    assert subprotocols("json") == ["wsps.v1.json"]
    assert write_frame({"op": "ping"}, False) == '{"op": "ping"}'
    assert isinstance(write_frame({"op": "ping"}, True), bytes)
