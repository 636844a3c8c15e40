"""The real stack (tests/stack.js: redis, a fetcher, two gateways) as a pytest fixture.

Each test that asks for ``stack`` gets a fresh one (a drain test terminates a
gateway). Node comes from PATH (`make test-python` puts $WSPS_CACHE/bin first).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

import wsps

STACK_JS = Path(__file__).with_name("stack.js")
START_TIMEOUT = 120.0


class Stack:
    def __init__(self, proc: subprocess.Popen[str], info: dict) -> None:
        self.proc = proc
        self.gateways: list[str] = info["gateways"]
        self._lines: list[dict] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                self._lines.append(msg)
                self._cond.notify_all()

    def terminate_gateway(self, index: int, timeout: float = 30.0) -> None:
        """SIGTERM gateway ``index`` (through the script) and wait until it has exited."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"term {index}\n")
        self.proc.stdin.flush()
        with self._cond:
            if not self._cond.wait_for(lambda: {"terminated": index} in self._lines, timeout):
                raise TimeoutError(f"gateway {index} did not exit")


@pytest.fixture
def stack() -> Iterator[Stack]:
    yield from _start()


AUTH_SECRET = "hs256-secret-for-the-python-sdk-tests"


@pytest.fixture
def auth_stack() -> Iterator[Stack]:
    """The stack with auth on: the gateways want HS256 tokens signed with AUTH_SECRET (see ``token``)."""
    yield from _start("--auth-secret", AUTH_SECRET)


def token(exp_in: float, **claims: object) -> str:
    """A JWT the ``auth_stack`` gateways accept for ``exp_in`` seconds (HS256, by hand: no JWT library needed)."""
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64(json.dumps({**claims, "exp": int(time.time() + exp_in)}).encode())
    signature = hmac.new(AUTH_SECRET.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


def _start(*args: str) -> Iterator[Stack]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH (run through `make test-python`)")
    proc = subprocess.Popen(
        [node, str(STACK_JS), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, text=True,
        env={**os.environ},
    )
    try:
        assert proc.stdout is not None
        result: dict = {}

        def first_line() -> None:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if line:
                result.update(json.loads(line))

        t = threading.Thread(target=first_line, daemon=True)
        t.start()
        t.join(START_TIMEOUT)
        if "gateways" not in result:
            raise RuntimeError("tests/stack.js did not start (see its output above)")
        yield Stack(proc, result)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()  # the script stops everything when stdin ends
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# Helpers the test files share.
async def wait_until(pred: Callable[[], bool], timeout: float = 20.0) -> None:
    async def poll() -> None:
        while not pred():
            await asyncio.sleep(0.05)
    await asyncio.wait_for(poll(), timeout)


def quotes_of(events: list[wsps.Event], symbol: str) -> list[wsps.QuoteEvent]:
    return [e for e in events if isinstance(e, wsps.QuoteEvent) and e.symbol == symbol]


async def final_close_code(client: wsps.Client) -> int | None:
    """Connects ``client`` without waiting and reads its events until the server ends the connection
    for good: the iteration must raise ``ConnectionClosed``; returns its close code."""
    stream = client.events()  # before connecting, so that no event is missed
    await client.connect(wait=False)
    with pytest.raises(wsps.ConnectionClosed) as info:
        async for _ev in stream:
            pass
    return info.value.close_code
