from .receiver import Cursor, Outcome, QuoteReceiver, continues
