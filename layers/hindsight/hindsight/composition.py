"""Composition: the use cases wired from ports and a policy, and the policy from settings.

``assemble`` gives each use case exactly the ports and policy knobs it uses; the backend
builders (``backends.py``) make the ports, ``bootstrap.py`` keeps the process's service.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hindsight.core.embedding import ChunkSizes
from hindsight.core.hit_log import HitLog
from hindsight.core.policy import Policy
from hindsight.core.ports import DocumentConverter, Ports
from hindsight.core.retrieval.rerank import Reranking
from hindsight.core.secrets import SecretScreen, secrets_mode
from hindsight.core.service import MemoryService, UseCases
from hindsight.core.usecases.archive import ArchiveMemories
from hindsight.core.usecases.browse import BrowseMemories
from hindsight.core.usecases.context import BuildContext
from hindsight.core.usecases.documents import StoreDocument
from hindsight.core.usecases.forget import ForgetMemories
from hindsight.core.usecases.maintenance import ReindexMemories
from hindsight.core.usecases.reflect import ReflectOnMemories
from hindsight.core.usecases.retrieve import RetrieveMemories
from hindsight.core.usecases.review import ReviewFacts
from hindsight.core.usecases.store import StoreMemories
from hindsight.settings import Settings


def policy_from(settings: Settings) -> Policy:
    """Every policy knob from its setting of the same name (``HINDSIGHT_<NAME>``); the
    searches side by side, unless set, where each is a round trip (the AWS backend)."""
    knobs = {f.name: getattr(settings, f.name) for f in dataclasses.fields(Policy)}
    if knobs["parallel_searches"] is None:
        knobs["parallel_searches"] = settings.backend.strip().lower() == "aws"
    return Policy(**knobs)


def assemble(ports: Ports, policy: Policy | None = None) -> MemoryService:
    """Wire every use case from exactly the ports and policy knobs it uses."""
    policy = policy or Policy()
    if ports.engine_report is None:
        from hindsight.adapters.embedders.engine_line import engine_report

        ports = dataclasses.replace(ports, engine_report=engine_report)
    records, writer, clock = ports.records, ports.writer, ports.clock
    sizes = ChunkSizes(policy.chunk_tokens, policy.chunk_overlap_tokens, policy.turn_weight)
    rerank = Reranking.of(ports.reranker, policy, clock)  # None without a reranker
    retrieve = RetrieveMemories(
        records, ports.index, ports.embedder, clock, policy, HitLog(records, clock), rerank
    )
    use_cases = UseCases(
        store=StoreMemories(
            records,
            writer,
            ports.embedder,
            clock,
            ports.ids,
            policy.dedup_window_seconds,
            max_content_chars=policy.max_content_chars,
            chunk_sizes=sizes,
            secrets=SecretScreen(secrets_mode(policy.secrets)),
            keys=ports.keys,
            session_context=policy.session_context,
            context_tokens=policy.context_tokens,
        ),
        retrieve=retrieve,
        reflect=ReflectOnMemories(
            records,
            writer,
            ports.embedder,
            ports.reflector,
            clock,
            ports.ids,
            batch_size=policy.reflect_batch_size,
            auto_approve_high_confidence=policy.auto_approve_high_confidence,
        ),
        review=ReviewFacts(records, writer, clock),
        context=BuildContext(records, ports.reflector, clock, retrieve),
        browse=BrowseMemories(records, clock),
        forget=ForgetMemories(records, writer, clock, ports.answers, means=retrieve.means),
        reindex=ReindexMemories(records, ports.index, ports.embedder, sizes, ports.keys),
        archive=ArchiveMemories(records, ports.index, clock, policy),
        documents=StoreDocument(
            records,
            writer,
            ports.embedder,
            ports.documents or default_document_converter(),
            clock,
            max_document_bytes=policy.max_document_bytes,
            max_content_chars=policy.max_content_chars,
            chunk_sizes=sizes,
            secrets=SecretScreen(secrets_mode(policy.secrets)),
        ),
    )
    return MemoryService(use_cases=use_cases, ports=ports, policy=policy)


def default_document_converter() -> DocumentConverter:
    """markitdown where installed (``hindsight[documents]``), else Markdown and text only."""
    from hindsight.adapters.documents import MarkItDownConverter

    return MarkItDownConverter()


def rewire(service: MemoryService, policy: Policy | None = None, **ports: Any) -> MemoryService:
    """The same service with another policy or other adapters (benchmarks and tests
    compare them). A new record store or index gets a writer of the same policy."""
    changed = dataclasses.replace(service.ports, **ports)
    if "writer" not in ports and {"records", "index"} & ports.keys():
        writer = type(changed.writer)(changed.records, changed.index)  # type: ignore[call-arg]
        changed = dataclasses.replace(changed, writer=writer)
    return assemble(changed, policy or service.policy)
