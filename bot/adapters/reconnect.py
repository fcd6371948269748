"""Retrying a connection: exponential back-off with a cap and jitter, and a failure's cause
in a few words (never a URL, which may carry a ticket or a token)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

import aiohttp

FIRST_DELAY = 1.0
MAX_DELAY = 60.0


def delay(attempt: int, *, first: float = FIRST_DELAY, cap: float = MAX_DELAY) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1, 2, ...): doubling from
    ``first`` up to ``cap``, then each drawn from its upper half, so that many clients cut
    off together do not come back together."""
    ceiling = min(cap, first * 2 ** min(attempt - 1, 32))
    return random.uniform(ceiling / 2, ceiling)


def cause(exc: BaseException) -> str:
    """Why a connection failed, in one line."""
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"HTTP {exc.status} {exc.message}".strip()
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


async def retry(
    attempt_once: Callable[[], Awaitable[None]],
    *,
    failing: str,
    logger: logging.Logger,
    errors: tuple[type[Exception], ...] = (Exception,),
    stopped: Callable[[], bool] = lambda: False,
) -> int | None:
    """Await ``attempt_once`` until it succeeds, logging each failure in one line
    (``failing (cause); retrying in N s (attempt K)``) and waiting :func:`delay` between.
    Returns the attempts it took, or None once ``stopped()`` says to give up."""
    attempt = 0
    while not stopped():
        attempt += 1
        try:
            await attempt_once()
        except errors as exc:
            if stopped():
                return None
            wait = delay(attempt)
            logger.warning(
                "%s (%s); retrying in %.1f s (attempt %d)", failing, cause(exc), wait, attempt
            )
            await asyncio.sleep(wait)
        else:
            return attempt
    return None
