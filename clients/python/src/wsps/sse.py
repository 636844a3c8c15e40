"""The SSE fallback transport (``GET /sse``, docs/protocol.md): one stream as the server
frames it carries, for clients whose WebSocket upgrade fails (a proxy strips it).

A small HTTP/1.1 reader on asyncio streams (TLS for https), so the SDK keeps its one
dependency. The watch set, the delivery and the ``since`` cursors are part of the
request; the client sends nothing on the stream, so a change is a new stream (the
Client reopens it). HTTP has no close code: the gateway sends a last ``close`` event
(``{"code","reason"}``); a stream that ends without it was cut (1006).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import ssl
from typing import AsyncIterator, Callable, Mapping, Sequence
from urllib.parse import quote, urlsplit, urlunsplit

from .errors import WspsError
from .protocol import CloseCode, ErrorCode
from .bars import Wanted
from .receiver import Cursor

MAX_ERROR_BODY = 64 * 1024
"""A refusal's JSON body is a few hundred bytes; read no more than this of one."""


def sse_url_for(ws_url: str) -> str:
    """``ws://host/ws`` -> ``http://host/sse``: the SSE endpoint beside a gateway's WebSocket endpoint."""
    u = urlsplit(ws_url)
    scheme = {"wss": "https", "ws": "http"}.get(u.scheme, u.scheme)
    path = u.path[:-3] if u.path.endswith("/ws") else u.path
    return urlunsplit((scheme, u.netloc, path + "/sse", "", ""))


def stream_url(
    ws_url: str, symbols: Sequence[str], mode: str, since: Mapping[str, Cursor], bars: tuple[str, Wanted, list[str]] | None = None
) -> str:
    """The stream's URL: ``symbols``, ``mode`` unless merge, ``since`` as ``SYMBOL:SEQ:EPOCH,...``; and
    the bars it carries (one interval): ``bars``, ``barSymbols``, ``backfill``, ``barDelayed``."""
    query = "symbols=" + quote(",".join(symbols), safe=",")
    if mode != "merge":
        query += "&mode=" + quote(mode)
    if since:
        query += "&since=" + quote(",".join(f"{s}:{c.seq}:{c.epoch}" for s, c in since.items()), safe=",:")
    if bars is not None and bars[2]:
        interval, wanted, bar_symbols = bars
        query += f"&bars={quote(interval)}&barSymbols={quote(','.join(bar_symbols), safe=',')}&backfill={wanted.backfill}"
        if wanted.delayed is not None:
            query += "&barDelayed=" + ("true" if wanted.delayed else "false")
    return sse_url_for(ws_url) + "?" + query


class SseRefused(Exception):
    """The gateway answered the stream's request with an error status (no stream).

    ``error`` is its protocol error frame when the body was one (the gateway
    answered: the transport works), None when something else answered (a
    proxy, no ``/sse`` there). ``close_code`` is what a WebSocket would have
    been closed with: 4001 for 401, 1012 for a draining gateway, 1013 when full.
    """

    def __init__(self, status: int, error: WspsError | None) -> None:
        super().__init__(f"HTTP {status}" + (f" {error.code}" if error else ""))
        self.status = status
        self.error = error
        if status == 401:
            self.close_code: int | None = CloseCode.UNAUTHORIZED.value
        elif status == 503:
            draining = error is not None and error.code == ErrorCode.DRAINING.value
            self.close_code = CloseCode.SERVICE_RESTART.value if draining else CloseCode.TRY_AGAIN_LATER.value
        else:
            self.close_code = None


class SseStream:
    """One open ``GET /sse`` response. ``frames()`` yields each event's data (a server
    frame's JSON); after it ends, ``close_code`` and ``close_reason`` say why."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, chunked: bool, last_event_id: str) -> None:
        self._reader = reader
        self._writer = writer
        self._chunked = chunked
        self.last_event_id = last_event_id
        """The ``id:`` of the last event received: the next stream resumes the count from it."""
        self.close_code: int | None = None
        self.close_reason = ""

    @classmethod
    async def open(cls, url: str, *, token: str | None, last_event_id: str = "") -> "SseStream":
        """Sends the request and reads the response head. Raises ``SseRefused`` for an error status,
        ``OSError``/``asyncio.IncompleteReadError`` when nothing (or no HTTP) answers."""
        u = urlsplit(url)
        tls = u.scheme == "https"
        port = u.port or (443 if tls else 80)
        reader, writer = await asyncio.open_connection(u.hostname, port, ssl=ssl.create_default_context() if tls else None)
        try:
            head = [f"GET {u.path}?{u.query} HTTP/1.1", f"Host: {u.netloc}", "Accept: text/event-stream",
                    "Cache-Control: no-store", "Connection: close"]
            if token is not None:
                head.append(f"Authorization: Bearer {token}")
            if last_event_id:
                head.append(f"Last-Event-ID: {last_event_id}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            status_line = (await reader.readline()).decode("latin-1")
            parts = status_line.split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
                raise asyncio.IncompleteReadError(status_line.encode("latin-1"), None)
            status = int(parts[1])
            headers: dict[str, str] = {}
            while (line := (await reader.readline()).decode("latin-1").strip()):
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            stream = cls(reader, writer, "chunked" in headers.get("transfer-encoding", "").lower(), last_event_id)
            if status != 200:
                body = b"".join([chunk async for chunk in stream._body(MAX_ERROR_BODY)])
                raise SseRefused(status, _error_frame(body))
            return stream
        except BaseException:
            writer.close()
            raise

    async def frames(self, idle_timeout: Callable[[], float]) -> AsyncIterator[str]:
        """The data of each event but ``close``. Heartbeat comments count as activity; nothing
        at all for ``idle_timeout()`` seconds (asked before each read: it grows once ``hello``
        says the heartbeat) ends the stream as lost (1006)."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        pending = ""
        event, data, event_id = "", [], None
        body = self._body(None)
        try:
            while True:
                timeout = idle_timeout()
                try:
                    chunk = await asyncio.wait_for(body.__anext__(), timeout)
                except StopAsyncIteration:
                    break
                except asyncio.TimeoutError:
                    self._end(CloseCode.ABNORMAL, f"no event or heartbeat for {timeout:g} s")
                    return
                pending += decoder.decode(chunk)
                *lines, pending = pending.split("\n")
                for raw in lines:
                    line = raw.rstrip("\r")
                    if line == "":
                        if event_id is not None:
                            self.last_event_id = event_id
                        if data and event == "close":
                            close = json.loads("\n".join(data))
                            self._end(int(close.get("code", CloseCode.ABNORMAL)), str(close.get("reason", "")))
                        elif data:
                            yield "\n".join(data)
                        event, data, event_id = "", [], None
                        continue
                    if line.startswith(":"):
                        continue  # a heartbeat
                    field, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if field == "data":
                        data.append(value)
                    elif field == "event":
                        event = value
                    elif field == "id":
                        event_id = value
            self._end(CloseCode.ABNORMAL, "stream ended")
        finally:
            await body.aclose()

    async def close(self) -> None:
        """Drops the stream (there is no close handshake)."""
        self._end(CloseCode.NORMAL.value, "client closed")
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (OSError, ssl.SSLError):
            pass

    def _end(self, code: int, reason: str) -> None:
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason

    async def _body(self, limit: int | None) -> AsyncIterator[bytes]:
        """The response body as it arrives (chunked or until the connection ends), at most ``limit`` bytes."""
        read = 0
        while limit is None or read < limit:
            if self._chunked:
                size = int((await self._reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    return
                chunk = await self._reader.readexactly(size)
                await self._reader.readexactly(2)
            else:
                chunk = await self._reader.read(65536)
                if not chunk:
                    return
            read += len(chunk)
            yield chunk


def _error_frame(body: bytes) -> WspsError | None:
    try:
        frame = json.loads(body)
    except ValueError:
        return None
    if isinstance(frame, dict) and frame.get("op") == "error" and isinstance(frame.get("code"), str):
        return WspsError.from_frame(frame)
    return None
