"""HindsightStore as LangGraph's BaseStore, and the context hook, against a real server."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import pytest
from hindsight_client import Hindsight, PermissionDeniedError
from hindsight_client.langgraph import HindsightContextHook, HindsightStore, key_session
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.store.base import BaseStore, InvalidNamespaceError, Item, SearchItem
from scripted_langchain import ScriptedWaiter
from story import SAFE_ANSWER, TUESDAY, UNSAFE_ANSWER


@pytest.fixture
def store(memory: Hindsight) -> HindsightStore:
    return HindsightStore(memory, prefix=("memories",))


def test_is_a_real_base_store(store: HindsightStore) -> None:
    assert isinstance(store, BaseStore)
    assert store.supports_ttl


def test_put_get_replace_delete(store: HindsightStore, memory: Hindsight, user_id: str) -> None:
    ns = ("memories", user_id)
    store.put(ns, "diet", {"content": "Allergic to peanuts", "category": "constraint"})
    first = store.get(ns, "diet")
    assert isinstance(first, Item)
    assert first.namespace == ns and first.key == "diet"
    assert first.value == {"content": "Allergic to peanuts", "category": "constraint"}

    store.put(ns, "diet", {"content": "Allergic to peanuts and shellfish", "since": 2020})
    second = store.get(ns, "diet")
    assert second is not None
    assert second.value == {"content": "Allergic to peanuts and shellfish", "since": 2020}
    assert second.created_at == first.created_at  # kept across puts
    assert second.updated_at >= first.updated_at
    # one memory per key: the old one is gone, the category went to Hindsight's own field
    stored = list(memory.iter_memories(user_id))
    assert [m.content for m in stored] == ["Allergic to peanuts and shellfish"]
    assert stored[0].session_id == key_session(ns, "diet")

    store.delete(ns, "diet")
    assert store.get(ns, "diet") is None
    assert list(memory.iter_memories(user_id)) == []
    store.delete(ns, "diet")  # deleting what is not there is a no-op


def test_category_and_text_fields_reach_hindsight(
    store: HindsightStore, memory: Hindsight, user_id: str
) -> None:
    ns = ("memories", user_id)
    store.put(ns, "a", {"title": "Trip", "notes": "Flying to Lisbon in May"}, index=["notes"])
    store.put(ns, "b", {"memory": "Prefers window seats", "category": "preference"})
    by_content = {m.content: m for m in memory.iter_memories(user_id)}
    assert set(by_content) == {"Flying to Lisbon in May", "Prefers window seats"}
    assert by_content["Prefers window seats"].category == "preference"


def test_search_uses_hindsight_retrieval(store: HindsightStore, user_id: str) -> None:
    ns = ("memories", user_id)
    store.put(ns, "k1", {"content": "The user enjoys science fiction films"})
    store.put(ns, "k2", {"content": "The user is allergic to peanuts", "kind": "diet"})
    store.put(ns, "k3", {"content": "Business trip to Berlin next Wednesday"})
    hits = store.search(ns, query="what food must the user avoid?", limit=2)
    assert all(isinstance(hit, SearchItem) for hit in hits)
    assert hits[0].key == "k2" and hits[0].namespace == ns
    assert hits[0].score is not None and hits[0].score > hits[1].score  # type: ignore[operator]
    assert len(hits) == 2

    assert [h.key for h in store.search(ns, query="food", filter={"kind": "diet"})] == ["k2"]
    assert store.search(ns, query="food", filter={"kind": {"$ne": "diet"}}, limit=5)[0].key != "k2"
    everything = store.search(ns, limit=10)  # no query: newest first
    assert [h.key for h in everything] == ["k3", "k2", "k1"]
    assert [h.key for h in store.search(ns, limit=1, offset=1)] == ["k2"]


def test_search_finds_what_other_clients_stored_and_facts(
    store: HindsightStore, memory: Hindsight, user_id: str
) -> None:
    """Retrieval finds episodes stored by other clients (keyed by memory id) and approved facts."""
    memory.store(user_id, "I am allergic to peanuts", session_id="s1")
    reflection = memory.reflect(user_id)
    (fact,) = reflection.pending
    memory.approve(fact.memory_id)
    hits = store.search(("memories", user_id), query="peanut allergy", limit=5)
    kinds = {hit.key: hit.value["kind"] for hit in hits}
    assert kinds[fact.memory_id] == "semantic"
    assert hits[0].key == fact.memory_id  # relevant facts rank ahead of episodes
    assert hits[0].namespace == ("memories", user_id, "global")

    item = store.get(("memories", user_id), fact.memory_id)  # addressable by its id
    assert item is not None and item.value["content"] == fact.content
    assert store.get(("memories", "someone-else"), fact.memory_id) is None
    store.delete(("memories", user_id), fact.memory_id)
    assert all(hit.key != fact.memory_id for hit in store.search(("memories", user_id), limit=9))


def test_scope_is_the_second_label(
    memory: Hindsight, calendar_memory: Hindsight, user_id: str
) -> None:
    store = HindsightStore(memory)
    store.put((user_id, "calendar"), "dentist", {"content": "Dentist on Friday at 9"})
    store.put((user_id, "global"), "city", {"content": "Lives in Porto"})
    assert {m.scope for m in memory.iter_memories(user_id)} == {"calendar", "global"}
    hits = store.search((user_id, "calendar"), query="appointments")
    assert [h.key for h in hits] == ["dentist"]
    assert sorted(store.list_namespaces(prefix=(user_id,))) == [
        (user_id, "calendar"),
        (user_id, "global"),
    ]
    assert store.list_namespaces(prefix=(user_id,), max_depth=1) == [(user_id,)]
    assert store.list_namespaces(prefix=(user_id,), suffix=("global",)) == [(user_id, "global")]
    # a key limited to "calendar" reads its scope and "global", and writes "calendar" only
    store.put((user_id, "health"), "pills", {"content": "Takes vitamin D daily"})
    calendar_store = HindsightStore(calendar_memory)
    seen = calendar_store.search((user_id,), query="Porto, dentist or vitamins", limit=5)
    assert sorted(h.key for h in seen) == ["city", "dentist"]
    with pytest.raises(PermissionDeniedError):
        calendar_store.put((user_id, "health"), "k", {"content": "Allergic to penicillin"})


def test_ttl_becomes_the_memory_expiry(
    store: HindsightStore, memory: Hindsight, user_id: str
) -> None:
    store.put(("memories", user_id), "promo", {"content": "Wants the Friday promo"}, ttl=30)
    (stored,) = memory.iter_memories(user_id)
    assert stored.expires_at is not None and stored.created_at is not None
    minutes = (stored.expires_at - stored.created_at).total_seconds() / 60
    assert 29.9 < minutes < 30.1


def test_duplicate_text_under_another_key_is_skipped_and_logged(
    store: HindsightStore, user_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    ns = ("memories", user_id)
    store.put(ns, "one", {"content": "Likes oolong tea"})
    with caplog.at_level(logging.INFO, logger="hindsight_client.langgraph"):
        store.put(ns, "two", {"content": "Likes oolong tea"})
    assert "already holds the same text" in caplog.text
    assert store.get(ns, "one") is not None
    assert store.get(ns, "two") is None
    assert len(store.search(ns, query="tea")) == 1


def test_bad_namespaces_and_values_are_refused_clearly(store: HindsightStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="prefix"):
        store.put(("other", "u1"), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match="too deep"):
        store.put(("memories", "u1", "global", "extra"), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match="names no user"):
        store.search(("memories",), query="x")
    with pytest.raises(InvalidNamespaceError, match="one user at a time"):
        store.list_namespaces()
    with pytest.raises(ValueError, match="bytes of metadata"):
        store.put(("memories", "u1"), "big", {"content": "x", "blob": "y" * 20_000})


def test_async_api(store: HindsightStore, user_id: str) -> None:
    ns = ("memories", user_id)

    async def scenario() -> tuple[Any, Any, Any]:
        await store.aput(ns, "k", {"content": "Runs every morning at six"})
        got = await store.aget(ns, "k")
        found = await store.asearch(ns, query="exercise habits")
        await store.adelete(ns, "k")
        return got, found, await store.aget(ns, "k")

    got, found, gone = asyncio.run(scenario())
    assert got.value == {"content": "Runs every morning at six"}
    assert [h.key for h in found] == ["k"]
    assert gone is None


def test_a_graph_node_uses_the_store_it_was_compiled_with(memory: Hindsight, user_id: str) -> None:
    def remember_then_recall(state: MessagesState, config: RunnableConfig, *, store: BaseStore):
        who = config["configurable"]["user_id"]
        store.put((who,), str(uuid.uuid4()), {"content": state["messages"][-1].text})
        hits = store.search((who,), query="what does the user drink?", limit=1)
        return {"messages": [AIMessage(hits[0].value["content"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("memory", remember_then_recall)
    builder.add_edge(START, "memory")
    graph = builder.compile(store=HindsightStore(memory))
    config: RunnableConfig = {"configurable": {"user_id": user_id}}
    out = graph.invoke({"messages": [HumanMessage("I drink my coffee black")]}, config)
    assert out["messages"][-1].text == "I drink my coffee black"
    assert [m.content for m in memory.iter_memories(user_id)] == ["I drink my coffee black"]


def test_context_hook_puts_approved_facts_before_the_messages(
    memory: Hindsight, user_id: str
) -> None:
    hook = HindsightContextHook(memory)
    config: RunnableConfig = {"configurable": {"user_id": user_id, "thread_id": "t1"}}
    state = {"messages": [HumanMessage("What should I cook tonight?")]}
    assert hook(state, config) == {"llm_input_messages": state["messages"]}  # nothing known yet

    memory.store(user_id, "I am allergic to peanuts", session_id="monday")
    for fact in memory.reflect(user_id).pending:
        memory.approve(fact.memory_id)
    messages = hook(state, config)["llm_input_messages"]
    assert isinstance(messages[0], SystemMessage)
    assert "The user is allergic to peanuts." in messages[0].text
    assert messages[1:] == state["messages"]
    with pytest.raises(ValueError, match="needs a user and a session"):
        hook(state, {"configurable": {"thread_id": "t1"}})


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_context_hook_as_create_react_agent_pre_model_hook(memory: Hindsight, user_id: str) -> None:
    agent = create_react_agent(
        ScriptedWaiter(), tools=[], pre_model_hook=HindsightContextHook(memory)
    )
    config: RunnableConfig = {"configurable": {"user_id": user_id, "thread_id": "tuesday"}}
    ask = {"messages": [HumanMessage(TUESDAY)]}
    assert agent.invoke(ask, config)["messages"][-1].text == UNSAFE_ANSWER  # nothing known yet
    memory.store(user_id, "I am allergic to peanuts", session_id="monday")
    for fact in memory.reflect(user_id).pending:
        memory.approve(fact.memory_id)
    out = agent.invoke(ask, config)["messages"]
    assert out[-1].text == SAFE_ANSWER
    assert not any(m.type == "system" for m in out)  # the block is not kept in the history
