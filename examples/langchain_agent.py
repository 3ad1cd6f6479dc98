"""A LangChain agent with Hindsight's memory tools: the peanut-allergy story.

Monday the user mentions a peanut allergy and the agent saves it with ``memory_store``.
Tuesday, in a new thread, before recommending dinner the agent looks up what it knows with
``memory_retrieve`` (Hindsight's hybrid retrieval finds the episode; no reflection needed)
and steers the user away from kung pao chicken. ``HindsightContextMiddleware`` adds the
working-memory block (approved facts, the thread's recent turns) to every model call.

    make run                                  # in one terminal: Hindsight on 127.0.0.1:8080
    .venv/bin/python examples/langchain_agent.py

The model is a scripted stand-in (``scripted_langchain.ScriptedWaiter``): no network, no
API key. ``HINDSIGHT_URL`` and ``HINDSIGHT_API_KEY`` point it elsewhere. Exits 1 if
Tuesday's answer forgot the allergy.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hindsight_client import Hindsight
from hindsight_client.langchain import HindsightContextMiddleware, hindsight_tools
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from scripted_langchain import ScriptedWaiter
from story import MONDAY, TUESDAY, remembered


def build_agent(memory: Hindsight) -> Any:
    return create_agent(
        ScriptedWaiter(),
        tools=hindsight_tools(memory),  # the user and thread come from the config
        system_prompt="You are a friendly waiter who remembers regulars.",
        middleware=[HindsightContextMiddleware(memory)],
        checkpointer=InMemorySaver(),
    )


def say(agent: Any, user_id: str, thread: str, text: str) -> str:
    config: RunnableConfig = {"configurable": {"user_id": user_id, "thread_id": thread}}
    print(f"[{thread}] user: {text}")
    state = agent.invoke({"messages": [HumanMessage(text)]}, config)
    for message in state["messages"]:
        if message.type == "tool":
            print(f"[{thread}]   {message.name} -> {message.text}")
    answer = str(state["messages"][-1].text)
    print(f"[{thread}] agent: {answer}")
    return answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", default="alice-langchain", help="the demo user (erased first)")
    args = parser.parse_args()
    with Hindsight() as memory:
        memory.erase_user(args.user)  # start the story afresh on every run
        agent = build_agent(memory)
        say(agent, args.user, "monday", MONDAY)
        answer = say(agent, args.user, "tuesday", TUESDAY)
    return 0 if remembered(answer) else 1


if __name__ == "__main__":
    sys.exit(main())
