"""The facade entry points call: one method per use case, nothing else.

``hindsight.bootstrap`` builds each use case from exactly the ports and policy it uses
and hands them to ``MemoryService``; entry points (Lambda handlers, the local gateway,
the CLI, the MCP server) parse input, call one method here and shape the output. The
dependencies run one way: entry points → this facade → use cases → ports; no use case
imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hindsight.core.commands import (
    ContextCommand,
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreBatchCommand,
    StoreMemoryCommand,
)
from hindsight.core.embedding import ChunkSizes, neutral_vector
from hindsight.core.errors import NotFoundError
from hindsight.core.jobs import Job as BackgroundJob
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.ports import Ports
from hindsight.core.results import (
    ContextResult,
    ListResult,
    ReflectResult,
    RetrieveResult,
    StoreOutcome,
)
from hindsight.core.usecases.archive import ArchiveMemories
from hindsight.core.usecases.browse import BrowseMemories, ReflectionStatus
from hindsight.core.usecases.context import BuildContext
from hindsight.core.usecases.documents import DocumentOutcome, StoreDocument, StoreDocumentCommand
from hindsight.core.usecases.export import ExportMemories
from hindsight.core.usecases.fan_out import (
    FanOutReflection,
    FanOutRequest,
    FanOutResult,
    ReflectionJobQueue,
)
from hindsight.core.usecases.forget import ForgetMemories
from hindsight.core.usecases.index_check import IndexCheck, check_index
from hindsight.core.usecases.jobs import BackgroundWrites, Writable
from hindsight.core.usecases.maintenance import ReindexMemories
from hindsight.core.usecases.pin import PatchMemory, PatchMemoryCommand
from hindsight.core.usecases.reflect import ReflectOnMemories
from hindsight.core.usecases.retrieve import RetrieveMemories
from hindsight.core.usecases.review import ReviewFacts
from hindsight.core.usecases.scheduled import Job, ScheduledRun, ScheduledRuns
from hindsight.core.usecases.store import StoreMemories


def one_model(embedder: object) -> AbstractContextManager[object]:
    """One embedding model for a whole request. An embedder that follows the served index
    generation (``adapters/embedders/serving.py``) may switch models when a re-embedding
    migration completes; pinned, it switches between requests, never within one."""
    pinned = getattr(embedder, "pinned", None)
    return pinned() if pinned is not None else nullcontext()


@dataclass(frozen=True)
class UseCases:
    """Every use case of one service, each built from its own ports (see the bootstrap)."""

    store: StoreMemories
    retrieve: RetrieveMemories
    reflect: ReflectOnMemories
    review: ReviewFacts
    context: BuildContext
    browse: BrowseMemories
    forget: ForgetMemories
    reindex: ReindexMemories
    documents: StoreDocument
    archive: ArchiveMemories | None = None  # the lifecycle's archive (core/usecases/archive.py)


@dataclass(frozen=True)
class MemoryService:
    """What entry points call. ``ports`` and ``policy`` are kept for operators, tests and
    benchmarks, which inspect the adapters; entry points never reach through to them
    (``tests/unit/test_architecture.py`` checks)."""

    use_cases: UseCases
    ports: Ports
    policy: Policy

    # --- store ---------------------------------------------------------------
    def store(self, principal: Principal, command: StoreMemoryCommand) -> StoreOutcome:
        with one_model(self.ports.embedder):
            return self.use_cases.store(principal, [command])[0]

    def store_batch(self, principal: Principal, command: StoreBatchCommand) -> list[StoreOutcome]:
        with one_model(self.ports.embedder):
            return self.use_cases.store(principal, command.commands())

    def store_document(
        self, principal: Principal, command: StoreDocumentCommand
    ) -> DocumentOutcome:
        """Store a file as one memory, or replace the memory of its document_id."""
        with one_model(self.ports.embedder):
            return self.use_cases.documents(principal, command)

    # --- background writes (core/usecases/jobs.py) ----------------------------
    @property
    def accepts_jobs(self) -> bool:
        """Whether this service keeps jobs (a job store is configured)."""
        return self.ports.jobs is not None

    def submit_job(self, principal: Principal, command: Writable) -> BackgroundJob:
        """Accept a store, batch or document as a job (kept before this returns)."""
        return self._jobs().submit(principal, command)

    def get_job(self, principal: Principal, job_id: str) -> BackgroundJob:
        return self._jobs().get(principal, job_id)

    def run_job(self, job_id: str) -> BackgroundJob | None:
        """Run an accepted (or interrupted) job to its end."""
        with one_model(self.ports.embedder):
            return self._jobs().run(job_id)

    def unfinished_jobs(self) -> list[str]:
        return self._jobs().unfinished() if self.ports.jobs is not None else []

    def _jobs(self) -> BackgroundWrites:
        jobs = self.ports.jobs
        if jobs is None:
            raise NotFoundError(
                "this deployment keeps no jobs: it answers every store when it is done "
                "(jobs are kept by `hindsight serve`); send the request without "
                "`Prefer: respond-async`"
            )
        ports, use_cases = self.ports, self.use_cases
        return BackgroundWrites(
            jobs, use_cases.store, use_cases.documents, ports.records, ports.clock, ports.ids
        )

    # --- retrieve ------------------------------------------------------------
    def retrieve(self, principal: Principal, command: RetrieveCommand) -> RetrieveResult:
        with one_model(self.ports.embedder):
            return self.use_cases.retrieve(principal, command)

    # --- reflect and review --------------------------------------------------
    def reflect(self, principal: Principal, command: ReflectCommand) -> ReflectResult:
        with one_model(self.ports.embedder):
            return self.use_cases.reflect(principal, command)

    def approve(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        return self.use_cases.review(principal, memory_id, approve=True)

    def reject(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        return self.use_cases.review(principal, memory_id, approve=False)

    def fan_out_reflection(self, request: FanOutRequest, queue: ReflectionJobQueue) -> FanOutResult:
        """Queue one reflection job per user with new episodes (the scheduled run)."""
        return FanOutReflection(self.ports.records, queue, self.ports.clock)(request)

    def scheduled_run(self, job: str, due: datetime, run: Job) -> ScheduledRun:
        """Run a local schedule's job for its due time, once, one process at a time."""
        return ScheduledRuns(self.ports.records, self.ports.clock)(job, due, run)

    def run_exclusive(self, job: str, run: Job) -> ScheduledRun:
        """Run a scheduled job now, by hand, never beside a scheduled run of it."""
        return ScheduledRuns(self.ports.records, self.ports.clock).run_now(job, run)

    def last_scheduled_run(self, job: str) -> datetime | None:
        """The last due time a local schedule's job served (None: never)."""
        return ScheduledRuns(self.ports.records, self.ports.clock).last_served(job)

    # --- context -------------------------------------------------------------
    def context(self, principal: Principal, command: ContextCommand) -> ContextResult:
        with one_model(self.ports.embedder):
            return self.use_cases.context(principal, command)

    # --- read / forget -------------------------------------------------------
    def list_memories(self, principal: Principal, command: ListMemoriesCommand) -> ListResult:
        return self.use_cases.browse.list_memories(principal, command)

    def get_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        return self.use_cases.browse.get_memory(principal, memory_id)

    def reflection_status(self, principal: Principal, user_id: str) -> ReflectionStatus:
        return self.use_cases.browse.reflection_status(principal, user_id)

    def delete_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        return self.use_cases.forget.forget_memory(principal, memory_id)

    def erase_user(self, principal: Principal, user_id: str) -> dict[str, Any]:
        if self.ports.jobs is not None and "*" in principal.write_scopes:
            # first: their inputs hold the user's words, and a pending one would store them
            # (a key that may not erase is refused by the erasure itself)
            self.ports.jobs.forget_user(principal.tenant_id, user_id)
        return self.use_cases.forget.erase_user(principal, user_id)

    # --- operations ----------------------------------------------------------
    def reindex(
        self, re_embed: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        """Operator task (no principal): rebuild the index, optionally re-embedding."""
        return self.use_cases.reindex(re_embed=re_embed, progress=progress)

    def check_index(self, tenant_id: str | None = None, user_id: str | None = None) -> IndexCheck:
        """Operator task (no principal): does the search index agree with the record store
        (of one tenant, one user of it, or everything)?"""
        return check_index(self.ports.records, self.ports.index, tenant_id, user_id)

    def restore_memory(self, principal: Principal, memory_id: str) -> dict[str, Any]:
        """Bring an archived memory back into search."""
        return self._archive().restore(principal, memory_id)

    def maintain(self, renew: Callable[[], None] | None = None) -> dict[str, int]:
        """Operator task (no principal): archive unused episodes, compact the files."""
        return self._archive().maintain(renew)

    def patch_memory(
        self, principal: Principal, memory_id: str, command: PatchMemoryCommand
    ) -> dict[str, Any]:
        """Pin or unpin a memory (a pinned memory is never archived)."""
        return PatchMemory(self.ports.records, self.ports.clock)(principal, memory_id, command)

    def _archive(self) -> ArchiveMemories:
        if self.use_cases.archive is None:
            return ArchiveMemories(
                self.ports.records, self.ports.index, self.ports.clock, self.policy
            )
        return self.use_cases.archive

    def export_user(self, principal: Principal, user_id: str) -> Iterator[str]:
        """A user's memories as JSON lines (core/usecases/export.py), page by page."""
        return self._export().export(principal, user_id)

    def import_export(
        self, principal: Principal, lines: Iterable[str], user_id: str | None = None
    ) -> dict[str, Any]:
        """Restore an export (ids, times, links kept; embedded with this service's model)."""
        return self._export().import_lines(principal, lines, user_id)

    def _export(self) -> ExportMemories:
        sizes = ChunkSizes(
            self.policy.chunk_tokens, self.policy.chunk_overlap_tokens, self.policy.turn_weight
        )
        ports = self.ports
        return ExportMemories(ports.records, ports.index, ports.embedder, ports.clock, sizes)

    def flush_hits(self) -> int:
        """Write the hit counts retrieval noted since the last flush (access tracking;
        a background thread does this every few seconds); returns memories written."""
        hits = self.use_cases.retrieve.hits
        return hits.flush() if hits is not None else 0

    def now(self) -> datetime:
        """The service clock's current time (aware UTC)."""
        return self.ports.clock.now()

    def warm_up(self) -> None:
        """Load the embedding model now rather than on the first request, and embed what
        every search needs (the neutral vector): under load that embedding would otherwise
        queue behind the first stores' passages."""
        self.ports.embedder.embed_query("warm up")
        neutral_vector(self.ports.embedder)

    def health(self, tenant_id: str | None = None) -> dict[str, Any]:
        """The model, what runs it, the reflector and the documents indexed (of one tenant,
        or all: the operator's view)."""
        answer: dict[str, Any] = {
            "status": "success",
            "embedding_model": self.ports.embedder.model_name,
            "embedding_dimension": self.ports.embedder.dimension,
        }
        if self.ports.engine_report is not None:
            answer["embedding_engine"] = dict(self.ports.engine_report(self.ports.embedder))
        answer["reflector"] = self.ports.reflector.label
        answer["indexed_documents"] = self.ports.index.count(tenant_id)
        return answer
