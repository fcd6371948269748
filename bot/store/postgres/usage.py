"""What the model was asked, per conversation, model and purpose; tokenizer calibrations."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.core.ports.store import Calibration, UsageTotals
from bot.store.postgres.connection import Connection


class Usage(Connection):
    async def record_usage(
        self,
        *,
        conversation_key: str,
        model: str,
        purpose: str,
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        await self._write(
            "INSERT INTO usage (conversation, model, purpose, requests, prompt_tokens,"
            " completion_tokens) VALUES ($1, $2, $3, 1, $4, $5)"
            " ON CONFLICT (conversation, model, purpose) DO UPDATE SET"
            " requests = usage.requests + 1,"
            " prompt_tokens = usage.prompt_tokens + excluded.prompt_tokens,"
            " completion_tokens = usage.completion_tokens + excluded.completion_tokens",
            conversation_key,
            model,
            purpose,
            prompt_tokens,
            completion_tokens,
        )

    async def usage(self, *, conversation_key: str) -> Sequence[UsageTotals]:
        rows = await self._rows(
            "SELECT model, purpose, requests, prompt_tokens, completion_tokens FROM usage"
            " WHERE conversation = $1 ORDER BY purpose, model",
            conversation_key,
        )
        return [UsageTotals(*row) for row in rows]

    async def calibrations(self) -> Sequence[Calibration]:
        rows = await self._rows("SELECT model, ratio, samples FROM calibration ORDER BY model")
        return [Calibration(*row) for row in rows]

    async def save_calibration(self, *, calibration: Calibration) -> None:
        await self._write(
            "INSERT INTO calibration (model, ratio, samples, updated_at) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (model) DO UPDATE SET ratio = excluded.ratio,"
            " samples = excluded.samples, updated_at = excluded.updated_at",
            calibration.model,
            calibration.ratio,
            calibration.samples,
            time.time(),
        )
