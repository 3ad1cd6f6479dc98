"""Query centering: a query is compared with a user's memories from where that user's
memories usually lie, not from the origin.

The embedding model puts every text in a narrow cone (multilingual-e5: unrelated texts
near cosine 0.75), and one user's memories share more still: their language, their
speakers, the long documents they pasted. A memory close to that common direction ("Hi!
How are you doing tonight?", a chunk of the user's own code) is close to every query,
and outranks the memory that answers it. Centering takes the common direction out of
the query: the vector searched is ``q - w * mean``, where ``mean`` is the average vector
of the user's memories (the first piece of each, so one long document counts once) and
``w`` is ``Policy.centering``. As every index scores by inner product, a memory ``d``
then scores ``q·d - w * mean·d``: its similarity to the query, less how much it looks
like everything the user says. This is the hubness correction of the embedding
literature (removing the common mean; CSLS's penalty on points near many others), with
the user's own memories as the background.

The mean is read through the record store's ports (the ids of the newest ``MEAN_SAMPLE``
memories, then their stored vectors, the same for every backend; their content is not
read, which on AWS would fetch each large memory's body from S3) and kept per user for
``MEAN_TTL_SECONDS``: it is a slow statistic of hundreds of memories, so a few new ones
move it little. A user with no stored vector of the query's model is searched as before.
The newest 200 rank as well as the newest 1,000 and cost a fifth: on AWS each read is a
page of the user's index and a batch read of their vectors from DynamoDB, once per user
every five minutes in a warm function. Why the user's mean, and the figures of ``w`` and
the sample size: docs/decisions.md, "Ranking".
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

import numpy as np

from hindsight.core.models import ListQuery, StoredVector
from hindsight.core.ports import RecordStore

MEAN_SAMPLE = 200  # the newest memories whose vectors make a user's mean
MEAN_TTL_SECONDS = 300.0  # how long a user's mean is reused
MEAN_USERS = 1_024  # users whose mean is kept (least recently used dropped first)


def mean_of(vectors: list[StoredVector], model: str, dim: int) -> np.ndarray | None:
    """The mean of each vector's first row (of ``model`` and ``dim`` only), or None."""
    rows = [v.rows[0] for v in vectors if v.model == model and v.dim == dim]
    if not rows:
        return None
    return np.asarray(np.mean(np.asarray(rows, dtype=np.float32), axis=0), dtype=np.float32)


def centred(query: StoredVector, mean: np.ndarray | None, weight: float) -> StoredVector:
    """The query vector less ``weight`` times the user's mean (the query itself without
    a mean or a weight)."""
    if mean is None or weight <= 0.0:
        return query
    values = np.asarray(query.values, dtype=np.float32) - np.float32(weight) * mean
    return replace(query, values=values.astype(np.float32))


class UserMeans:
    """Each user's mean memory vector, read from the record store and kept a while."""

    def __init__(
        self,
        records: RecordStore,
        monotonic: Callable[[], float],
        ttl_seconds: float = MEAN_TTL_SECONDS,
        capacity: int = MEAN_USERS,
        sample: int = MEAN_SAMPLE,
    ) -> None:
        self._records = records
        self._monotonic = monotonic
        self._ttl = ttl_seconds
        self._capacity = capacity
        self._sample = sample
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str, str], tuple[float, np.ndarray | None]] = (
            OrderedDict()
        )

    def mean(
        self, tenant_id: str, user_id: str, query: StoredVector, now: datetime | None
    ) -> np.ndarray | None:
        """The user's mean vector in the query's model, or None if they have none."""
        key = (tenant_id, user_id, query.model)
        at = self._monotonic()
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and at - kept[0] < self._ttl:
                self._kept.move_to_end(key)
                return kept[1]
        ids = self._records.list_ids(tenant_id, user_id, ListQuery(now=now), self._sample)
        vectors = list(self._records.get_vectors(tenant_id, ids).values()) if ids else []
        mean = mean_of(vectors, query.model, query.dim)
        with self._lock:
            self._kept[key] = (at, mean)
            self._kept.move_to_end(key)
            while len(self._kept) > self._capacity:
                self._kept.popitem(last=False)
        return mean

    def forget(self, tenant_id: str, user_id: str) -> None:
        """Drop a user's kept mean (their memories were erased)."""
        with self._lock:
            for key in [k for k in self._kept if k[:2] == (tenant_id, user_id)]:
                del self._kept[key]
