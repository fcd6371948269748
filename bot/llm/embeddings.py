"""Embeddings from an OpenAI-compatible endpoint, for recall by meaning."""

from __future__ import annotations

from collections.abc import Sequence

import openai

from bot.core.ports.llm import ApiKey, Embeddings, Failure, LLMError
from bot.llm.openai import classify


class OpenAIEmbedder:
    """An :class:`Embedder` on the ``embeddings`` API of an OpenAI-compatible endpoint."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        key: ApiKey | None = None,
        prefixes: tuple[str, str] = ("", ""),
        input_types: tuple[str, str] = ("", ""),
    ) -> None:
        """``prefixes`` and ``input_types``: (query, document), empty when not used."""
        self._client = client
        self._model = model
        self._key = key
        self._prefixes = prefixes
        self._input_types = input_types
        marks = [mark.strip() for mark in (input_types[1], prefixes[1]) if mark]
        self._stored_as = f"{model} ({', '.join(marks)})" if marks else model

    @property
    def model(self) -> str:
        return self._stored_as

    @property
    def asymmetric(self) -> bool:
        return (
            self._prefixes[0] != self._prefixes[1] or self._input_types[0] != self._input_types[1]
        )

    async def embed(self, texts: Sequence[str], *, query: bool = False) -> Embeddings:
        role = 0 if query else 1
        prefix, input_type = self._prefixes[role], self._input_types[role]
        extra = {"input_type": input_type} if input_type else None
        try:
            response = await self._client.embeddings.create(
                model=self._model, input=[prefix + text for text in texts], extra_body=extra
            )
        except openai.APIError as exc:
            raise classify(exc, self._key) from exc
        except (ValueError, TypeError) as exc:
            raise LLMError(Failure.BAD_RESPONSE, type(exc).__name__) from exc
        data = sorted(response.data or [], key=lambda item: item.index)
        if len(data) != len(texts):
            raise LLMError(Failure.BAD_RESPONSE, f"{len(data)} embeddings for {len(texts)} texts")
        usage = getattr(response, "usage", None)
        tokens = getattr(usage, "prompt_tokens", None)
        return Embeddings(
            vectors=[list(item.embedding) for item in data],
            model=self._model,
            prompt_tokens=tokens if isinstance(tokens, int) and tokens >= 0 else None,
        )
