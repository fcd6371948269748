"""Locks by key (a conversation's), each kept only while someone holds or waits on it."""

from __future__ import annotations

import asyncio
import weakref


class Locks:
    """One lock per key for as long as anyone holds or waits on it."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def __call__(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        return lock
