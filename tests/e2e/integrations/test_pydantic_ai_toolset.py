"""The Pydantic AI toolset (tools and context instructions) against a real server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hindsight_client import Hindsight
from hindsight_client.pydantic_ai import HindsightToolset
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from scripted_pydantic_ai import scripted_waiter
from story import MONDAY, SAFE_ANSWER, TUESDAY, UNSAFE_ANSWER


@dataclass
class Guest:
    user_id: str


def one_call_model(tool: str, args: dict[str, Any], seen: list[Any]) -> FunctionModel:
    """Calls ``tool`` once, then says what the tool answered (keeping what it saw)."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        last = messages[-1].parts[-1]
        if last.part_kind in ("tool-return", "retry-prompt"):
            return ModelResponse(parts=[TextPart(last.model_response_str())])
        return ModelResponse(parts=[ToolCallPart(tool, args)])

    return FunctionModel(respond)


def test_the_waiter_remembers_across_conversations(memory: Hindsight, user_id: str) -> None:
    agent = Agent(scripted_waiter(), deps_type=Guest, toolsets=[HindsightToolset(memory)])
    guest = Guest(user_id)
    monday = agent.run_sync(MONDAY, deps=guest, conversation_id=f"{user_id}-mon")
    assert monday.output == "Noted, I will remember that."
    (stored,) = memory.iter_memories(user_id)
    assert stored.content == "The user is allergic to peanuts."
    assert stored.category == "constraint" and stored.session_id == f"{user_id}-mon"
    tuesday = agent.run_sync(TUESDAY, deps=guest, conversation_id=f"{user_id}-tue")
    assert tuesday.output == SAFE_ANSWER


def test_without_the_toolset_the_waiter_recommends_peanuts(user_id: str) -> None:
    agent = Agent(scripted_waiter(), deps_type=Guest)
    assert agent.run_sync(TUESDAY, deps=Guest(user_id)).output == UNSAFE_ANSWER


def test_context_block_is_in_the_instructions(memory: Hindsight, user_id: str) -> None:
    memory.store(user_id, "I am allergic to peanuts", session_id="s-1")
    for fact in memory.reflect(user_id).pending:
        memory.approve(fact.memory_id)
    seen: list[AgentInfo] = []
    model = one_call_model("memory_retrieve", {"query": "allergies"}, seen)
    agent = Agent(
        model,
        deps_type=Guest,
        instructions="You are a waiter.",
        toolsets=[HindsightToolset(memory)],
    )
    agent.run_sync(TUESDAY, deps=Guest(user_id))
    instructions = seen[0].instructions or ""
    assert instructions.startswith("You are a waiter.")
    assert "The user is allergic to peanuts." in instructions
    assert {t.name for t in seen[0].function_tools} == {
        "memory_store",
        "memory_retrieve",
        "memory_forget",
    }
    schema = next(t for t in seen[0].function_tools if t.name == "memory_store")
    assert set(schema.parameters_json_schema["properties"]) == {"content", "category"}


def test_forgetting_another_users_memory_fails_visibly(memory: Hindsight, user_id: str) -> None:
    victim = memory.store(f"{user_id}-other", "Keeps a spare key under the mat")
    seen: list[AgentInfo] = []
    model = one_call_model("memory_forget", {"memory_id": victim.memory_id}, seen)
    agent = Agent(model, deps_type=dict, toolsets=[HindsightToolset(memory, context=False)])
    result = agent.run_sync("forget that", deps={"user_id": user_id})
    assert "no memory" in result.output and "for this user" in result.output
    assert memory.get(victim.memory_id).content == "Keeps a spare key under the mat"


def test_invalid_arguments_go_back_to_the_model_as_a_retry(memory: Hindsight, user_id: str) -> None:
    seen: list[AgentInfo] = []
    model = one_call_model("memory_store", {"content": "x", "category": "bad|label"}, seen)
    agent = Agent(model, toolsets=[HindsightToolset(memory, user_id=user_id, context=False)])
    result = agent.run_sync("remember x")
    assert "Hindsight refused the arguments" in result.output and "category" in result.output
    assert list(memory.iter_memories(user_id)) == []


def test_a_run_without_a_user_is_refused(memory: Hindsight) -> None:
    agent = Agent(scripted_waiter(), toolsets=[HindsightToolset(memory)])
    with pytest.raises(ValueError, match="needs the run's user"):
        agent.run_sync(TUESDAY)
