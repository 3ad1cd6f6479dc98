"""An on-disk embedding cache for the LoCoMo benchmark (bench/.cache/embeddings.sqlite).

``CachedEmbedder`` wraps a real embedder and keys each vector by model name, role
(query or passage) and the sha256 of the text. Vectors are stored as the exact float32
bytes the model returned, so a warm cache gives the same results as a cold one; it only
saves the minutes that embedding 5,882 turns takes.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from harness import DelegatingEmbedder

from hindsight.core.ports import Embedder


class CachedEmbedder(DelegatingEmbedder):
    """Embedder port over another embedder, with a sqlite cache of its vectors."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        super().__init__(inner)
        self._key = inner.model_name
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path)
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors ("
            "model TEXT, role TEXT, digest TEXT, vector BLOB, PRIMARY KEY (model, role, digest))"
        )
        self.hits = 0
        self.misses = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), "passage")

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "query")[0]

    def _embed(self, texts: list[str], role: str) -> np.ndarray:
        digests = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(digests))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT digest, vector FROM vectors WHERE model = ? AND role = ? "
                f"AND digest IN ({marks})",
                (self._key, role, *chunk),
            ).fetchall()
            for digest, blob in rows:
                found[digest] = np.frombuffer(blob, dtype=np.float32)
        missing = [i for i, d in enumerate(digests) if d not in found]
        missing = list({digests[i]: i for i in missing}.values())
        if missing:
            batch = [texts[i] for i in missing]
            if role == "query":
                computed = np.stack([self.inner.embed_query(t) for t in batch])
            else:
                computed = np.asarray(self.inner.embed_documents(batch))
            computed = computed.astype(np.float32)
            rows_to_write = []
            for i, vector in zip(missing, computed, strict=True):
                found[digests[i]] = vector
                rows_to_write.append((self._key, role, digests[i], vector.tobytes()))
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?,?)", rows_to_write)
            self._conn.commit()
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        return np.stack([found[d] for d in digests])

    def close(self) -> None:
        self._conn.close()
