"""Search by meaning: which stored vectors are nearest a query's.

Vectors are stored at unit length as float32 bytes, so cosine similarity is a dot product; the
ranking is one matrix product in numpy, run in a worker thread, so that a conversation with
thousands of stored vectors never holds up the event loop.
"""

from __future__ import annotations

import asyncio
import math
from array import array
from collections.abc import Sequence

import numpy as np


def vector_bytes(vector: Sequence[float]) -> bytes:
    """A vector as stored: unit length, float32."""
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return array("f", (x / norm for x in vector)).tobytes()


async def nearest(
    query: bytes, rows: Sequence[tuple[int, bytes]], *, floor: float, limit: int
) -> list[int]:
    """The ids of ``rows`` (``(id, stored vector)``) most similar to ``query``, best first:
    at most ``limit``, each at least ``floor`` similar; computed off the event loop."""
    if not rows:
        return []
    return await asyncio.to_thread(rank, query, rows, floor=floor, limit=limit)


def rank(query: bytes, rows: Sequence[tuple[int, bytes]], *, floor: float, limit: int) -> list[int]:
    """What :func:`nearest` returns, computed here. Rows of another dimension than the
    query's (another model's) are left out; equal similarities rank the newer (higher) id
    first. Below the median similarity of the rows is no match either, whatever ``floor``
    says: one model's cosines cluster (E5's run 0.7 to 0.9 for everything), so an absolute
    floor set for one model means nothing for another, while the lower half of a conversation
    is never what a question is about (1.8% of the long-conversation benchmark's evidence
    fell there)."""
    wanted = np.frombuffer(query, dtype=np.float32)
    same = [(message_id, blob) for message_id, blob in rows if len(blob) == len(query)]
    if not same or wanted.size == 0:
        return []
    ids = np.fromiter((message_id for message_id, _ in same), dtype=np.int64, count=len(same))
    matrix = np.frombuffer(b"".join(blob for _, blob in same), dtype=np.float32)
    # One matrix-vector product (BLAS, without the GIL), no temporary matrix.
    similarity = (matrix.reshape(len(same), wanted.size) @ wanted).astype(np.float64)
    order = np.lexsort((ids, similarity))[::-1]  # similarity, then id, both descending
    floor = max(floor, float(np.median(similarity)))
    kept = order[similarity[order] >= floor][:limit]
    return [int(message_id) for message_id in ids[kept]]
