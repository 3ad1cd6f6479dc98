"""The OpenAI Agents SDK tools and context instructions against a real server, driven by the
SDK's own Runner with custom (scripted) models."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, Runner, Usage, set_tracing_disabled
from agents.exceptions import UserError
from agents.testing import assistant_message, function_call
from hindsight_client import Hindsight, HindsightConnectionError
from hindsight_client.openai_agents import HindsightMemory, last_user_text
from scripted_openai_agents import WaiterModel
from story import MONDAY, SAFE_ANSWER, TUESDAY, UNSAFE_ANSWER


@dataclass
class Guest:
    user_id: str
    session_id: str | None = None


@dataclass
class Seen:
    """What one model call was given."""

    instructions: str | None
    tools: list[Any]
    input: Any


class OneCallModel(Model):
    """Calls ``tool`` once with ``args``, then says what the tool answered."""

    def __init__(self, tool: str, args: dict[str, Any], seen: list[Seen]) -> None:
        self.tool, self.args, self.seen = tool, args, seen

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        *rest: Any,
        **kw: Any,
    ) -> ModelResponse:
        self.seen.append(Seen(system_instructions, list(tools), input))
        answers = [
            i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        if answers:
            output = [assistant_message(str(answers[-1]["output"]))]
        else:
            output = [function_call(self.tool, self.args, call_id="call_1")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@pytest.fixture(autouse=True, scope="module")
def _no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)  # tracing would try to upload to OpenAI
    yield
    set_tracing_disabled(False)


def agent_with(model: Model, hindsight: HindsightMemory | None, base: str = "") -> Agent[Any]:
    if hindsight is None:
        return Agent(name="waiter", model=model, instructions=base or None)
    return Agent(
        name="waiter", model=model, instructions=hindsight.instructions(base), tools=hindsight.tools
    )


def test_the_waiter_remembers_across_conversations(memory: Hindsight, user_id: str) -> None:
    agent = agent_with(WaiterModel(), HindsightMemory(memory))
    monday = Runner.run_sync(agent, MONDAY, context=Guest(user_id, f"{user_id}-mon"))
    assert monday.final_output == "Noted, I will remember that."
    (stored,) = memory.iter_memories(user_id)
    assert stored.content == "The user is allergic to peanuts."
    assert stored.category == "constraint" and stored.session_id == f"{user_id}-mon"
    tuesday = Runner.run_sync(agent, TUESDAY, context=Guest(user_id, f"{user_id}-tue"))
    assert tuesday.final_output == SAFE_ANSWER


def test_without_the_tools_the_waiter_recommends_peanuts(user_id: str) -> None:
    agent = agent_with(WaiterModel(), None)
    assert Runner.run_sync(agent, TUESDAY, context=Guest(user_id)).final_output == UNSAFE_ANSWER


def test_context_block_is_in_the_instructions(memory: Hindsight, user_id: str) -> None:
    memory.store(user_id, "I am allergic to peanuts", session_id="s-1")
    for fact in memory.reflect(user_id).pending:
        memory.approve(fact.memory_id)
    seen: list[Seen] = []
    model = OneCallModel("memory_retrieve", {"query": "allergies"}, seen)
    agent = agent_with(model, HindsightMemory(memory), "You are a waiter.")
    Runner.run_sync(agent, TUESDAY, context={"user_id": user_id, "session_id": "s-1"})
    instructions = seen[0].instructions or ""
    assert instructions.startswith("You are a waiter.\n\n")
    assert "The user is allergic to peanuts." in instructions
    assert {t.name for t in seen[0].tools} == {"memory_store", "memory_retrieve", "memory_forget"}
    schema = next(t for t in seen[0].tools if t.name == "memory_store").params_json_schema
    assert set(schema["properties"]) == {"content", "category"}
    assert "self-contained" in schema["properties"]["content"]["description"]


def test_a_user_with_no_memories_gets_the_base_instructions(
    memory: Hindsight, user_id: str
) -> None:
    seen: list[Seen] = []
    model = OneCallModel("memory_retrieve", {"query": "anything"}, seen)
    Runner.run_sync(
        agent_with(model, HindsightMemory(memory), "Be brief."), "hi", context=Guest(user_id)
    )
    assert seen[0].instructions == "Be brief."


def test_forgetting_another_users_memory_is_an_answer(memory: Hindsight, user_id: str) -> None:
    victim = memory.store(f"{user_id}-other", "Keeps a spare key under the mat")
    model = OneCallModel("memory_forget", {"memory_id": victim.memory_id}, [])
    result = Runner.run_sync(
        agent_with(model, HindsightMemory(memory)), "forget that", context=Guest(user_id)
    )
    assert "no memory" in result.final_output and "for this user" in result.final_output
    assert memory.get(victim.memory_id).content == "Keeps a spare key under the mat"


def test_forgetting_the_users_own_memory(memory: Hindsight, user_id: str) -> None:
    own = memory.store(user_id, "Parks on level 3")
    model = OneCallModel("memory_forget", {"memory_id": own.memory_id}, [])
    result = Runner.run_sync(
        agent_with(model, HindsightMemory(memory)), "forget it", context=Guest(user_id)
    )
    assert result.final_output == f"Forgot memory {own.memory_id}."
    assert list(memory.iter_memories(user_id)) == []


def test_invalid_arguments_are_an_answer(memory: Hindsight, user_id: str) -> None:
    model = OneCallModel("memory_store", {"content": "x", "category": "bad|label"}, [])
    hindsight = HindsightMemory(memory, user_id=user_id)
    result = Runner.run_sync(agent_with(model, hindsight), "remember x")
    assert "Hindsight refused the arguments" in result.final_output
    assert "category" in result.final_output
    assert list(memory.iter_memories(user_id)) == []


def test_a_run_without_a_user_is_refused(memory: Hindsight) -> None:
    with pytest.raises(ValueError, match="needs the run's user"):
        Runner.run_sync(agent_with(WaiterModel(), HindsightMemory(memory)), TUESDAY)


def test_an_unreachable_server_ends_the_run(user_id: str) -> None:
    gone = Hindsight("http://127.0.0.1:9", max_retries=0, timeout=2.0)
    model = OneCallModel("memory_store", {"content": "x"}, [])
    agent = Agent(name="w", model=model, tools=HindsightMemory(gone).tools)
    with pytest.raises(UserError, match="Error running tool memory_store") as raised:
        Runner.run_sync(agent, "remember x", context=Guest(user_id))
    assert isinstance(raised.value.__cause__, HindsightConnectionError)  # not shown to the model


def test_the_query_is_the_newest_user_message() -> None:
    @dataclass
    class Ctx:
        turn_input: list[Any]

    items: list[Any] = [
        {"role": "user", "content": "old"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "input_text", "text": "new"}, {"type": "x"}]},
    ]
    assert last_user_text(Ctx(items)) == "new"  # type: ignore[arg-type]
    assert last_user_text(Ctx([])) is None  # type: ignore[arg-type]


def test_user_and_session_from_functions(memory: Hindsight, user_id: str) -> None:
    def user(ctx: Any) -> str:
        return str(ctx.context["who"])

    hindsight = HindsightMemory(memory, user_id=user, session_id=lambda ctx: "fixed-session")
    model = OneCallModel("memory_store", {"content": "Likes window seats"}, [])
    Runner.run_sync(agent_with(model, hindsight), "remember", context={"who": user_id})
    (stored,) = memory.iter_memories(user_id)
    assert stored.session_id == "fixed-session"
