"""An in-memory store: the whole :class:`bot.core.ports.store.Store` port in plain Python.

The core's unit tests run against it, and it shows the port asks nothing of SQLite: the same
contract tests pass on both. Everything is lost when the process ends; ids only grow, as in the
SQLite store. Search scores a message by the rarity of the query terms it holds (BM25's idf,
without its length normalisation), so the commonest words weigh least, as they do there.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bot.core.models import FactSource, Person, Pin, ProfileFact, Summary, render_content
from bot.core.ports.store import (
    CalibrationSample,
    ConversationInfo,
    ImportedRecords,
    NewSummary,
    Store,
    UsageTotals,
)
from bot.store.memory.archive import export_records, import_records, write_backup
from bot.store.memory.leases import Leases
from bot.store.memory.messages import Messages
from bot.store.memory.prompt_log import PromptLog
from bot.store.memory.settings import Settings
from bot.store.memory.spend import Ledger


class MemoryStore(Messages, Leases, Settings, Ledger, PromptLog):
    """Implements :class:`bot.core.ports.store.Store` in memory."""

    # -- pins, profiles, summaries -------------------------------------------------------

    async def add_pin(
        self, *, channel_key: str, text: str, tokens: int, author_id: str, author_name: str
    ) -> Pin:
        pin = Pin(
            self.next_id("pins", self.pin_rows),
            channel_key,
            text,
            tokens,
            author_name,
            time.time(),
            author_id,
        )
        self.pin_rows[pin.id] = pin
        return pin

    async def remove_pin(self, *, channel_key: str, pin_id: int) -> bool:
        pin = self.pin_rows.get(pin_id)
        if pin is None or pin.channel_key != channel_key:
            return False
        del self.pin_rows[pin_id]
        return True

    async def pins(self, *, channel_key: str) -> Sequence[Pin]:
        return sorted(
            (pin for pin in self.pin_rows.values() if pin.channel_key == channel_key),
            key=lambda pin: pin.id,
        )

    async def add_profile_fact(
        self, *, person: Person, text: str, tokens: int, source: FactSource
    ) -> ProfileFact:
        fact = ProfileFact(
            self.next_id("facts", self.facts), person, text, tokens, source, time.time()
        )
        self.facts[fact.id] = fact
        return fact

    async def profile_facts(self, *, person: Person) -> Sequence[ProfileFact]:
        return sorted(
            (fact for fact in self.facts.values() if fact.person == person),
            key=lambda fact: fact.id,
        )

    async def pins_and_profile(
        self, *, channel_keys: Sequence[str], person: Person | None
    ) -> tuple[Sequence[Pin], Sequence[ProfileFact]]:
        pins = sorted(
            (pin for pin in self.pin_rows.values() if pin.channel_key in channel_keys),
            key=lambda pin: pin.id,
        )
        facts = await self.profile_facts(person=person) if person is not None else []
        return pins, facts

    async def remove_profile_facts(self, *, person: Person, fact_id: int | None) -> int:
        gone = [
            fact.id
            for fact in self.facts.values()
            if fact.person == person and fact_id in (None, fact.id)
        ]
        for removed in gone:
            del self.facts[removed]
        if gone:
            self.forgets[person] = time.time()
        return len(gone)

    async def profile_forgot_at(self, *, person: Person) -> float | None:
        return self.forgets.get(person)

    async def latest_summary(self, *, conversation_key: str) -> Summary | None:
        held = [s for s in self.summaries.values() if s.conversation_key == conversation_key]
        return max(held, key=lambda summary: summary.id, default=None)

    async def save_summary(
        self, *, summary: NewSummary, generation: int, previous_id: int | None
    ) -> Summary | None:
        key = summary.conversation_key
        latest = await self.latest_summary(conversation_key=key)
        if (
            await self.generation(conversation_key=key) != generation
            or (latest.id if latest is not None else None) != previous_id
        ):
            return None
        saved = Summary(
            id=self.next_id("summaries", self.summaries),
            created_at=time.time(),
            **dataclasses.asdict(summary),
        )
        self.summaries[saved.id] = saved
        return saved

    # -- usage ---------------------------------------------------------------------------

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
        self.add_usage(
            conversation_key, model, purpose, prompt_tokens, completion_tokens, estimated
        )

    async def usage(self, *, conversation_key: str) -> Sequence[UsageTotals]:
        totals = [
            UsageTotals(model, purpose, *counts)
            for (key, model, purpose), counts in self._usage.items()
            if key == conversation_key
        ]
        return sorted(totals, key=lambda total: (total.purpose, total.model))

    async def calibration_samples(self) -> Sequence[CalibrationSample]:
        return list(self._calibration_samples)

    async def add_calibration_sample(self, *, sample: CalibrationSample, keep: int) -> None:
        samples = [*self._calibration_samples, sample]
        extra = sum(s.model == sample.model for s in samples) - keep  # its oldest go
        kept = []
        for held in samples:
            if held.model == sample.model and extra > 0:
                extra -= 1
                continue
            kept.append(held)
        self._calibration_samples = kept

    # -- admin ---------------------------------------------------------------------------

    async def backup(
        self, *, target: Path, pages: Callable[[int, int], None] = lambda done, total: None
    ) -> None:
        """The whole store as an export file at ``target`` (``bot import`` reads it back)."""
        write_backup(self, target)
        pages(1, 1)

    async def export_records(self, *, channel_key: str | None) -> list[dict[str, Any]]:
        return export_records(self, channel_key=channel_key)

    async def export_each(
        self,
        *,
        channel_key: str | None,
        write: Callable[[list[dict[str, Any]]], None],
        sized: Callable[[int], None] = lambda total: None,
    ) -> int:
        records = export_records(self, channel_key=channel_key)
        sized(len(records))
        if records:
            write(records)
        return len(records)

    async def import_records(
        self, *, records: list[dict[str, Any]], advance: Callable[[int], None] = lambda count: None
    ) -> ImportedRecords:
        imported = import_records(self, records)
        advance(len(records))
        return imported

    async def health_problem(self) -> str | None:
        return None

    async def connections(self) -> tuple[int, int] | None:
        return None

    async def ping(self) -> bool:
        return True

    async def integrity_check(self) -> str:
        return "ok"

    async def synchronous(self) -> str:
        return "off"  # nothing reaches a disk

    async def conversations(self) -> Sequence[ConversationInfo]:
        infos = []
        for key in sorted(self.conversation_rows):
            rows = self._rows(key)
            channel = self.conversation_rows[key].channel_key
            infos.append(
                ConversationInfo(
                    key=key,
                    messages=len(rows),
                    tokens=sum(row.tokens for row in rows),
                    pins=sum(pin.channel_key == channel for pin in self.pin_rows.values()),
                    last_message_at=max((row.created_at for row in rows), default=None),
                )
            )
        return infos

    async def known_keys(self) -> set[str]:
        return (
            set(self.conversation_rows)
            | {pin.channel_key for pin in self.pin_rows.values()}
            | {scope for scope, values in self.setting_rows.items() if values}
            | {change.scope for change in self.setting_log.values()}
        )

    async def get_meta(self, *, key: str) -> str | None:
        return self._meta.get(key)

    async def set_meta(self, *, key: str, value: str) -> None:
        self._meta[key] = value

    async def meta_once(self, *, key: str, value: str) -> str:
        return self._meta.setdefault(key, value)

    async def retokenize(self, *, count: Callable[[str], int]) -> int:
        for row in self.messages.values():
            row.tokens = count(render_content(row.role, row.author_name, row.content))
        for pin in list(self.pin_rows.values()):
            self.pin_rows[pin.id] = dataclasses.replace(pin, tokens=count(pin.text))
        for fact in list(self.facts.values()):
            self.facts[fact.id] = dataclasses.replace(fact, tokens=count(fact.text))
        for summary in list(self.summaries.values()):
            self.summaries[summary.id] = dataclasses.replace(summary, tokens=count(summary.content))
        return len(self.messages)

    async def close(self) -> None:
        pass


def _implements_the_port() -> Store:
    """mypy checks here that the in-memory store implements the whole port."""
    return MemoryStore()
