"""Export and import of one user's memory as JSON lines, streaming both ways.

The export is a header line, one line per memory, and an end line::

    {"format": "hindsight-export", "version": 1, "user_id": ..., "embedding_model": ...,
     "exported_at": ...}
    {"memory": {...every field of the memory but the tenant: episodes and facts, statuses,
     sources and supersession links, archived_at, pinned, hit_count, last_hit_at...}}
    {"end": true, "memories": N, "reflection_cursor": ... or null}

It reads the record store a page at a time (``PAGE`` memories) and yields line by line,
so memory stays bounded whatever the user's size; only the scopes the caller may read are
exported, expired memories are not, and a user with nothing (erased, or never stored)
is a NotFoundError. Vectors are not exported: an import embeds with its own model, so a
file moves between models and between the embedded store and AWS alike.

The import reads the lines as they come, ``BATCH`` memories at a time: each memory keeps
its id, times, links, status and counts; it is embedded, written (``RecordStore.put``)
and, unless archived, indexed. A memory whose id is already stored is skipped, so an
import that stopped half-way is resumed by running it again. The end line's reflection
cursor is restored, so reflection does not distil the imported episodes a second time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from hindsight.core.access import require_write
from hindsight.core.embedding import DEFAULT_CHUNK_SIZES, ChunkSizes, embed_memories
from hindsight.core.errors import InvalidRequestError, NotFoundError
from hindsight.core.indexing import index_document
from hindsight.core.models import ListQuery, Memory, Principal
from hindsight.core.ports import Clock, Embedder, RecordStore, SearchIndex
from hindsight.core.usecases.reflect import REFLECTION_CURSOR
from hindsight.core.views import iso

logger = logging.getLogger(__name__)

FORMAT = "hindsight-export"
VERSION = 1
PAGE = 500
BATCH = 64
_MEMORY: TypeAdapter[Memory] = TypeAdapter(Memory)


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


class ExportMemories:
    """Stream a user's memories out; read such a stream back in."""

    def __init__(
        self,
        records: RecordStore,
        index: SearchIndex,
        embedder: Embedder,
        clock: Clock,
        chunk_sizes: ChunkSizes = DEFAULT_CHUNK_SIZES,
    ) -> None:
        self.records = records
        self.index = index
        self.embedder = embedder
        self.clock = clock
        self.chunk_sizes = chunk_sizes

    # --- export -----------------------------------------------------------------------
    def export(self, principal: Principal, user_id: str) -> Iterator[str]:
        """The export's lines; NotFoundError before the first line if there is nothing."""
        pages = self._pages(principal, user_id)
        first = next(pages, None)
        if first is None:
            raise NotFoundError(
                f"user {user_id} has no memories this key may read (erased, or never stored)"
            )
        return self._lines(principal, user_id, first, pages)

    def _pages(self, principal: Principal, user_id: str) -> Iterator[list[Memory]]:
        query = ListQuery(now=self.clock.now(), oldest_first=True)
        cursor: str | None = None
        while True:
            page = self.records.list(principal.tenant_id, user_id, query, PAGE, cursor)
            readable = [m for m in page.items if principal.can_read(m.scope)]
            if readable:
                yield readable
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def _lines(
        self,
        principal: Principal,
        user_id: str,
        first: list[Memory],
        rest: Iterator[list[Memory]],
    ) -> Iterator[str]:
        yield _line(
            {
                "format": FORMAT,
                "version": VERSION,
                "user_id": user_id,
                "embedding_model": self.embedder.model_name,
                "exported_at": iso(self.clock.now()),
            }
        )
        count = 0
        for page in _chain(first, rest):
            for memory in page:
                yield _line({"memory": memory.model_dump(mode="json", exclude={"tenant_id"})})
                count += 1
        cursor = self.records.get_cursor(principal.tenant_id, user_id, REFLECTION_CURSOR)
        yield _line({"end": True, "memories": count, "reflection_cursor": iso(cursor)})
        logger.info("export done tenant=%s memories=%d", principal.tenant_id, count)

    # --- import -----------------------------------------------------------------------
    def import_lines(
        self, principal: Principal, lines: Iterable[str], user_id: str | None = None
    ) -> dict[str, Any]:
        """Restore an export under the caller's tenant (as ``user_id`` if given)."""
        stream = (line for line in lines if line.strip())
        header = _parse(next(stream, ""), 1)
        if header.get("format") != FORMAT or header.get("version") != VERSION:
            raise InvalidRequestError(
                f"not a {FORMAT} version {VERSION} file (its first line is the header "
                "`hindsight export` writes)"
            )
        target = user_id or str(header.get("user_id") or "")
        counts = {"memories": 0, "imported": 0, "skipped_existing": 0}
        batch: list[Memory] = []
        ended = False
        for number, line in enumerate(stream, start=2):
            value = _parse(line, number)
            if value.get("end") is True:
                self._restore_cursor(principal, target, value.get("reflection_cursor"))
                ended = True
                break
            batch.append(self._memory(principal, target, value, number))
            if len(batch) == BATCH:
                self._write(principal, batch, counts)
                batch = []
        self._write(principal, batch, counts)
        if not ended:
            raise InvalidRequestError(
                f"the file ends before its end line: {counts['imported']} memories were "
                "imported; it was cut short (run the import again on a whole file: what is "
                "already imported is skipped)"
            )
        logger.info("import done tenant=%s %s", principal.tenant_id, counts)
        return {"status": "success", "user_id": target, **counts}

    def _memory(
        self, principal: Principal, user_id: str, value: dict[str, Any], number: int
    ) -> Memory:
        raw = value.get("memory")
        if not isinstance(raw, dict):
            raise InvalidRequestError(f"line {number} is neither a memory nor the end line")
        try:
            memory = _MEMORY.validate_python(
                {**raw, "tenant_id": principal.tenant_id, "user_id": user_id}
            )
        except ValidationError as exc:
            raise InvalidRequestError(
                f"line {number} is not a valid memory: {exc.errors()[0]['msg']}"
            ) from exc
        require_write(principal, memory.scope)
        return memory

    def _write(self, principal: Principal, batch: list[Memory], counts: dict[str, int]) -> None:
        if not batch:
            return
        counts["memories"] += len(batch)
        present = {
            m.memory_id
            for m in self.records.get_many(principal.tenant_id, [m.memory_id for m in batch])
        }
        fresh = [m for m in batch if m.memory_id not in present]
        counts["skipped_existing"] += len(batch) - len(fresh)
        if not fresh:
            return
        vectors = embed_memories(self.embedder, fresh, self.chunk_sizes)
        for memory, vector in zip(fresh, vectors, strict=True):
            self.records.put(memory, vector)
        live = [
            index_document(m, v)
            for m, v in zip(fresh, vectors, strict=True)
            if m.archived_at is None
        ]
        if live:
            self.index.upsert(live)
        counts["imported"] += len(fresh)

    def _restore_cursor(self, principal: Principal, user_id: str, value: Any) -> None:
        if not value:
            return
        try:
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidRequestError(f"the end line's reflection_cursor {value!r}") from exc
        self.records.set_cursor(principal.tenant_id, user_id, REFLECTION_CURSOR, moment)


def _chain(first: list[Memory], rest: Iterator[list[Memory]]) -> Iterator[list[Memory]]:
    yield first
    yield from rest


def _parse(line: str, number: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"line {number} is not JSON: {exc.msg}") from exc
    if not isinstance(value, dict):
        raise InvalidRequestError(f"line {number} is not a JSON object")
    return value
