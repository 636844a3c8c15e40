"""Every failure the client reports has a code (protocol.ErrorCode); match on it, never on the message."""

from __future__ import annotations

from typing import Any, Mapping


class WspsError(Exception):
    """A coded error: a gateway ``error`` frame, or one of the client's own (BAD_SERVER_FRAME, ...)."""

    def __init__(self, code: str, message: str = "", *, symbols: list[str] | None = None, id: Any = None,
                 bars: str | None = None) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
        self.symbols = list(symbols or [])
        self.id = id
        self.bars = bars
        """An SSE stream refused for its bars: their interval (docs/protocol.md, Server-Sent Events)."""

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> "WspsError":
        symbols = frame.get("symbols")
        return cls(
            str(frame.get("code", "")),
            str(frame.get("message", "")),
            symbols=list(symbols) if isinstance(symbols, list) else None,
            id=frame.get("id"),
            bars=frame["bars"] if isinstance(frame.get("bars"), str) else None,
        )


class ConnectionClosed(WspsError):
    """The client stopped for good: ``close()`` was called, or the server closed with a no-reconnect code."""

    def __init__(self, close_code: int | None, reason: str = "") -> None:
        super().__init__("CLOSED", f"connection closed ({close_code}) {reason}".strip())
        self.close_code = close_code
        self.reason = reason
