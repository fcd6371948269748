"""What model calls cost: the price table, and the meter that records each call in the
ledger (:mod:`bot.core.ports.spend`) with its money, at the time of the call.

Prices are money per million tokens; a prompt's cached tokens are billed at the cached-input
price, the rest at the input price: ``((prompt - cached) × input + cached × cached_input +
completion × output) / 1,000,000``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from bot.config import ModelPrice
from bot.core.models import Conversation
from bot.core.observe import NoObserver, Observer
from bot.core.ports.spend import Ledger, ModelCall

CURRENCY = "$"
NO_PRICE = "no price (set llm.prices)"


@dataclass(frozen=True)
class Price:
    """Money per million input, cached input and output tokens."""

    input: float
    cached_input: float
    output: float

    def cost(self, *, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> float:
        cached = min(max(cached_tokens, 0), prompt_tokens)
        spent = (
            (prompt_tokens - cached) * self.input
            + cached * self.cached_input
            + completion_tokens * self.output
        )
        return spent / 1_000_000


FREE = Price(0.0, 0.0, 0.0)

# OpenAI's published list prices (standard tier, USD per million tokens) as of 2025: to be
# checked against https://openai.com/api/pricing before relying on them; llm.prices wins.
DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o": Price(2.50, 1.25, 10.00),
    "gpt-4o-mini": Price(0.15, 0.075, 0.60),
    "gpt-4.1": Price(2.00, 0.50, 8.00),
    "gpt-4.1-mini": Price(0.40, 0.10, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.025, 0.40),
    "o3": Price(2.00, 0.50, 8.00),
    "o4-mini": Price(1.10, 0.275, 4.40),
    "text-embedding-3-small": Price(0.02, 0.02, 0.0),
    "text-embedding-3-large": Price(0.13, 0.13, 0.0),
}


class Prices:
    """The price of each model: the config's, else for a model at a local endpoint nothing,
    else the built-in list price; a model with none is recorded at 0 and flagged."""

    def __init__(
        self,
        configured: Mapping[str, ModelPrice] | None = None,
        *,
        local: Collection[str] = (),
        defaults: Mapping[str, Price] = DEFAULT_PRICES,
    ) -> None:
        """``local``: the models served at a local or private endpoint (free unless
        ``configured`` prices them)."""
        table = {name: price for name, price in defaults.items() if name not in local}
        table.update(dict.fromkeys(local, FREE))
        for name, price in (configured or {}).items():
            table[name] = Price(price.input, price.cached, price.output)
        self._table = table

    def get(self, model: str) -> Price | None:
        """The model's price; None when none is known."""
        return self._table.get(model)

    def priced(self, model: str) -> bool:
        return model in self._table

    def cost(
        self, model: str, *, prompt_tokens: int, cached_tokens: int, completion_tokens: int
    ) -> float:
        """What a call cost (0 when the model has no price)."""
        price = self._table.get(model)
        if price is None:
            return 0.0
        return price.cost(
            prompt_tokens=prompt_tokens,
            cached_tokens=cached_tokens,
            completion_tokens=completion_tokens,
        )


def money(amount: float) -> str:
    """``$0.0123``: four decimals below a cent's hundredth, else two to six as needed."""
    if amount == 0:
        return f"{CURRENCY}0"
    if abs(amount) >= 1:
        return f"{CURRENCY}{amount:,.2f}"
    return f"{CURRENCY}{amount:.6f}".rstrip("0").rstrip(".")


class Meter:
    """Records each model call in the ledger, priced when it is made."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        prices: Prices | None = None,
        clock: Callable[[], float] = time.time,
        observer: Observer | None = None,
    ) -> None:
        """``observer``: told each call's tokens and money, by workspace and model."""
        self.ledger = ledger
        self.prices = prices or Prices()
        self.clock = clock
        """When a call is made, in seconds since the epoch (the engine's clock)."""
        self.observer: Observer = observer or NoObserver()

    async def record(
        self,
        *,
        conversation: Conversation | None,
        person: str,
        purpose: str,
        model: str,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        cached_tokens: int = 0,
        counted: tuple[int, int] = (0, 0),
    ) -> ModelCall:
        """Record one call; ``counted``: the bot's own count of its prompt and completion,
        used (and the call marked estimated) when the server did not say."""
        prompt = counted[0] if prompt_tokens is None else prompt_tokens
        completion = counted[1] if completion_tokens is None else completion_tokens
        cached = min(cached_tokens, prompt)
        call = ModelCall(
            at=self.clock(),
            conversation=conversation,
            person=person,
            model=model,
            purpose=purpose,
            prompt_tokens=prompt,
            cached_tokens=cached,
            completion_tokens=completion,
            cost=self.prices.cost(
                model, prompt_tokens=prompt, cached_tokens=cached, completion_tokens=completion
            ),
            estimated=prompt_tokens is None,
        )
        await self.ledger.record_call(call=call)
        self.observer.model_spend(
            workspace=conversation.workspace_scope if conversation else "",
            model=model,
            prompt_tokens=prompt,
            cached_tokens=cached,
            completion_tokens=completion,
            cost=call.cost,
        )
        return call
