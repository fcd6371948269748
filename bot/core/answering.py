"""Asking the chat model for one answer: whole, or streamed to whoever shows it as it is
written; retried smaller once when the prompt overflowed the model's context before any text
came; all of it within the answer's deadline.

A stream that fails after some text keeps that text, marked as interrupted
(:data:`INTERRUPTED`), so that people see where it stopped and the next prompt does not present
it as a finished answer.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

from bot.core.memory.calibration import Gauge
from bot.core.models import strip_speaker_tags
from bot.core.ports.llm import ChatModel, ChatModels, Failure, LLMError, StreamEnd
from bot.core.ports.platform import Phase
from bot.core.prompt.assembler import Prompt
from bot.core.settings import Settings

log = logging.getLogger(__name__)

Show = Callable[[str], Awaitable[None]]
"""Shows the answer so far (all of it, growing) while the model writes it."""


Progress = Callable[[Phase], Awaitable[None]]
"""Told what the bot is doing for the answer (a status line)."""

INTERRUPTED = "_— the model stopped answering; ask again to continue_"
"""Ends an answer whose stream failed part way, as shown and as stored."""

_SHRINK_ON_OVERFLOW = 0.75
# A start that may still become a speaker tag (``[Ana] ``, perhaps after a date line): held
# back until it is one or is not, so that a tag stripped from the answer is never shown.
_MAYBE_TAG = re.compile(r"\s*(?:\d{0,4}(?:-\d{0,2}){0,2}\n?)?(?:\[[^\]\n]{0,100})?")


@dataclass(frozen=True)
class Answered:
    """The model's answer to one prompt, as shown and to be stored."""

    prompt: Prompt
    model: str
    """The chat model asked (the conversation's)."""
    text: str
    """Speaker tags stripped; ending with :data:`INTERRUPTED` when the stream broke off."""
    prompt_tokens: int | None
    """As the server counted them; None when it did not say."""
    completion_tokens: int | None
    interrupted: LLMError | None = None
    """Why the stream broke off after some text, when it did."""
    cached_tokens: int = 0
    """Of ``prompt_tokens``, those served from the server's prompt cache."""


def shown_so_far(text: str, speakers: Collection[str]) -> str | None:
    """What of a growing answer may be shown: without the speaker tags it opens with, None
    while its start may still turn out to be one."""
    # A mark after the text keeps a text that is only tags from being given back whole.
    visible = strip_speaker_tags(text + "\x00", speakers)[:-1]
    return None if _MAYBE_TAG.fullmatch(visible) else visible


class Asker:
    """Asks the conversation's chat model, retrying a context overflow once with a smaller
    prompt."""

    def __init__(self, *, models: ChatModels, gauge: Callable[[str], Gauge]) -> None:
        """``gauge``: a model's calibration, by name."""
        self.models = models
        self.gauge = gauge

    async def ask(
        self,
        build: Callable[[int], Awaitable[Prompt]],
        settings: Settings,
        speakers: Callable[[Prompt], Collection[str]],
        *,
        show: Show | None = None,
        progress: Progress | None = None,
    ) -> Answered:
        """The answer to the prompt ``build(limit)`` makes (``limit`` in the server's count),
        streamed to ``show`` when given, each phase told to ``progress``; :class:`LLMError`
        when none came."""
        chat = self.models.get(settings.chat_model)
        limit = settings.max_context_tokens
        deadline = time.monotonic() + settings.reply_deadline_seconds
        for attempt in range(2):
            await _told(progress, Phase.SEARCHING)
            prompt = await build(limit)
            await _told(progress, Phase.THINKING)
            try:
                if show is None:
                    completion = await chat.complete(
                        prompt.messages, max_tokens=settings.max_reply_tokens, deadline=deadline
                    )
                    text = strip_speaker_tags(completion.text, speakers(prompt))
                    return Answered(
                        prompt,
                        chat.model,
                        text,
                        completion.prompt_tokens,
                        completion.completion_tokens,
                        cached_tokens=completion.cached_tokens,
                    )
                return await self._streamed(
                    chat, prompt, settings.max_reply_tokens, deadline, speakers(prompt), show
                )
            except LLMError as exc:
                if exc.failure is not Failure.CONTEXT_LENGTH or attempt:
                    raise
                log.warning("a prompt overflowed the model's context; retrying smaller")
                limit = await self.limit_after_overflow(settings, prompt, exc, limit)
        raise AssertionError("unreachable")

    async def _streamed(
        self,
        chat: ChatModel,
        prompt: Prompt,
        max_tokens: int,
        deadline: float,
        speakers: Collection[str],
        show: Show,
    ) -> Answered:
        text, shown = "", ""
        showing = True
        stream = chat.stream(prompt.messages, max_tokens=max_tokens, deadline=deadline)
        try:
            async for item in stream:
                if isinstance(item, StreamEnd):
                    answer = strip_speaker_tags(text, speakers)
                    return Answered(
                        prompt,
                        chat.model,
                        answer,
                        item.prompt_tokens,
                        item.completion_tokens,
                        cached_tokens=item.cached_tokens,
                    )
                text += item
                visible = shown_so_far(text, speakers)
                if showing and visible is not None and visible != shown:
                    shown = visible
                    showing = await _shown(show, visible)
        except LLMError as exc:
            if not text.strip():
                raise  # nothing was written: failed as a whole answer fails
            log.warning("the model's stream broke off after %d characters: %s", len(text), exc)
            answer = f"{strip_speaker_tags(text, speakers).rstrip()}\n\n{INTERRUPTED}"
            return Answered(prompt, chat.model, answer, None, None, interrupted=exc)
        finally:
            await stream.aclose()
        raise LLMError(Failure.BAD_RESPONSE, "the stream ended without its end")

    async def limit_after_overflow(
        self, settings: Settings, prompt: Prompt, exc: LLMError, limit: int
    ) -> int:
        """A smaller limit (in the server's count) for another try after ``prompt``
        overflowed the conversation's chat model's context: sized to the window when the
        error stated it (which is kept, for ``bot doctor``)."""
        gauge = self.gauge(settings.chat_model)
        sent = await gauge.cost(prompt.messages, prompt.tokens)
        limit = int(min(limit, sent) * _SHRINK_ON_OVERFLOW)
        if exc.context is not None:  # the server said how much fits
            await gauge.calibrator.learn_window(gauge.model, exc.context)
            room = max(exc.context - settings.max_reply_tokens, exc.context // 4)
            limit = min(limit, room)
        return limit


async def _told(progress: Progress | None, phase: Phase) -> None:
    if progress is None:
        return
    try:
        await progress(phase)
    except Exception:
        log.exception("telling the platform what the bot is doing failed")


async def _shown(show: Show, text: str) -> bool:
    """Show the text so far; False once showing failed (the finished answer is still sent)."""
    try:
        await show(text)
    except Exception:
        log.exception("showing an answer as it was written failed")
        return False
    return True
