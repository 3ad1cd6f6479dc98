"""The LangChain memory tools and the create_agent context middleware, against a real server."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from hindsight_client import Hindsight
from hindsight_client.langchain import HindsightContextMiddleware, hindsight_tools
from hindsight_client.types import RetrievePage, StoreResult
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from scripted_langchain import ScriptedWaiter
from story import MONDAY, SAFE_ANSWER, TUESDAY, UNSAFE_ANSWER


def call(tool: StructuredTool, args: dict[str, Any], config: RunnableConfig) -> ToolMessage:
    """Invoke a tool as an agent does: with a tool call, so it answers a ToolMessage."""
    message = tool.invoke(
        {"type": "tool_call", "id": "call-1", "name": tool.name, "args": args}, config
    )
    assert isinstance(message, ToolMessage)
    return message


def by_name(tools: list[StructuredTool]) -> dict[str, StructuredTool]:
    return {tool.name: tool for tool in tools}


def test_three_structured_tools_whose_schema_has_no_user(memory: Hindsight) -> None:
    tools = by_name(hindsight_tools(memory))
    assert set(tools) == {"memory_store", "memory_retrieve", "memory_forget"}
    for tool in tools.values():
        assert isinstance(tool, StructuredTool)
        properties = tool.tool_call_schema.model_json_schema()["properties"]
        assert "user_id" not in properties and "config" not in properties
    assert set(tools["memory_store"].args) == {"content", "category"}


def test_store_retrieve_forget_for_the_configured_user(memory: Hindsight, user_id: str) -> None:
    tools = by_name(hindsight_tools(memory))
    config: RunnableConfig = {"configurable": {"user_id": user_id, "thread_id": "t-1"}}
    stored = call(tools["memory_store"], {"content": "Vegetarian since 2019"}, config)
    assert isinstance(stored.artifact, StoreResult) and "Remembered" in stored.text
    (memory_row,) = memory.iter_memories(user_id)
    assert memory_row.session_id == "t-1"  # the thread is the session

    again = call(tools["memory_store"], {"content": "Vegetarian since 2019"}, config)
    assert "Already remembered" in again.text

    found = call(tools["memory_retrieve"], {"query": "diet", "top_k": 3}, config)
    assert isinstance(found.artifact, RetrievePage)
    assert stored.artifact.memory_id in found.text and "Vegetarian since 2019" in found.text

    forgot = call(tools["memory_forget"], {"memory_id": stored.artifact.memory_id}, config)
    assert "Forgot memory" in forgot.text
    assert list(memory.iter_memories(user_id)) == []
    empty = call(tools["memory_retrieve"], {"query": "diet"}, config)
    assert empty.text == "No memories about this."


def test_a_model_cannot_forget_another_users_memory(memory: Hindsight, user_id: str) -> None:
    victim = memory.store(f"{user_id}-other", "Private note about a surprise party")
    tools = by_name(hindsight_tools(memory, user_id=user_id))
    answer = call(tools["memory_forget"], {"memory_id": victim.memory_id}, {})
    assert answer.status == "error"
    assert "no memory" in answer.text and "for this user" in answer.text
    assert memory.get(victim.memory_id).content == "Private note about a surprise party"


def test_server_errors_reach_the_model_as_the_tool_answer(memory: Hindsight, user_id: str) -> None:
    tools = by_name(hindsight_tools(memory, user_id=user_id))
    answer = call(tools["memory_store"], {"content": "x", "category": "bad|label"}, {})
    assert answer.status == "error"
    assert "422" in answer.text and "category" in answer.text
    with pytest.raises(ValueError, match="need a user"):
        call(by_name(hindsight_tools(memory))["memory_retrieve"], {"query": "x"}, {})


class RecordingWaiter(ScriptedWaiter):
    """The scripted waiter, keeping every prompt it was sent."""

    seen: ClassVar[list[list[BaseMessage]]] = []

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        type(self).seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kw)


def agent_say(agent: Any, user_id: str, thread: str, text: str) -> str:
    config: RunnableConfig = {"configurable": {"user_id": user_id, "thread_id": thread}}
    state = agent.invoke({"messages": [HumanMessage(text)]}, config)
    return str(state["messages"][-1].text)


def test_create_agent_remembers_across_threads_with_the_tools(
    memory: Hindsight, user_id: str
) -> None:
    agent = create_agent(ScriptedWaiter(), tools=hindsight_tools(memory))
    assert agent_say(agent, user_id, "monday", MONDAY) == "Noted, I will remember that."
    assert agent_say(agent, user_id, "tuesday", TUESDAY) == SAFE_ANSWER


def test_without_memory_the_scripted_agent_recommends_peanuts(user_id: str) -> None:
    """The control: the same model with no Hindsight gives the unsafe answer."""
    agent = create_agent(ScriptedWaiter(), tools=[])
    agent_say(agent, user_id, "monday", MONDAY)
    assert agent_say(agent, user_id, "tuesday", TUESDAY) == UNSAFE_ANSWER


def test_context_middleware_adds_the_block_to_the_system_message(
    memory: Hindsight, user_id: str
) -> None:
    memory.store(user_id, "I am allergic to peanuts", session_id="monday")
    for fact in memory.reflect(user_id).pending:
        memory.approve(fact.memory_id)
    RecordingWaiter.seen = []
    agent = create_agent(
        RecordingWaiter(),
        tools=[],
        system_prompt="You are a waiter.",
        middleware=[HindsightContextMiddleware(memory)],
    )
    assert agent_say(agent, user_id, "tuesday", TUESDAY) == SAFE_ANSWER
    system = RecordingWaiter.seen[-1][0]
    assert system.type == "system"
    assert system.text.startswith("You are a waiter.\n\n## What you know about the user")
    assert "The user is allergic to peanuts." in system.text


def test_async_agent_with_tools_and_middleware(memory: Hindsight, user_id: str) -> None:
    agent = create_agent(
        ScriptedWaiter(),
        tools=hindsight_tools(memory),
        middleware=[HindsightContextMiddleware(memory)],
    )

    async def story() -> str:
        for thread, text in (("monday", MONDAY), ("tuesday", TUESDAY)):
            config: RunnableConfig = {"configurable": {"user_id": user_id, "thread_id": thread}}
            state = await agent.ainvoke({"messages": [HumanMessage(text)]}, config)
        return str(state["messages"][-1].text)

    assert asyncio.run(story()) == SAFE_ANSWER
