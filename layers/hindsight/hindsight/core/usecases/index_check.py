"""Does the search index agree with the record store? (``hindsight check-index``)

The record store is the source of truth and the index is derived from it: every memory
that is searchable (it has a stored vector and is not archived, the memories
``rebuild_from`` indexes) must be in the index, and the index must hold nothing else. A
disagreement is a memory stored but never found (``missing``) or a document left behind
for a memory that is gone or archived (``extra``; ``orphans`` are those of ``extra`` the
record store lacks altogether).

Run it on a store nothing is writing to (after a soak, after a crash and restart): a write
in flight is in the record store a moment before it is in the index. During an embedding
model migration a memory written with the next model waits for the switch to be indexed
and is reported missing until then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hindsight.core.errors import InvalidRequestError
from hindsight.core.ports import RecordStore, SearchIndex

Key = tuple[str, str]  # (tenant_id, memory_id)


@dataclass(frozen=True)
class IndexCheck:
    """What the record store and the index hold, and where they differ."""

    tenant_id: str | None
    user_id: str | None
    stored: int  # memories in the record store (searchable or not)
    searchable: int  # of those, the ones the index must hold
    indexed: int  # memories the index holds
    missing: tuple[Key, ...]  # searchable, but not in the index
    extra: tuple[Key, ...]  # in the index, but not a searchable record
    orphans: tuple[Key, ...]  # of ``extra``, those the record store lacks altogether

    @property
    def agrees(self) -> bool:
        return not self.missing and not self.extra

    def as_dict(self) -> dict[str, Any]:
        def ids(keys: tuple[Key, ...]) -> list[dict[str, str]]:
            return [{"tenant_id": tenant, "memory_id": memory} for tenant, memory in keys]

        return {
            "status": "success" if self.agrees else "disagree",
            "agrees": self.agrees,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "stored": self.stored,
            "searchable": self.searchable,
            "indexed": self.indexed,
            "missing_count": len(self.missing),
            "extra_count": len(self.extra),
            "orphan_count": len(self.orphans),
            "missing": ids(self.missing),
            "extra": ids(self.extra),
            "orphans": ids(self.orphans),
        }


def check_index(
    records: RecordStore,
    index: SearchIndex,
    tenant_id: str | None = None,
    user_id: str | None = None,
) -> IndexCheck:
    """Compare the memories of the whole store, of one tenant, or of one user of a tenant."""
    if user_id is not None and tenant_id is None:
        raise InvalidRequestError("checking one user needs the user's tenant too")
    stored: set[Key] = set()
    searchable: set[Key] = set()
    for memory, vector in records.iter_all(tenant_id):
        if user_id is not None and memory.user_id != user_id:
            continue
        key = (memory.tenant_id, memory.memory_id)
        stored.add(key)
        if vector is not None and memory.archived_at is None:
            searchable.add(key)
    indexed = index.indexed_ids(tenant_id, user_id)
    extra = indexed - searchable
    return IndexCheck(
        tenant_id=tenant_id,
        user_id=user_id,
        stored=len(stored),
        searchable=len(searchable),
        indexed=len(indexed),
        missing=tuple(sorted(searchable - indexed)),
        extra=tuple(sorted(extra)),
        orphans=tuple(sorted(extra - stored)),
    )
