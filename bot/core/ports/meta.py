"""Values the bot keeps for itself in the database, by key: what its token counts were made
with, the page links' secret."""

from __future__ import annotations

from typing import Protocol


class MetaStore(Protocol):
    async def get_meta(self, *, key: str) -> str | None: ...

    async def set_meta(self, *, key: str, value: str) -> None: ...

    async def meta_once(self, *, key: str, value: str) -> str:
        """Keep ``value`` under ``key`` unless a value is there already; the one kept. Every
        process sharing the database gets the first writer's, however they race."""
        ...
