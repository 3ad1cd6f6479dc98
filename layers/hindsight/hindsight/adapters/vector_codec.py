"""One byte encoding of stored vectors, shared by every record store and index on disk.

``values`` as little-endian float32 bytes (one row per chunk, row after row) and the chunk
spans as compact JSON (``[[start, end], ...]``; None for a memory embedded whole). A stored
item written before memories were chunked has no spans and decodes as one vector.
"""

from __future__ import annotations

import json

import numpy as np

from hindsight.core.models import StoredVector


def vector_bytes(vector: StoredVector) -> bytes:
    return np.asarray(vector.values, dtype="<f4").tobytes()


def spans_text(vector: StoredVector) -> str | None:
    if not vector.spans:
        return None
    return json.dumps([list(span) for span in vector.spans], separators=(",", ":"))


def decode_vector(model: str, data: bytes, spans: str | None) -> StoredVector:
    values = np.frombuffer(data, dtype="<f4").copy()
    if not spans:
        return StoredVector(model=model, values=values)
    parsed = tuple((int(start), int(end)) for start, end in json.loads(spans))
    return StoredVector(model=model, values=values.reshape(len(parsed), -1), spans=parsed)
