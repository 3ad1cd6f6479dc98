"""The Python client's ``Health``: the server's health answer, ``embedding_engine`` typed.

The bodies are the server's own: ``MemoryService.health`` (what ``GET /v1/health`` answers
a caller with a key) and the engine report of an ONNX engine that has chosen its kernels,
each checked against the API's ``HealthResponse`` model first.
"""

from __future__ import annotations

from typing import Any

from hindsight_client import EmbeddingEngine, Health, KernelProbe
from hindsight_client._calls import health

from hindsight.adapters.embedders.engine_line import engine_report
from hindsight.adapters.embedders.kernel_choice import KernelChoice, ProbeResult
from hindsight.api.wire import HealthResponse
from hindsight.core.service import MemoryService
from tests.fakes import HashingEmbedder


def parsed(body: dict[str, Any]) -> Health:
    """``body`` as the server's model allows it, then as ``Hindsight.health()`` reads it."""
    HealthResponse.model_validate(body)
    return health().parse(body)


class ChosenKernelEngine(HashingEmbedder):
    """An engine that chose its kernels by a probe, as the ONNX engine reports it."""

    kernel_choice = KernelChoice(
        single="int8",
        batches="fp32",
        chosen_by="probe",
        cpu_features=("avx512_vnni", "avx2"),
        signature="test",
        probe=(
            ProbeResult("int8", 0.0179, 0.2681, 0.999959),
            ProbeResult("fp32", 0.0217, 0.2213, 0.999901),
        ),
    )


def test_the_services_health_answer_has_its_engine_typed(service: MemoryService) -> None:
    answer = parsed(service.health("acme"))
    assert isinstance(answer.embedding_engine, EmbeddingEngine)
    assert answer.embedding_engine.engine == service.ports.embedder.model_name
    assert answer.embedding_engine.kernel is None  # not the ONNX engine: no kernel path
    assert answer.embedding_engine.probe is None
    assert isinstance(answer.embedding_engine.cpu_features, list)
    assert answer.embedding_dimension == service.ports.embedder.dimension


def test_an_onnx_engines_kernel_choice_and_probe_are_typed() -> None:
    report = engine_report(ChosenKernelEngine())
    body = {"status": "success", "embedding_model": "m", "embedding_engine": report}
    engine = parsed(body).embedding_engine
    assert engine is not None
    assert engine.kernel == "int8 single texts, fp32 batches"
    assert engine.chosen_by == "probe"
    assert engine.probe == [
        KernelProbe(kernel="int8", single_ms=17.9, batch_ms=268.1, min_cosine=0.999959),
        KernelProbe(kernel="fp32", single_ms=21.7, batch_ms=221.3, min_cosine=0.999901),
    ]
    assert engine.raw == report  # as received, for what a later server adds


def test_no_engine_when_the_server_does_not_say() -> None:
    assert parsed({"status": "success"}).embedding_engine is None  # the keyless answer
    older = {"status": "success", "embedding_model": "m", "embedding_dimension": 3}
    assert parsed(older).embedding_engine is None
