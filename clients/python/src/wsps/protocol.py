"""Constants of docs/protocol.md, as services/protocol/index.js names them.

Copied by hand; tests/test_protocol_constants.py checks them against that file (through node).
"""

from __future__ import annotations

import enum

PROTOCOL_VERSION = 1
MAX_SYMBOLS_PER_REQUEST = 100
"""The gateway rejects sub/unsub requests with more symbols than this."""
BAR_INTERVALS = {"1s": 1000, "1m": 60_000, "5m": 300_000}
"""The bar intervals a ``sub`` may name as ``bars``, and their length in ms (docs/protocol.md, Bars)."""
MAX_BACKFILL = 500
"""Most closed bars a bars ``sub`` may ask for."""
DEFAULT_BACKFILL = 50
"""Closed bars sent first when a bars ``sub`` names no ``backfill``."""


class Subprotocol(str, enum.Enum):
    """The WebSocket subprotocols of v1, one per encoding of the same frames (docs/protocol.md, Binary encoding)."""

    JSON = "wsps.v1.json"
    PROTO = "wsps.v1.proto"


class ClientOp(str, enum.Enum):
    SUB = "sub"
    UNSUB = "unsub"
    PING = "ping"
    AUTH = "auth"


class ServerOp(str, enum.Enum):
    HELLO = "hello"
    ACK = "ack"
    ERROR = "error"
    SNAP = "snap"
    QUOTES = "q"
    PONG = "pong"
    BARS = "bars"
    BAR = "bar"
    BOOK = "book"
    """An order book's snapshot at a depth: replaces what the client holds of it (wsps.book.BookReceiver)."""
    LEVELS = "levels"
    """The levels of a book's window that changed, applying on top of seq ``prev`` or later."""
    STALE = "stale"
    """The gateway's feed of ``symbols`` is interrupted: what the client holds is from ``since`` (ms since the epoch) or before."""
    FRESH = "fresh"
    """The ``symbols`` are live again (what was missed came before it, as gap fill, or a ``snap`` marked ``recovered: false``)."""


class Mode(str, enum.Enum):
    MERGE = "merge"
    DISTINCT = "distinct"


class ErrorCode(str, enum.Enum):
    """Codes of the gateway's ``error`` frames, plus the client's own (last block)."""

    BAD_JSON = "BAD_JSON"
    BAD_FRAME = "BAD_FRAME"
    BAD_OP = "BAD_OP"
    BAD_REQUEST = "BAD_REQUEST"
    BAD_SYMBOL = "BAD_SYMBOL"
    BAD_MODE = "BAD_MODE"
    BAD_RATE = "BAD_RATE"
    BAD_SINCE = "BAD_SINCE"
    BAD_INTERVAL = "BAD_INTERVAL"
    """A bars sub or unsub named an interval that is not one of BAR_INTERVALS."""
    BAD_BARS = "BAD_BARS"
    """A bars sub with mode, maxRate or since, or a backfill not an integer 0-500; or bars over SSE (WebSocket only)."""
    BAD_BOOK = "BAD_BOOK"
    """A book sub or unsub's ``book`` is not one of BOOK_DEPTHS, or comes with mode, maxRate, since, bars or delayed."""
    NO_BOOK = "NO_BOOK"
    """A book sub named symbols without a book (``symbols`` lists them); the others were subscribed."""
    TOO_MANY_SUBSCRIPTIONS = "TOO_MANY_SUBSCRIPTIONS"
    RATE_LIMITED = "RATE_LIMITED"
    NOT_ENTITLED = "NOT_ENTITLED"
    DELAYED_ONLY = "DELAYED_ONLY"
    """A sub asked for real-time (``delayed: false``) where the token grants delayed only."""
    BAD_GRANT = "BAD_GRANT"
    """The token's delayed claim has the wrong shape; the token was rejected (4001)."""
    DRAINING = "DRAINING"
    BROKER_UNREACHABLE = "BROKER_UNREACHABLE"
    UNAUTHORIZED = "UNAUTHORIZED"
    AUTH_REQUIRED = "AUTH_REQUIRED"
    GRANT_REVOKED = "GRANT_REVOKED"
    BAD_IDENTITY = "BAD_IDENTITY"
    """The token names no user (while sessions per user are capped), a bad user class, or a refresh another user; rejected (4001)."""
    SESSION_LIMIT = "SESSION_LIMIT"
    """The user holds its cap of sessions on the fleet already; a 4011 close follows."""
    TOO_MANY_CONNECTIONS = "TOO_MANY_CONNECTIONS"
    GATEWAY_FULL = "GATEWAY_FULL"
    BAD_ORIGIN = "BAD_ORIGIN"
    INTERNAL = "INTERNAL"
    # The client's own, as the JS client names them.
    BAD_SERVER_FRAME = "BAD_SERVER_FRAME"
    """The server sent a frame that is not a JSON object with a known shape; the connection stays."""
    TOKEN_FAILED = "TOKEN_FAILED"
    """The token callable raised."""
    CLOSED = "CLOSED"
    """The client (or a no-reconnect close) ended the connection for good."""


class CloseCode(enum.IntEnum):
    NORMAL = 1000
    PROTOCOL_ERROR = 1002
    ABNORMAL = 1006
    INVALID_PAYLOAD = 1007
    MESSAGE_TOO_BIG = 1009
    INTERNAL_ERROR = 1011
    SERVICE_RESTART = 1012
    TRY_AGAIN_LATER = 1013
    UNAUTHORIZED = 4001
    TOKEN_EXPIRED = 4002
    AUTH_TIMEOUT = 4003
    SLOW_CONSUMER = 4008
    POLICY_VIOLATION = 4009
    OPERATOR_DISCONNECT = 4010
    SESSION_LIMIT = 4011
    SESSION_EVICTED = 4012
    RATE_LIMIT_EXCEEDED = 4029


class Disconnect(enum.Enum):
    """Every way the gateway ends a connection: its close code and the reason sent with it.
    Match on the code (``CloseCode``), never on the reason text: every 1012 is retried alike."""

    SLOW_CONSUMER = (CloseCode.SLOW_CONSUMER, "too slow for too long")
    SEND_BUFFER_FULL = (CloseCode.SLOW_CONSUMER, "send buffer full")
    RATE_LIMIT_EXCEEDED = (CloseCode.RATE_LIMIT_EXCEEDED, "rate limit exceeded")
    POLICY_VIOLATION = (CloseCode.POLICY_VIOLATION, "too many invalid messages")
    UNAUTHORIZED = (CloseCode.UNAUTHORIZED, "token rejected")
    TOKEN_EXPIRED = (CloseCode.TOKEN_EXPIRED, "token expired")
    AUTH_TIMEOUT = (CloseCode.AUTH_TIMEOUT, "no auth frame in time")
    SERVICE_RESTART = (CloseCode.SERVICE_RESTART, "server restart")
    """The gateway is draining: reconnect elsewhere."""
    NOT_RESTORED = (CloseCode.SERVICE_RESTART, "subscriptions not restored")
    """The gateway could not restore a subscribed symbol's Redis channel in time: reconnect elsewhere and resume."""
    ISOLATED = (CloseCode.SERVICE_RESTART, "cut off from the broker")
    """The gateway lost Redis while another gateway still reaches it: reconnect elsewhere and resume."""
    OPERATOR_DISCONNECT = (CloseCode.OPERATOR_DISCONNECT, "disconnected by an operator")
    """An operator closed the connection or its user's (the admin API): do not reconnect on your own."""
    SESSION_LIMIT = (CloseCode.SESSION_LIMIT, "too many sessions of this user")
    """The user holds its cap of sessions on the fleet (policy refuse): do not reconnect on your own."""
    SESSION_EVICTED = (CloseCode.SESSION_EVICTED, "replaced by a newer session of this user")
    """A newer session of the user took this one's place (policy close-oldest): do not reconnect on your own."""
    SESSION_UNCOUNTED = (CloseCode.INTERNAL_ERROR, "sessions not counted")
    """The user's sessions could not be counted (Redis did not answer): reconnect with backoff."""

    @property
    def code(self) -> int:
        return int(self.value[0])

    @property
    def reason(self) -> str:
        return str(self.value[1])


AUTH_CLOSE_CODES = frozenset({CloseCode.UNAUTHORIZED, CloseCode.TOKEN_EXPIRED, CloseCode.AUTH_TIMEOUT})
"""Closes that only a new token can get past."""
NO_RECONNECT_CODES = frozenset({CloseCode.NORMAL, CloseCode.OPERATOR_DISCONNECT, CloseCode.SESSION_LIMIT, CloseCode.SESSION_EVICTED, *AUTH_CLOSE_CODES})
"""Closes after which the client does not reconnect (unless it has a token source and the code is an auth one)."""
