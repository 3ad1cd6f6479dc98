"""An OpenAI Agents SDK agent with Hindsight's tools: the peanut-allergy story.

Monday the user mentions a peanut allergy and the agent saves it with ``memory_store``.
Tuesday, in a new conversation, the agent's instructions carry Hindsight's working-memory
block and, before recommending dinner, it looks up what it knows with ``memory_retrieve``,
steering the user away from kung pao chicken.

    make run                                       # in one terminal: Hindsight on 127.0.0.1:8080
    .venv/bin/python examples/openai_agents_agent.py

The model is ``scripted_openai_agents.WaiterModel``, a custom ``agents.Model`` playing a script:
no network, no API key (tracing is switched off: it would upload to OpenAI). ``HINDSIGHT_URL``
and ``HINDSIGHT_API_KEY`` point it elsewhere. Exits 1 if Tuesday's answer forgot the allergy.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from agents import Agent, Runner, set_tracing_disabled
from hindsight_client import Hindsight
from hindsight_client.openai_agents import HindsightMemory
from scripted_openai_agents import WaiterModel
from story import MONDAY, TUESDAY, remembered


@dataclass
class Guest:
    """The run's context: whose memories the tools use, and the conversation."""

    user_id: str
    session_id: str


def build_agent(memory: Hindsight) -> Agent[Guest]:
    hindsight = HindsightMemory(memory)  # the user and session from the run's context
    return Agent(
        name="waiter",
        model=WaiterModel(),
        instructions=hindsight.instructions("You are a friendly waiter who remembers regulars."),
        tools=list(hindsight.tools),
    )


def say(agent: Agent[Guest], guest: Guest, day: str, text: str) -> str:
    print(f"[{day}] user: {text}")
    result = Runner.run_sync(agent, text, context=guest)
    names: dict[str, str] = {}
    for item in result.new_items:
        if item.type == "tool_call_item":
            call = item.raw_item
            names[str(getattr(call, "call_id", ""))] = str(getattr(call, "name", ""))
        elif item.type == "tool_call_output_item":
            call_id = str(item.raw_item["call_id"])  # type: ignore[index]
            print(f"[{day}]   {names.get(call_id, call_id)} -> {item.output}")
    print(f"[{day}] agent: {result.final_output}")
    return str(result.final_output)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--user", default="alice-openai-agents", help="the demo user (erased first)"
    )
    args = parser.parse_args()
    set_tracing_disabled(True)
    with Hindsight() as memory:
        memory.erase_user(args.user)  # start the story afresh on every run
        agent = build_agent(memory)
        say(agent, Guest(args.user, f"{args.user}-monday"), "monday", MONDAY)
        answer = say(agent, Guest(args.user, f"{args.user}-tuesday"), "tuesday", TUESDAY)
    return 0 if remembered(answer) else 1


if __name__ == "__main__":
    sys.exit(main())
