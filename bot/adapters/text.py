"""Replies too long to post: the first part is posted, the whole text goes as a file.

Pure; each adapter posts :attr:`LongReply.shown` as messages and :attr:`LongReply.whole` as
an attachment named :data:`ATTACHMENT_NAME`, with :attr:`LongReply.note` beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

ATTACHMENT_NAME = "reply.md"


@dataclass(frozen=True)
class LongReply:
    shown: str
    """The start of the reply, ended at a paragraph, line or word break."""
    whole: str
    note: str
    """Says that the reply was cut and where the rest is."""

    @property
    def attachment(self) -> bytes:
        return self.whole.encode("utf-8")


def shorten(text: str, limit: int) -> LongReply | None:
    """The reply cut to at most ``limit`` characters; None when it fits."""
    if len(text) <= limit:
        return None
    cut = _break_before(text, limit)
    note = (
        f"(The reply is {len(text):,} characters long, too long to post; "
        f"the whole of it is in {ATTACHMENT_NAME}.)"
    )
    return LongReply(shown=text[:cut].rstrip(), whole=text, note=note)


def _break_before(text: str, limit: int) -> int:
    """The last paragraph break, else line break, else space in the second half of the
    first ``limit`` characters; ``limit`` itself when there is none."""
    for separator in ("\n\n", "\n", " "):
        at = text.rfind(separator, limit // 2, limit)
        if at > 0:
            return at
    return limit
