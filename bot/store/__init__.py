"""Persistence behind a small interface."""

from bot.store.base import Calibration, ConversationInfo, NewSummary, Store, UsageTotals
from bot.store.sqlite import DatabaseError, SqliteStore

__all__ = [
    "Calibration",
    "ConversationInfo",
    "DatabaseError",
    "NewSummary",
    "SqliteStore",
    "Store",
    "UsageTotals",
]
