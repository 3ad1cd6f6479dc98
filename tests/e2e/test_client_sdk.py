"""The Python client (clients/python, ``hindsight_client``) against the real local server.

The e2e gateway: the embedded backend (SQLite, in-process index, the bundled model) on a
free loopback port with API keys, spoken to over HTTP by ``Hindsight`` (sync).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from hindsight_client import (
    AuthenticationError,
    Hindsight,
    HindsightConnectionError,
    InvalidRequestError,
    Memory,
    NotFoundError,
    RetrievedMemory,
)

from hindsight.gateway.local_gateway import LocalGateway
from tests.e2e.conftest import E2E_KEY, OTHER_TENANT_KEY

PAGED = 45


class CountingTransport(httpx.HTTPTransport):
    """The real transport, counting the requests per path."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return super().handle_request(request)


@pytest.fixture
def memory(gateway: LocalGateway) -> Iterator[Hindsight]:
    with Hindsight(gateway.url, E2E_KEY, timeout=120.0) as client:
        yield client


def test_the_story_store_retrieve_reflect_approve_context_forget(memory: Hindsight) -> None:
    allergy = memory.store(
        "sdk-story", "I am allergic to peanuts", session_id="monday", category="constraint"
    )
    assert allergy.status == "success" and not allergy.duplicate
    again = memory.store("sdk-story", "I am allergic to peanuts", session_id="monday")
    assert again.duplicate and again.memory_id == allergy.memory_id
    memory.store("sdk-story", "The weather is lovely today")

    page = memory.retrieve("sdk-story", "what food must I avoid?", top_k=1)
    assert isinstance(page.results[0], RetrievedMemory)
    assert page.results[0].memory_id == allergy.memory_id
    assert page.results[0].score > 0 and "similarity" in page.results[0].why
    assert isinstance(page.results[0].occurred_at, datetime)

    reflected = memory.reflect("sdk-story")
    fact = next(f for f in reflected.created if "peanut" in f.content.lower())
    assert fact.kind == "semantic" and fact.status == "pending"
    assert allergy.memory_id in fact.source_memory_ids
    approved = memory.approve(fact.memory_id)
    assert isinstance(approved, Memory) and approved.status == "approved"

    context = memory.context("sdk-story", "tuesday", "dinner ideas", budget_tokens=400)
    assert "peanut" in context.context.lower() and context.tokens <= 400
    assert context.facts[0]["memory_id"] == fact.memory_id

    assert memory.get(allergy.memory_id).content == "I am allergic to peanuts"
    forgotten = memory.delete(allergy.memory_id)
    assert forgotten.deleted_facts == [fact.memory_id]
    with pytest.raises(NotFoundError) as missing:
        memory.get(allergy.memory_id)
    assert missing.value.status == 404 and allergy.memory_id in missing.value.message
    erased = memory.erase_user("sdk-story")
    assert erased.user_id == "sdk-story" and erased.deleted >= 1


def test_store_many_splits_into_batches_of_100(gateway: LocalGateway) -> None:
    transport = CountingTransport()
    items = [f"note {n}: the user mentioned item {n}" for n in range(230)]
    with Hindsight(gateway.url, E2E_KEY, timeout=120.0, transport=transport) as memory:
        results = memory.store_many("sdk-batch", items)
        assert len(results) == 230 and all(r.status == "success" for r in results)
        assert len({r.memory_id for r in results}) == 230
        assert transport.paths == ["/v1/memories/batch"] * 3
        listed = list(memory.iter_memories("sdk-batch", page_size=50))
        assert {m.memory_id for m in listed} == {r.memory_id for r in results}
        memory.erase_user("sdk-batch")


def test_paging_through_45_results(gateway: LocalGateway) -> None:
    transport = CountingTransport()
    earlier = datetime.now(UTC) - timedelta(days=3)
    items = [
        {"content": f"Trip log {n}: visited museum number {n} in Lisbon", "occurred_at": earlier}
        for n in range(PAGED)
    ]
    with Hindsight(gateway.url, E2E_KEY, timeout=120.0, transport=transport) as memory:
        stored = {r.memory_id for r in memory.store_many("sdk-paging", items)}
        transport.paths.clear()
        found = list(memory.iter_retrieve("sdk-paging", "museum visits in Lisbon", top_k=20))
        assert len(found) == PAGED and {m.memory_id for m in found} == stored
        assert transport.paths == ["/v1/retrieve"] * 3  # 20 + 20 + 5
        # pages follow the score, across pages too; the calibrated probability is in why
        scores = [m.score for m in found]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= m.why["probability"] <= 1.0 for m in found)
        assert len(list(memory.iter_retrieve("sdk-paging", "museum", top_k=20, limit=7))) == 7

        transport.paths.clear()
        listed = list(memory.iter_memories("sdk-paging", page_size=20))
        assert {m.memory_id for m in listed} == stored
        assert len(transport.paths) == 3
        first = memory.list_memories("sdk-paging", limit=20)
        assert len(first) == 20 and first.has_more and first.next_cursor
        memory.erase_user("sdk-paging")


def test_errors_are_exceptions_with_status_and_message(gateway: LocalGateway) -> None:
    with Hindsight(gateway.url, E2E_KEY) as memory:
        with pytest.raises(InvalidRequestError) as invalid:
            memory.retrieve("sdk-errors", "anything", top_k=99)
        assert invalid.value.status == 422 and "top_k" in invalid.value.message
        with pytest.raises(InvalidRequestError) as unknown:
            memory.store("sdk-errors", "x", colour="blue")
        assert "colour" in unknown.value.message
    with Hindsight(gateway.url, "not-a-key") as stranger:
        with pytest.raises(AuthenticationError) as refused:
            stranger.retrieve("sdk-errors", "anything")
        assert refused.value.status == 401
        with pytest.raises(AuthenticationError):  # a wrong key is refused on health too
            stranger.health()
    with Hindsight(gateway.url, E2E_KEY) as memory:
        assert memory.health().embedding_dimension > 0  # the caller's view, with a key
    keyless = httpx.get(f"{gateway.url}/v1/health", timeout=30)
    assert keyless.status_code == 200 and keyless.json() == {"status": "success"}


def test_tenants_are_apart_through_the_client(gateway: LocalGateway) -> None:
    with (
        Hindsight(gateway.url, E2E_KEY) as acme,
        Hindsight(gateway.url, OTHER_TENANT_KEY) as globex,
    ):
        stored = acme.store("sdk-tenant", "acme's secret plan")
        with pytest.raises(NotFoundError):
            globex.get(stored.memory_id)
        assert globex.retrieve("sdk-tenant", "secret plan").results == []
        acme.erase_user("sdk-tenant")


def test_environment_variables_configure_the_client(
    gateway: LocalGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_URL", gateway.url)
    monkeypatch.setenv("HINDSIGHT_API_KEY", E2E_KEY)
    with Hindsight() as memory:
        assert memory.base_url == gateway.url
        assert memory.store("sdk-env", "configured from the environment").status == "success"
        memory.erase_user("sdk-env")


def test_an_unreachable_server_is_a_connection_error() -> None:
    with (
        Hindsight("http://127.0.0.1:9", max_retries=1, backoff=0.01) as memory,
        pytest.raises(HindsightConnectionError) as failed,
    ):
        memory.health()
    assert failed.value.status is None and "127.0.0.1:9" in failed.value.message


def test_a_question_about_someone_unknown_names_them(memory: Hindsight) -> None:
    memory.store("sdk-names", "Jon: I am opening a dance studio", speaker="Jon")
    memory.store("sdk-names", "Gina: I painted a sunset over the lake", speaker="Gina")
    page = memory.retrieve("sdk-names", "What did Caroline paint?")
    assert page.results == [] and page.unknown_names == ["Caroline"]
    assert memory.retrieve("sdk-names", "What did Gina paint?").unknown_names == []
