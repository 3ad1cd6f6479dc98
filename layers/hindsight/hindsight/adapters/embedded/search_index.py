"""SearchIndex of the embedded backend: SQLite files, searched through an in-process index.

Files under ``path``:

- ``keyword.db``: table ``docs``, one row per memory, or per chunk of a long memory
  (``chunk`` 0, 1, ... with its ``span_start``/``span_end`` in the content; NULL spans for a
  memory searched whole): filter columns, the piece's text, model, float32 vector and
  ``terms`` (``core.text.tokenize`` output joined by spaces, so Chinese is searchable word
  by word).
- ``ann/``: saved HNSW graphs of the vector index (see ``VectorIndex.save``).

On open, vectors and terms are loaded into the in-process ``VectorIndex``, which answers
both vector and keyword (BM25) queries per (tenant, user) partition: SQLite only keeps the
durable copy (the table and its migrations: ``search_index_schema.py``).
The index is derived data: ``rebuild_from(records)`` brings it in line with the record
store.

Concurrency: one process writes an index directory at a time (``writer.lock``, see
``writer_lock.py``: a second process is refused with a message, a second instance in the
same process takes over from the first). Within the process, writes are one at a time
(``_lock``: the SQLite transaction and the in-process index change together) and searches
take no lock of this class: they go to the in-process ``VectorIndex``, whose per-user
partitions each have their own readers-writer lock. Keyword terms are computed before a
write takes the lock.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.adapters.backend_rules import model_mismatch
from hindsight.adapters.embedded import compaction
from hindsight.adapters.embedded.search_index_schema import COLUMNS, INSERT_DOC, create_or_migrate
from hindsight.adapters.embedded.sqlite_files import (
    open_connection,
    scrub,
    unavailable_on_failure,
)
from hindsight.adapters.embedded.vector_index import ANN_THRESHOLD, VectorIndex
from hindsight.adapters.embedded.writer_lock import WriterLock
from hindsight.adapters.paging import EPOCH, epoch_us, from_epoch_us
from hindsight.core.errors import (
    EmbeddingModelMismatchError,
    InvalidRequestError,
    UnavailableError,
)
from hindsight.core.indexing import index_document
from hindsight.core.indexing import piece_terms as terms_of_pieces
from hindsight.core.models import (
    FactStatus,
    IndexChunk,
    IndexDocument,
    MemoryKind,
    SearchFilter,
    SearchHit,
    Span,
    StoredVector,
)
from hindsight.core.ports import RecordStore

logger = logging.getLogger(__name__)

_BATCH = 500


def _us(moment: datetime | None) -> int | None:
    return None if moment is None else epoch_us(moment)


def _moment(value: int | None) -> datetime | None:
    return None if value is None else from_epoch_us(value)


class EmbeddedSearchIndex:
    """SearchIndex on local files; one instance per data directory, thread-safe."""

    def __init__(self, path: Path, ann_threshold: int = ANN_THRESHOLD) -> None:
        self.path = Path(path)
        self._db_path = self.path / "keyword.db"
        self._ann_dir = self.path / "ann"
        self._lock = threading.RLock()
        self._closed = False
        self._vectors = VectorIndex(ann_threshold=ann_threshold, persist_dir=self._ann_dir)
        with self._translate():
            self.path.mkdir(parents=True, exist_ok=True)
            self._writer_lock = WriterLock.acquire(self.path, self.close)
        try:
            with self._translate():
                self._conn = open_connection(self._db_path)
                self._conn.execute("PRAGMA journal_mode=WAL")
                create_or_migrate(self._conn)
                self._load_vectors()
        except BaseException:
            self._writer_lock.release()
            raise
        self._vectors.load(self._ann_dir)

    # --- plumbing ------------------------------------------------------------------------
    def _translate(self) -> AbstractContextManager[None]:
        return unavailable_on_failure("search index", self.path, self._db_path)

    def _check_open(self) -> None:
        if self._closed:
            raise UnavailableError(
                f"this search index of {self.path} is closed: the service was shut down, or "
                "the same data directory was opened again in this process (the newer one "
                "serves it); use the service that is open"
            )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._translate():
            self._check_open()
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _document(self, rows: Sequence[sqlite3.Row | tuple[Any, ...]]) -> IndexDocument:
        """The document of one memory from its rows (one, or one per chunk in order)."""
        values = dict(zip(COLUMNS, rows[0], strict=True))
        pieces = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
        matrix = np.stack([np.frombuffer(p["vector"], dtype="<f4") for p in pieces])
        spans = tuple(
            (int(p["span_start"]), int(p["span_end"]))
            for p in pieces
            if p["span_start"] is not None
        )
        vector = StoredVector(
            model=values["model"], values=matrix if spans else matrix[0].copy(), spans=spans
        )
        return IndexDocument(
            memory_id=values["memory_id"],
            tenant_id=values["tenant_id"],
            user_id=values["user_id"],
            kind=MemoryKind(values["kind"]),
            scope=values["scope"],
            text=values["text"],
            vector=vector,
            occurred_at=_moment(values["occurred_at"]) or EPOCH,
            created_at=_moment(values["created_at"]) or EPOCH,
            category=values["category"],
            emotion=values["emotion"],
            status=None if values["status"] is None else FactStatus(values["status"]),
            expires_at=_moment(values["expires_at"]),
            event_start=_moment(values["event_start"]),
            event_end=_moment(values["event_end"]),
            session_id=values["session_id"],
            chunks=tuple(
                IndexChunk(text=p["text"], values=row, span=span)
                for p, row, span in zip(pieces, matrix, spans, strict=True)
            )
            if spans
            else (),
        )

    def _load_vectors(self) -> None:
        cursor = self._conn.execute(
            f"SELECT {', '.join(COLUMNS)}, terms FROM docs ORDER BY tenant_id, memory_id, chunk"
        )
        group: list[tuple[Any, ...]] = []
        documents: list[IndexDocument] = []
        terms: list[list[list[str]]] = []

        def flush() -> None:
            if group:
                documents.append(self._document([row[:-1] for row in group]))
                terms.append([row[-1].split() for row in group])
                group.clear()
            if len(documents) >= _BATCH:
                self._vectors.upsert(documents, terms)
                documents.clear()
                terms.clear()

        for row in cursor:
            if group and (row[0], row[1]) != (group[0][0], group[0][1]):
                flush()
            group.append(tuple(row))
        flush()
        if documents:
            self._vectors.upsert(documents, terms)

    def compact(self) -> dict[str, int]:
        """Maintenance: save the HNSW graphs that changed (so no restart rebuilds them)
        and compact the keyword database (``compaction.py``)."""
        with self._lock, self._translate():
            self._check_open()
            saved = self._vectors.save(self._ann_dir)
            counts = compaction.compact(self._conn)
        return {"ann_graphs_saved": saved, **{f"index_{k}": v for k, v in counts.items()}}

    def close(self) -> None:
        """Save the HNSW graphs (so the next start need not rebuild them), close the file
        and give up the directory's writer lock; later calls raise UnavailableError."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._vectors.save(self._ann_dir)
            except (OSError, RuntimeError) as exc:
                logger.warning("ann graphs not saved dir=%s error=%s", self._ann_dir, exc)
            self._conn.close()
            self._vectors.clear()  # the memory goes now, not when the last reference does
            self._writer_lock.release()

    # --- writes --------------------------------------------------------------------------
    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if not documents:
            return
        self._check_open()
        with self._lock:
            documents = self._keeping_served_vectors(documents)
        # the terms before the lock: segmenting long texts is the slow part of a write
        terms = [terms_of_pieces(doc) for doc in documents]
        with self._lock:
            fixed = self._vectors.model
            for document in documents:
                vector = document.vector
                if fixed is not None and fixed != (vector.model, vector.dim):
                    raise EmbeddingModelMismatchError(model_mismatch(*fixed, vector))
                fixed = fixed or (vector.model, vector.dim)
            with self._transaction() as conn:
                for document, document_terms in zip(documents, terms, strict=True):
                    conn.execute(
                        "DELETE FROM docs WHERE tenant_id = ? AND memory_id = ?",
                        (document.tenant_id, document.memory_id),
                    )
                    for piece, piece_terms in zip(document.pieces(), document_terms, strict=True):
                        self._write(conn, document, piece, piece_terms)
            self._vectors.upsert(documents, terms)

    def _keeping_served_vectors(self, documents: Sequence[IndexDocument]) -> list[IndexDocument]:
        """During an embedding-model migration (``core/usecases/reembed.py``) a record may
        already hold its new model's vector when the server re-indexes it (an approval, a
        restore): a memory this index holds keeps its served text and vectors and takes the
        rest of the change. Any other document of another model is left as it is (refused)."""
        fixed = self._vectors.model
        if fixed is None or all((d.vector.model, d.vector.dim) == fixed for d in documents):
            return list(documents)
        kept: list[IndexDocument] = []
        for document in documents:
            served = None
            if (document.vector.model, document.vector.dim) != fixed:
                served = self._served(document.tenant_id, document.memory_id)
            if served is None:
                kept.append(document)
                continue
            kept.append(
                dataclasses.replace(
                    document, text=served.text, vector=served.vector, chunks=served.chunks
                )
            )
        return kept

    def _served(self, tenant_id: str, memory_id: str) -> IndexDocument | None:
        with self._translate():
            rows = self._conn.execute(
                f"SELECT {', '.join(COLUMNS)} FROM docs WHERE tenant_id = ? AND memory_id = ? "
                "ORDER BY chunk",
                (tenant_id, memory_id),
            ).fetchall()
        return self._document(rows) if rows else None

    def keys(self) -> set[tuple[str, str]]:
        """(tenant_id, memory_id) of every memory indexed (migrations compare them)."""
        return self.indexed_ids()

    def indexed_ids(
        self, tenant_id: str | None = None, user_id: str | None = None
    ) -> set[tuple[str, str]]:
        """From ``keyword.db``, the durable copy the in-process index is loaded from and
        changed together with."""
        if user_id is not None and tenant_id is None:
            raise InvalidRequestError("indexed_ids: give the tenant of the user too")
        sql = "SELECT tenant_id, memory_id FROM docs WHERE chunk = 0"
        arguments: tuple[str, ...] = ()
        if tenant_id is not None:
            sql, arguments = sql + " AND tenant_id = ?", (tenant_id,)
        if user_id is not None:
            sql, arguments = sql + " AND user_id = ?", (*arguments, user_id)
        with self._lock, self._translate():
            self._check_open()
            return set(self._conn.execute(sql, arguments))

    def _write(
        self,
        conn: sqlite3.Connection,
        document: IndexDocument,
        piece: tuple[int, str, np.ndarray, Span | None],
        terms: Sequence[str],
    ) -> None:
        number, text, vector, span = piece
        values = (
            document.tenant_id,
            document.memory_id,
            document.user_id,
            document.kind.value,
            document.scope,
            document.category,
            document.emotion,
            None if document.status is None else document.status.value,
            document.session_id,
            epoch_us(document.occurred_at),
            epoch_us(document.created_at),
            _us(document.expires_at),
            _us(document.event_start),
            _us(document.event_end),
            text,
            document.vector.model,
            np.asarray(vector, dtype="<f4").tobytes(),
            number,
            None if span is None else span[0],
            None if span is None else span[1],
            " ".join(terms),
        )
        conn.execute(INSERT_DOC, values)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        with self._transaction() as conn:
            conn.executemany(
                "DELETE FROM docs WHERE tenant_id = ? AND memory_id = ?",
                [(tenant_id, memory_id) for memory_id in memory_ids],
            )
            self._vectors.delete(tenant_id, memory_ids)

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM docs WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id)
            )
            self._vectors.delete_user(tenant_id, user_id)
        with self._lock, self._translate():
            self._check_open()
            scrub(self._conn)  # no copy of the user's rows left in the file

    def rebuild_from(self, records: RecordStore, force: bool = False) -> int:
        """Bring the index in line with the store; returns how many documents were written.

        Indexes every memory that has a vector and is missing here, and drops documents
        whose memory is gone. With ``force`` every document is rewritten. Documents are
        made by the store use case's ``index_document``, so a rebuilt document equals a
        freshly stored one.
        """
        with self._lock:
            self._check_open()
            with self._translate():
                indexed = set(
                    self._conn.execute("SELECT tenant_id, memory_id FROM docs WHERE chunk = 0")
                )
            vector_keys = getattr(records, "vector_keys", None)
            if not force and vector_keys is not None and vector_keys() == indexed:
                return 0  # in step: the usual start, without reading every memory
            everything = {
                (memory.tenant_id, memory.memory_id): (memory, vector)
                for memory, vector in records.iter_all()
                if vector is not None and memory.archived_at is None  # archived: cold
            }
            # mid-migration (reembed.py) some records hold the next model's vectors: such a
            # memory keeps its document here, and one missing waits for the switch
            fixed = None if force else self._vectors.model
            stored = {
                key: pair
                for key, pair in everything.items()
                if fixed is None or (pair[1].model, pair[1].dim) == fixed
            }
            if force:
                self._clear()
                indexed = set()
            missing = [stored[key] for key in stored.keys() - indexed]
            extra = indexed - everything.keys()
            for tenant_id in {tenant for tenant, _ in extra}:
                self.delete(tenant_id, [mid for tenant, mid in extra if tenant == tenant_id])
            for start in range(0, len(missing), _BATCH):
                batch = missing[start : start + _BATCH]
                self.upsert([index_document(memory, vector) for memory, vector in batch])
        if missing or extra:
            logger.info(
                "search index rebuilt indexed=%d removed=%d total=%d",
                len(missing),
                len(extra),
                self.count(),
            )
        return len(missing)

    def _clear(self) -> None:
        with self._transaction() as conn:
            conn.execute("DELETE FROM docs")
        self._vectors.clear()

    # --- reads ---------------------------------------------------------------------------
    def vector_search(
        self, search_filter: SearchFilter, vector: StoredVector, k: int
    ) -> list[SearchHit]:
        self._check_open()
        return self._vectors.search(search_filter, vector, k)

    def keyword_search(self, search_filter: SearchFilter, text: str, k: int) -> list[SearchHit]:
        self._check_open()
        return self._vectors.keyword_search(search_filter, text, k)

    def count(self, tenant_id: str | None = None) -> int:
        """Memories indexed (from the in-process index, which every write changes together
        with ``keyword.db``: no SQLite read, and no wait for a write in progress)."""
        self._check_open()
        return self._vectors.count(tenant_id)

    @property
    def vectors(self) -> VectorIndex:
        """The in-process vector index (diagnostics and tests)."""
        return self._vectors
