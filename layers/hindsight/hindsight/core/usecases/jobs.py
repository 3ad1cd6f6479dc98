"""Background writes: a store, a batch or a document accepted now and done by a job.

``submit`` checks what can be checked at once (the caller may write the scope, the
content is within the limit), fixes what a second run must repeat exactly (the ids the
memories get, the time they occurred when the request left it to "now"), and keeps the
job in the ``JobStore`` before it returns: once the caller is told the job was
accepted, the job outlives the process. ``run`` does it, reporting texts embedded out of
all, and keeps the outcome the request would have answered had it waited.

Run twice (the server stopped mid-job and resumed it at its start), a job writes nothing
twice: the memories it already wrote are found under the ids it chose (a batch is
written whole or not at all, so finding any means the write was done) and answered as
stored; the rest are stored as the first run would have stored them. A document's
memory has an id of its own (``document_memory_id``): a second run finds it unchanged.

The use case knows nothing of HTTP: which requests may become jobs, and the queue that
runs them, are the entry point's (``hindsight serve``: ``server/jobs.py``).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from hindsight.core.access import require_write
from hindsight.core.commands import StoreBatchCommand, StoreMemoryCommand
from hindsight.core.embedding import reporting
from hindsight.core.errors import HindsightError, NotFoundError
from hindsight.core.jobs import Job, JobKind
from hindsight.core.models import EpisodicMemory, Memory, Principal
from hindsight.core.ports import Clock, IdGenerator, JobStore, RecordStore
from hindsight.core.results import StoreOutcome
from hindsight.core.usecases.documents import StoreDocument, StoreDocumentCommand
from hindsight.core.usecases.store import StoreMemories

logger = logging.getLogger(__name__)

KEEP_SECONDS = 86_400.0  # a finished job (its input and outcome) is kept a day
Writable = StoreMemoryCommand | StoreBatchCommand | StoreDocumentCommand


class BackgroundWrites:
    """Accept writes as jobs, run them, say how they are doing."""

    def __init__(
        self,
        jobs: JobStore,
        store: StoreMemories,
        documents: StoreDocument,
        records: RecordStore,
        clock: Clock,
        ids: IdGenerator,
        keep_seconds: float = KEEP_SECONDS,
    ) -> None:
        self.jobs = jobs
        self.store = store
        self.documents = documents
        self.records = records
        self.clock = clock
        self.ids = ids
        self.keep_seconds = keep_seconds

    # --- accepting -----------------------------------------------------------------
    def submit(self, principal: Principal, command: Writable) -> Job:
        """Check, keep and return a new pending job for ``command``."""
        now = self.clock.now()
        kind, payload = self._input(principal, command, now)
        job = Job(
            job_id=self.ids.new_id("job"),
            tenant_id=principal.tenant_id,
            user_id=command.user_id,
            kind=kind,
            principal=principal,
            input=payload,
            created_at=now,
            updated_at=now,
        )
        self.jobs.expire(now - timedelta(seconds=self.keep_seconds))
        self.jobs.create(job)
        logger.info("job accepted tenant=%s job=%s kind=%s", job.tenant_id, job.job_id, kind)
        return job

    def _input(
        self, principal: Principal, command: Writable, now: datetime
    ) -> tuple[JobKind, dict[str, Any]]:
        if isinstance(command, StoreDocumentCommand):
            require_write(principal, command.scope or principal.default_scope)
            data = base64.b64encode(command.data).decode("ascii")
            return "store_document", {
                "command": command.model_dump(mode="json", exclude={"data"}),
                "data": data,
            }
        if isinstance(command, StoreBatchCommand):
            kind: JobKind = "store_batch"
            commands = command.commands()
        else:
            kind, commands = "store_memory", [command]
        for position, each in enumerate(commands):
            self.store.check_length(each.content, position if kind == "store_batch" else None)
            require_write(principal, each.scope or principal.default_scope)
        # a second run must build the very same memories: the same ids, the same time
        pinned = [
            each.model_copy(update={"occurred_at": each.occurred_at or now}) for each in commands
        ]
        return kind, {
            "commands": [each.model_dump(mode="json", exclude_none=True) for each in pinned],
            "memory_ids": [self.ids.new_id("mem") for _ in pinned],
        }

    # --- reading -------------------------------------------------------------------
    def get(self, principal: Principal, job_id: str) -> Job:
        """The job, for the key that asked for it (or one that may read every scope)."""
        job = self.jobs.get(principal.tenant_id, job_id)
        if job is None or not _may_see(principal, job):
            raise NotFoundError(
                f"no job {job_id}: check the id (from the Location of the 202 answer); "
                f"a finished job is kept for {self.keep_seconds / 3600:g} h"
            )
        return job

    def unfinished(self) -> list[str]:
        return self.jobs.unfinished()

    def forget_user(self, tenant_id: str, user_id: str) -> int:
        return self.jobs.forget_user(tenant_id, user_id)

    # --- running -------------------------------------------------------------------
    def run(self, job_id: str) -> Job | None:
        """Run a pending (or interrupted) job to its end; None if there is none to run."""
        job = self.jobs.claim(job_id, self.clock.now())
        if job is None:
            return None

        def progress(done: int, total: int) -> None:
            self.jobs.report(job_id, done, total, self.clock.now())

        try:
            with reporting(progress):
                outcome = self._execute(job)
        except HindsightError as error:
            self.jobs.finish(job_id, self.clock.now(), error=error.message)
            logger.info("job failed job=%s error=%s", job_id, type(error).__name__)
        except Exception:
            logger.exception("job failed unexpectedly job=%s", job_id)
            message = (
                f"job {job_id} failed on an unexpected error (the server's log has it); "
                "send the request again"
            )
            self.jobs.finish(job_id, self.clock.now(), error=message)
        else:
            self.jobs.finish(job_id, self.clock.now(), outcome=outcome)
            logger.info("job done job=%s attempts=%d", job_id, job.attempts)
        return self.jobs.get(job.tenant_id, job_id)

    def _execute(self, job: Job) -> dict[str, Any]:
        if job.kind == "store_document":
            data = base64.b64decode(job.input["data"])
            command = StoreDocumentCommand.model_validate({**job.input["command"], "data": data})
            outcome = self.documents(job.principal, command)
            return outcome.model_dump(mode="json", exclude_none=True)
        commands = [StoreMemoryCommand.model_validate(c) for c in job.input["commands"]]
        outcomes = self._store_once(job, commands, list(job.input["memory_ids"]))
        answers = [o.model_dump(mode="json", exclude_none=True) for o in outcomes]
        if job.kind == "store_batch":
            return {"status": "success", "results": answers}
        return answers[0]

    def _store_once(
        self, job: Job, commands: Sequence[StoreMemoryCommand], memory_ids: list[str]
    ) -> list[StoreOutcome]:
        """Store what an earlier run of the job did not: memories already under the job's
        ids are answered as stored, the others stored now."""
        written = {m.memory_id: m for m in self.records.get_many(job.tenant_id, memory_ids)}
        todo = [i for i, memory_id in enumerate(memory_ids) if memory_id not in written]
        if written:
            logger.info("job resumed job=%s found_written=%d", job.job_id, len(written))
        stored = iter(
            self.store(job.principal, [commands[i] for i in todo], [memory_ids[i] for i in todo])
            if todo
            else []
        )
        return [
            _stored_before(written[memory_id]) if memory_id in written else next(stored)
            for memory_id in memory_ids
        ]


def _stored_before(memory: Memory) -> StoreOutcome:
    """What the store answered for a memory an earlier run of the job wrote."""
    event_time = memory.event_time if isinstance(memory, EpisodicMemory) else []
    return StoreOutcome(status="success", memory_id=memory.memory_id, event_time=event_time)


def _may_see(principal: Principal, job: Job) -> bool:
    return job.principal.key_id == principal.key_id or "*" in principal.read_scopes
