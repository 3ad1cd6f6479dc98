"""A Pydantic AI agent with Hindsight's toolset: the peanut-allergy story.

Monday the user mentions a peanut allergy and the agent saves it with ``memory_store``.
Tuesday, in a new conversation, before recommending dinner the agent looks up what it
knows with ``memory_retrieve`` and steers the user away from kung pao chicken. The toolset
also puts Hindsight's working-memory block into the agent's instructions on every request.

    make run                                  # in one terminal: Hindsight on 127.0.0.1:8080
    .venv/bin/python examples/pydantic_ai_agent.py

The model is Pydantic AI's ``FunctionModel`` playing a script
(``scripted_pydantic_ai.waiter_model``): no network, no API key. ``HINDSIGHT_URL`` and
``HINDSIGHT_API_KEY`` point it elsewhere. Exits 1 if Tuesday's answer forgot the allergy.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from hindsight_client import Hindsight
from hindsight_client.pydantic_ai import HindsightToolset
from pydantic_ai import Agent
from scripted_pydantic_ai import scripted_waiter
from story import MONDAY, TUESDAY, remembered


@dataclass
class Guest:
    """The run's dependencies: whose memories the tools use."""

    user_id: str


def build_agent(memory: Hindsight) -> Agent[Guest, str]:
    return Agent(
        scripted_waiter(),
        deps_type=Guest,
        instructions="You are a friendly waiter who remembers regulars.",
        toolsets=[HindsightToolset(memory)],  # the user from deps.user_id
    )


def say(agent: Agent[Guest, str], guest: Guest, day: str, text: str) -> str:
    print(f"[{day}] user: {text}")
    result = agent.run_sync(text, deps=guest, conversation_id=f"{guest.user_id}-{day}")
    for message in result.new_messages():
        for part in message.parts:
            if part.part_kind == "tool-return":
                print(f"[{day}]   {part.tool_name} -> {part.model_response_str()}")
    print(f"[{day}] agent: {result.output}")
    return result.output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", default="alice-pydantic-ai", help="the demo user (erased first)")
    args = parser.parse_args()
    guest = Guest(args.user)
    with Hindsight() as memory:
        memory.erase_user(guest.user_id)  # start the story afresh on every run
        agent = build_agent(memory)
        say(agent, guest, "monday", MONDAY)
        answer = say(agent, guest, "tuesday", TUESDAY)
    return 0 if remembered(answer) else 1


if __name__ == "__main__":
    sys.exit(main())
