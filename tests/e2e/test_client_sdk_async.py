"""``AsyncHindsight`` against the real local server: the same methods, awaited."""

from __future__ import annotations

import asyncio

from hindsight_client import AsyncHindsight, InvalidRequestError, NotFoundError, RetrievedMemory

from hindsight.gateway.local_gateway import LocalGateway
from tests.e2e.conftest import E2E_KEY

PAGED = 45


def test_the_story_awaited(gateway: LocalGateway) -> None:
    async def story() -> None:
        async with AsyncHindsight(gateway.url, E2E_KEY, timeout=120.0) as memory:
            allergy = await memory.store(
                "sdk-async", "用户对花生过敏", session_id="s1", category="constraint"
            )
            assert allergy.status == "success"
            page = await memory.retrieve("sdk-async", "饮食禁忌", top_k=3)
            assert isinstance(page.results[0], RetrievedMemory)
            assert page.results[0].memory_id == allergy.memory_id
            reflected = await memory.reflect("sdk-async")
            fact = reflected.created[0]
            assert (await memory.reject(fact.memory_id)).status == "rejected"
            context = await memory.context("sdk-async", "s1")
            assert "花生" in context.context
            assert (await memory.get(allergy.memory_id)).category == "constraint"
            assert (await memory.delete(allergy.memory_id)).memory_id == allergy.memory_id
            try:
                await memory.get(allergy.memory_id)
            except NotFoundError as exc:
                assert exc.status == 404
            else:
                raise AssertionError("a deleted memory was still found")
            assert (await memory.health()).indexed_documents >= 0
            await memory.erase_user("sdk-async")

    asyncio.run(story())


def test_concurrent_stores_and_paging_through_45_results(gateway: LocalGateway) -> None:
    async def paging() -> tuple[set[str], list[str], list[str]]:
        async with AsyncHindsight(gateway.url, E2E_KEY, timeout=120.0) as memory:
            stored = await asyncio.gather(
                *(
                    memory.store(
                        "sdk-async-paging", f"Recipe {n}: a soup with lentils and {n} herbs"
                    )
                    for n in range(PAGED)
                )
            )
            found = [
                m.memory_id
                async for m in memory.iter_retrieve("sdk-async-paging", "lentil soup", top_k=20)
            ]
            listed = [
                m.memory_id async for m in memory.iter_memories("sdk-async-paging", page_size=20)
            ]
            await memory.erase_user("sdk-async-paging")
            return {s.memory_id for s in stored}, found, listed

    stored, found, listed = asyncio.run(paging())
    assert len(stored) == PAGED
    assert len(found) == PAGED and set(found) == stored
    assert len(listed) == PAGED and set(listed) == stored


def test_errors_awaited(gateway: LocalGateway) -> None:
    async def invalid() -> InvalidRequestError:
        async with AsyncHindsight(gateway.url, E2E_KEY) as memory:
            try:
                await memory.store_many("sdk-async", [{"content": "ok"}, {"content": ""}])
            except InvalidRequestError as exc:
                return exc
        raise AssertionError("an empty content was accepted")

    error = asyncio.run(invalid())
    assert error.status == 422 and "items[1].content" in error.message
