"""When and where the next connection attempt goes (ported from the JS client's client/backoff.js).

Exponential backoff with equal jitter, reset by a connection that stayed
live; a drain (1012) retried at once, only jittered; the next URL of the
list each time.
"""

from __future__ import annotations

import random as _random
import time
from typing import Callable, Sequence

from .protocol import CloseCode


def backoff_delay(attempt: int, initial: float, maximum: float, random: Callable[[], float] = _random.random) -> float:
    """Seconds before retry number ``attempt`` (0 first): between half and all of the capped ceiling."""
    ceiling: float = min(maximum, initial * 2.0 ** min(attempt, 30))
    return ceiling / 2 + random() * ceiling / 2


class Retry:
    """Counts failed attempts in a row and rotates over the URLs."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        restart_jitter: float = 0.5,
        stable: float = 5.0,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """
        :param urls: tried in turn
        :param initial_backoff: seconds before the first retry (before jitter)
        :param max_backoff: cap of the backoff, seconds
        :param restart_jitter: a 1012 close is retried within this many seconds
        :param stable: a connection live this long resets the backoff
        """
        self._urls = list(urls)
        self._initial = initial_backoff
        self._max = max_backoff
        self._jitter = restart_jitter
        self._stable = stable
        self._random = random
        self._clock = clock
        self._index = 0
        self.attempt = 0
        self._live_since: float | None = None

    @property
    def url(self) -> str:
        return self._urls[self._index % len(self._urls)]

    def live(self) -> None:
        """The connection went live (got its hello)."""
        self._live_since = self._clock()

    def next(self, code: int | None) -> float:
        """The connection closed with ``code`` (None: never got one): the delay before the next attempt."""
        if self._live_since is not None and self._clock() - self._live_since >= self._stable:
            self.attempt = 0
        self._live_since = None
        if code == CloseCode.SERVICE_RESTART:
            # The gateway drains on purpose and spreads its closes already: come back at once, elsewhere.
            delay = self._random() * self._jitter
        else:
            delay = backoff_delay(self.attempt, self._initial, self._max, self._random)
            self.attempt += 1
        self._index = (self._index + 1) % len(self._urls)
        return delay
