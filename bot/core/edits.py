"""What the platforms do to messages already stored: edits, deletions, 📌 marks, an answer's
platform id, a thread's first message copied in, an author's name learned late.

A part of :class:`~bot.core.engine.Engine` (it inherits this), kept apart to keep the turn's
module small. A message deleted or edited on the platform leaves the prompt log too: the
logged prompts that may show it (as it was) are deleted with it.
"""

from __future__ import annotations

from bot.core.memory.importance import score
from bot.core.models import Conversation, Role, StoredMessage, render_content
from bot.core.ports.llm import clean_text
from bot.core.ports.store import Duplicate, Store
from bot.core.settings import Settings


class MessageEdits:
    store: Store

    async def count(self, text: str) -> int:
        raise NotImplementedError

    async def _embed(self, conversation: Conversation, stored: StoredMessage) -> None:
        raise NotImplementedError

    async def settings_for(self, conversation: Conversation) -> Settings:
        raise NotImplementedError

    async def edit_message(self, conversation: Conversation, message_id: str, text: str) -> bool:
        """A platform edit: the stored text and its count follow it."""
        found = await self.store.find_message(
            conversation_key=conversation.key, message_id=message_id
        )
        if found is None:
            return False
        text = clean_text(text)
        edited = await self.store.edit_message(
            conversation_key=conversation.key,
            message_id=message_id,
            content=text,
            tokens=await self.count(render_content(found.role, found.author_name, text)),
            importance=score(text) if found.role is Role.USER else None,
        )
        if edited:  # the index followed in the same statement; the vector is made anew
            await self._embed(conversation, found._replace(content=text))
            if text != found.content:
                await self._drop_prompts(conversation, found)
        return edited

    async def mark_important(self, conversation: Conversation, message_id: str, on: bool) -> bool:
        """A 📌 reaction added (``on``) or removed on a platform message in the conversation's
        channel or one of its threads; False when memory does not have that message."""
        return await self.store.mark_message(
            channel_key=conversation.channel_key, message_id=message_id, delta=1 if on else -1
        )

    async def attach_message_id(
        self, conversation: Conversation, stored_id: int, message_id: str
    ) -> bool:
        """Give a stored answer the platform id it got when sent, so that the platform's
        edits and deletions of it reach memory."""
        return await self.store.set_message_id(
            conversation_key=conversation.key, stored_id=stored_id, message_id=message_id
        )

    async def copy_message(
        self, message_id: str, *, source: Conversation, into: Conversation
    ) -> bool:
        """Store a copy of a stored message in another conversation (a thread starts with the
        channel message it hangs from); False when ``source`` has no such message or ``into``
        already has it (after a restart, say)."""
        found = await self.store.find_message(conversation_key=source.key, message_id=message_id)
        if found is None:
            return False
        try:
            copied = await self.store.add_message(
                conversation=into,
                role=found.role,
                author_id=found.author_id,
                author_name=found.author_name,
                content=found.content,
                tokens=found.tokens,
                message_id=found.message_id,
                created_at=found.created_at,
                importance=score(found.content) if found.role is Role.USER else 0,
            )
        except Duplicate:
            return False
        await self._embed(into, copied)
        return True

    async def rename_author(
        self, conversation: Conversation, message_id: str, name: str
    ) -> StoredMessage | None:
        """Give a stored message its author's name, learned after it was stored; the message
        as it is now (None: memory does not have it)."""
        stored = await self.store.find_message(
            conversation_key=conversation.key, message_id=message_id
        )
        name = clean_text(name)
        if stored is None or not name or name == stored.author_name:
            return stored
        tokens = await self.count(render_content(stored.role, name, stored.content))
        await self.store.rename_author(
            conversation_key=conversation.key,
            stored_id=stored.id,
            author_name=name,
            tokens=tokens,
        )
        return stored._replace(author_name=name, tokens=tokens)

    async def delete_message(self, conversation: Conversation, message_id: str) -> bool:
        found = await self.store.find_message(
            conversation_key=conversation.key, message_id=message_id
        )
        deleted = await self.store.delete_message(
            conversation_key=conversation.key, message_id=message_id
        )
        if deleted and found is not None:
            await self._drop_prompts(conversation, found)
        return deleted

    async def _drop_prompts(self, conversation: Conversation, message: StoredMessage) -> None:
        """Delete the logged prompts that may show ``message`` as it was: its channel's, and
        those of its memory group's channels that recalled it."""
        group = (await self.settings_for(conversation)).memory_group is not None
        await self.store.drop_prompts(conversation=conversation, message=message, group=group)
