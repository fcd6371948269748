"""What the model was asked, per conversation, model and purpose; the samples tokenizers are
calibrated from."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.core.ports.store import CalibrationSample, UsageTotals
from bot.store.sqlite.connection import Connection

ADD_USAGE = (
    "INSERT INTO usage (conversation, model, purpose, requests, prompt_tokens,"
    " completion_tokens, estimated) VALUES (?, ?, ?, 1, ?, ?, ?)"
    " ON CONFLICT (conversation, model, purpose) DO UPDATE SET"
    " requests = requests + 1,"
    " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
    " completion_tokens = completion_tokens + excluded.completion_tokens,"
    " estimated = estimated + excluded.estimated"
)
"""One request added to a conversation's totals for a model and purpose: conversation,
model, purpose, prompt and completion tokens, estimated (0 or 1)."""


class Usage(Connection):
    async def record_usage(
        self,
        *,
        conversation_key: str,
        model: str,
        purpose: str,
        prompt_tokens: int,
        completion_tokens: int,
        estimated: bool = False,
    ) -> None:
        await self._write(
            ADD_USAGE,
            (conversation_key, model, purpose, prompt_tokens, completion_tokens, int(estimated)),
        )

    async def usage(self, *, conversation_key: str) -> Sequence[UsageTotals]:
        rows = await self._rows(
            "SELECT model, purpose, requests, prompt_tokens, completion_tokens, estimated"
            " FROM usage"
            " WHERE conversation = ? ORDER BY purpose, model",
            (conversation_key,),
        )
        return [UsageTotals(*row) for row in rows]

    async def calibration_samples(self) -> Sequence[CalibrationSample]:
        rows = await self._rows(
            "SELECT model, latin_tokens, cjk_tokens, other_tokens, reported_tokens"
            " FROM calibration_samples ORDER BY id"
        )
        return [CalibrationSample(*row) for row in rows]

    async def add_calibration_sample(self, *, sample: CalibrationSample, keep: int) -> None:
        async with self._transaction():
            await self._db.execute(
                "INSERT INTO calibration_samples (model, latin_tokens, cjk_tokens, other_tokens,"
                " reported_tokens, observed_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    sample.model,
                    sample.latin,
                    sample.cjk,
                    sample.other,
                    sample.reported,
                    time.time(),
                ),
            )
            await self._db.execute(
                "DELETE FROM calibration_samples WHERE model = ? AND id <= (SELECT id FROM"
                " calibration_samples WHERE model = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (sample.model, sample.model, keep),
            )
