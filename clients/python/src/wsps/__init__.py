"""wsps-client: an asyncio client for the wsps stock-quote gateway (docs/protocol.md)."""

from .backoff import Retry, backoff_delay
from .bars import BarSeries
from .book import BOOK_DEPTHS, BookReceiver, BookVerdict, HeldBook, OrderBook, book_checksum
from .client import BookSubscribed, Client, Delivery, TokenSource
from .errors import ConnectionClosed, WspsError
from .events import BarEvent, BarsEvent, BookEvent, ErrorEvent, Event, EventStream, FreshEvent, QuoteEvent, RecoveryEvent, StaleEvent, StatusEvent
from .protocol import (
    AUTH_CLOSE_CODES, BAR_INTERVALS, NO_RECONNECT_CODES, PROTOCOL_VERSION, ClientOp, CloseCode, Disconnect, ErrorCode, Mode, ServerOp,
)
from .receiver import Cursor, Outcome, QuoteReceiver, continues

__version__ = "0.1.0"

__all__ = [
    "AUTH_CLOSE_CODES", "BAR_INTERVALS", "BOOK_DEPTHS", "NO_RECONNECT_CODES", "PROTOCOL_VERSION",
    "BarEvent", "BarSeries", "BarsEvent", "BookEvent", "BookReceiver", "BookSubscribed", "BookVerdict", "HeldBook", "OrderBook", "Client", "ClientOp", "CloseCode", "ConnectionClosed", "Cursor", "Delivery", "Disconnect",
    "ErrorCode", "ErrorEvent", "Event", "EventStream", "FreshEvent", "Mode", "Outcome", "QuoteEvent", "QuoteReceiver", "RecoveryEvent",
    "Retry", "ServerOp", "StaleEvent", "StatusEvent", "TokenSource", "WspsError", "backoff_delay", "book_checksum", "continues",
]
