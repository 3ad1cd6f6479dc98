"""Ports: what the core needs from the outside world, as typing.Protocol.

Adapters (embedded SQLite / in-process index / local model; AWS DynamoDB /
OpenSearch / Bedrock) implement these. Every record store passes
``tests/contract/test_record_store_contract.py`` and every search index
``tests/contract/test_search_index_contract.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hindsight.core.jobs import Job
from hindsight.core.models import (
    EpisodicMemory,
    IndexDocument,
    ListQuery,
    Memory,
    Page,
    ReflectionOutput,
    SearchFilter,
    SearchHit,
    SemanticMemory,
    SessionSummary,
    StoredVector,
)


@runtime_checkable
class RecordStore(Protocol):
    """Source of truth for memories, dedup markers and reflection cursors.

    Every method takes the tenant explicitly: a store never returns or changes
    another tenant's items, whatever ids it is given.
    """

    def put(
        self,
        memory: Memory,
        vector: StoredVector | None = None,
        dedup_key: str | None = None,
        dedup_window_seconds: float = 0.0,
    ) -> None:
        """Write a new memory (and its vector) atomically.

        With ``dedup_key``: if a marker for that key exists whose memory is still
        stored, was not deleted, and occurred within ``dedup_window_seconds`` of this
        memory's ``occurred_at``, nothing is written and ``DuplicateMemoryError``
        (carrying the existing id) is raised. Otherwise the marker is (re)claimed for
        this memory in the same atomic write. Concurrent puts of one key create one
        memory.
        """

    def update(self, memory: Memory, vector: StoredVector | None = None) -> None:
        """Replace an existing memory (same id and tenant); NotFoundError if absent.

        With ``vector``, its stored vector is replaced too (re-embedding).
        """

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        """The memory, or None if absent or another tenant's (expired ones included)."""

    def get_many(self, tenant_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        """Those of the ids that exist for the tenant, in the order given."""

    def get_vectors(self, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, StoredVector]:
        """Stored vectors of those ids that have one."""

    def list(
        self,
        tenant_id: str,
        user_id: str,
        query: ListQuery,
        limit: int,
        cursor: str | None = None,
    ) -> Page:
        """A page of the user's memories, newest ``occurred_at`` first (or oldest first).

        Expired memories (``expires_at <= query.now``) are left out unless
        ``include_expired``. ``cursor`` is the opaque value of a previous page's
        ``next_cursor``; an invalid cursor raises InvalidRequestError.
        """

    def list_ids(self, tenant_id: str, user_id: str, query: ListQuery, limit: int) -> Sequence[str]:
        """The ids of ``list``'s first page (same filters, same order), without reading
        the memories themselves: their content (which may be large and kept elsewhere)
        and their hit counts."""

    def delete(self, tenant_id: str, memory_id: str) -> bool:
        """Delete one memory (and its dedup marker); False if it did not exist."""

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        """Delete everything of a user: memories, markers, cursors, leases. Returns memories
        deleted."""

    def get_cursor(self, tenant_id: str, user_id: str, name: str) -> datetime | None:
        """A named per-user cursor (e.g. the last reflection), or None."""

    def set_cursor(self, tenant_id: str, user_id: str, name: str, value: datetime) -> None:
        """Set a named per-user cursor."""

    def acquire_lease(
        self, tenant_id: str, user_id: str, name: str, holder: str, until: datetime, now: datetime
    ) -> bool:
        """Take (or, for its holder, extend) a named per-user lease until ``until``.

        True if ``holder`` now holds it: there was none, it had expired (its ``until``
        at or before ``now``), or ``holder`` held it already. False while another
        holder's lease runs. Atomic across threads and processes: of concurrent takers,
        exactly one wins. Used so that two reflections of one user never run at once.
        ``erase_user`` removes the user's leases.
        """

    def release_lease(self, tenant_id: str, user_id: str, name: str, holder: str) -> None:
        """Give the lease up if ``holder`` holds it; otherwise change nothing."""

    def iter_all(
        self, tenant_id: str | None = None
    ) -> Sequence[tuple[Memory, StoredVector | None]]:
        """Every memory with its vector (all tenants when None); used to rebuild indexes."""

    def users_with_episodes_since(self, since: datetime) -> Sequence[tuple[str, str]]:
        """(tenant_id, user_id) pairs that have episodic memories created after ``since``."""

    def record_hits(self, tenant_id: str, hits: Mapping[str, int], at: datetime) -> None:
        """Add ``hits[memory_id]`` to each memory's ``hit_count`` and set its ``last_hit_at``
        to ``at`` (if later), atomically per memory, so concurrent writers lose no count.
        Ids that no longer exist are skipped (never recreated). Updates and puts of the
        memory keep the counts the store holds."""


@runtime_checkable
class SearchIndex(Protocol):
    """Derived, rebuildable index of text and vectors for hybrid retrieval."""

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        """Add or replace documents (by tenant and memory id)."""

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Remove documents; unknown ids are ignored."""

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        """Remove every document of a user."""

    def vector_search(
        self, search_filter: SearchFilter, vector: StoredVector, k: int
    ) -> list[SearchHit]:
        """Top ``k`` by cosine similarity among documents passing the filter.

        Raises EmbeddingModelMismatchError if the index holds vectors of another model.
        """

    def keyword_search(self, search_filter: SearchFilter, text: str, k: int) -> list[SearchHit]:
        """Top ``k`` by BM25-like relevance among documents passing the filter.

        Works for Chinese (no spaces between words) as well as English.
        """

    def count(self, tenant_id: str | None = None) -> int:
        """How many documents (of one tenant, or all)."""

    def indexed_ids(
        self, tenant_id: str | None = None, user_id: str | None = None
    ) -> set[tuple[str, str]]:
        """(tenant_id, memory_id) of every memory indexed, once per memory however many
        pieces it has: all of them, one tenant's, or one user's of that tenant (``user_id``
        needs ``tenant_id``). Consistency checks compare them with the record store."""


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors."""

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def window_tokens(self) -> int:
        """How many tokens the model reads of one text (its prefix and special tokens
        included); long memories are split into chunks that fit (``core/chunking.py``)."""

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` embedded as a document, prefix and special tokens included."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dimension)."""

    def embed_query(self, text: str) -> np.ndarray:
        """Shape (dimension,). Models with query/passage roles use the query role."""


@runtime_checkable
class Reflector(Protocol):
    """Distils episodic memories into facts, and summarises sessions."""

    @property
    def label(self) -> str:
        """Human-readable name shown with everything it produced."""

    def reflect(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
    ) -> ReflectionOutput:
        """Facts the user stated explicitly, each with its source memory ids.

        Raises ReflectorOutputError when output stays invalid after one retry and
        UnavailableError when the model cannot be reached.
        """

    def summarize(self, episodes: Sequence[EpisodicMemory]) -> SessionSummary:
        """Intent, key entities, open tasks and mood of these turns."""


@runtime_checkable
class RunScopedReflector(Protocol):
    """A reflector with state per reflection run (an LLM's token budget): the reflect use
    case asks it for a fresh reflector for each run."""

    def for_run(self) -> Reflector:
        """A reflector for one run; its budget is not shared with other runs."""


@runtime_checkable
class VectorReusingReflector(Protocol):
    """A reflector that can reuse the episodes' stored vectors instead of embedding again
    (the learned one). The reflect use case fetches the stored vectors of the episodes it
    hands over whole (``RecordStore.get_vectors``) and calls this instead of ``reflect``;
    a stored vector is the embedder's passage vector of ``core.indexing.index_text`` of
    its episode (the turn before it, the content, what the agent did and the outcome)."""

    def reflect_with_vectors(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
        vectors: Mapping[str, StoredVector],
    ) -> ReflectionOutput:
        """``Reflector.reflect`` given the stored vectors (by memory id; some may be
        missing) of some of the episodes."""


@runtime_checkable
class Reranker(Protocol):
    """A model that reads the query and a memory together and says how well the memory
    answers it (a cross-encoder, a rerank API, an LLM): the optional second stage of
    retrieve (``core/retrieval/rerank.py``)."""

    @property
    def label(self) -> str:
        """The reranker's name as ``why`` shows it: "cross-encoder:<model>", "bedrock:..."."""

    def warm(self) -> None:
        """Load what the first call needs (a local model: seconds, once); retrieve calls it
        before the rerank's time budget starts. Nothing to do for a remote model."""

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance in [0, 1] per text, in the order of ``texts`` (higher: answers the
        query better). Raises when the model cannot be reached or its answer is unusable;
        the caller keeps the first-stage order then."""


@runtime_checkable
class Clock(Protocol):
    def now(self) -> datetime:
        """Aware UTC wall-clock time."""

    def monotonic(self) -> float:
        """Seconds, for time budgets."""


@runtime_checkable
class IdGenerator(Protocol):
    def new_id(self, prefix: str) -> str:
        """A new, unique, time-sortable id such as ``mem_01J...``."""


@dataclass(frozen=True)
class NewRecord:
    """A memory to add, with its vector and (for episodes) its dedup key."""

    memory: Memory
    vector: StoredVector
    dedup_key: str | None = None


@runtime_checkable
class MemoryWriter(Protocol):
    """The write policy: how a change reaches the record store and the search index together.

    The record store is the source of truth; the index is derived. What happens when the
    index write fails is the policy, and each backend names its own
    (``hindsight.adapters.writers``): the embedded store undoes the records
    (``CompensatingWriter``), AWS keeps them for the stream indexer to apply
    (``StreamRepairedWriter``). Both pass ``tests/contract/test_memory_writer_contract.py``.
    """

    def add(self, records: Sequence[NewRecord], dedup_window_seconds: float = 0.0) -> list[str]:
        """Write new memories and index them; one entry per record, in order: the memory's
        own id if written, or the existing memory's id if its dedup key claimed a recent
        duplicate (nothing written for it)."""

    def update(self, tenant_id: str, memories: Sequence[Memory]) -> None:
        """Replace existing memories and re-index them with their stored vectors."""

    def replace(self, record: NewRecord) -> None:
        """Replace an existing memory's content and vector (every chunk) in both;
        NotFoundError if it does not exist."""

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Delete memories from the record store and the index."""

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        """Delete everything of a user from both; returns the memories deleted."""


@dataclass(frozen=True)
class ConvertedDocument:
    """A file's text: Markdown where the format has structure (headings, lists, tables)."""

    text: str
    media_type: str  # what the file was read as, e.g. "application/pdf"
    converter: str  # what read it, e.g. "markitdown 0.1.9"


@runtime_checkable
class DocumentConverter(Protocol):
    """Turns an uploaded file (Markdown, plain text, HTML, PDF, DOCX...) into text."""

    @property
    def media_types(self) -> Sequence[str]:
        """The media types this converter reads (error messages list them)."""

    def convert(self, data: bytes, file_name: str, media_type: str | None) -> ConvertedDocument:
        """The file's text; its type from ``media_type``, else the file name, else its bytes.

        Raises UnsupportedDocumentError (naming the supported types) for a type it cannot
        read, and UnreadableDocumentError for a damaged file or one without text.
        """


class KeyExpander(Protocol):
    """Extra search keys for a memory, derived when it is stored: what it is *about* when
    that is not in its words ("I don't eat spicy food" is about diet, 饮食), so a query
    naming the topic finds it. Keys are indexed beside the text for keyword search (never
    embedded) and kept on the record (``EpisodicMemory.search_keys``), so a rebuilt index
    holds them too."""

    def keys(self, text: str) -> list[str]:
        """The keys of one memory's text: short phrases, no duplicates, at most a few
        dozen words; empty when nothing is recognised. Never raises for any text."""


class KeptAnswers(Protocol):
    """The answers kept for retried writes (the ``Idempotency-Key`` records): each holds
    the first answer of a store, the stored memory with it, for a day. Erasing a user
    forgets those of the user's writes too, so nothing of the user outlives the erasure."""

    def forget_user(self, tenant_id: str, user_id: str) -> int:
        """Delete the kept answers of the user's writes; how many there were."""


class JobStore(Protocol):
    """Where jobs wait, run and end (``core/usecases/jobs.py``). A job written by
    ``create`` survives the process: the server resumes what was not finished."""

    def create(self, job: Job) -> None:
        """Keep a new job (durably, before the caller is told it was accepted)."""

    def get(self, tenant_id: str, job_id: str) -> Job | None:
        """The tenant's job, or None (another tenant's job is None too)."""

    def claim(self, job_id: str, now: datetime) -> Job | None:
        """Mark an unfinished job running, one more attempt; None if it is finished or
        gone (it is not run then)."""

    def report(self, job_id: str, done: int, total: int, now: datetime) -> None:
        """Record how far a running job got."""

    def finish(
        self,
        job_id: str,
        now: datetime,
        outcome: Mapping[str, object] | None = None,
        error: str | None = None,
    ) -> None:
        """End a job: succeeded with its outcome, or failed with ``error``."""

    def unfinished(self) -> list[str]:
        """Ids of the jobs pending or running, oldest first (to resume at a start)."""

    def forget_user(self, tenant_id: str, user_id: str) -> int:
        """Delete every job of a user (their inputs hold the user's words); how many."""

    def expire(self, finished_before: datetime) -> int:
        """Delete jobs that finished before the time; how many."""


@dataclass(frozen=True)
class Ports:
    """Every adapter one service is built from; the bootstrap hands each use case its own."""

    records: RecordStore
    index: SearchIndex
    embedder: Embedder
    reflector: Reflector
    clock: Clock
    ids: IdGenerator
    writer: MemoryWriter
    # reads uploaded documents; None: the bootstrap's default (hindsight.adapters.documents)
    documents: DocumentConverter | None = None
    # store-time search keys (HINDSIGHT_KEY_EXPANSION); None: memories get none
    keys: KeyExpander | None = None
    # the idempotency records an erasure also forgets; None: the service keeps none
    answers: KeptAnswers | None = None
    # the second stage of retrieve (HINDSIGHT_RERANKER); None: the first-stage order stands
    reranker: Reranker | None = None
    # where accepted background writes wait (``Prefer: respond-async``); None: none are
    jobs: JobStore | None = None
    # what runs the embedder (engine, kernel path, CPU features) for the detailed health
    # answer; None: the health answer names the model only
    engine_report: Callable[[Embedder], Mapping[str, Any]] | None = None
