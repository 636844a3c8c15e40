"""The real stack (tests/stack.js: redis, a fetcher, two gateways) as a pytest fixture.

Each test that asks for ``stack`` gets a fresh one (a drain test terminates a
gateway). Node comes from PATH (`make test-python` puts $WSPS_CACHE/bin first).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Iterator

import pytest

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
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH (run through `make test-python`)")
    proc = subprocess.Popen(
        [node, str(STACK_JS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, text=True,
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
