"""A LangGraph agent with Hindsight as its long-term memory: the peanut-allergy story.

Monday the user mentions a peanut allergy; the agent's ``remember`` tool puts it in the
graph's store, which is Hindsight (``HindsightStore``). Overnight Hindsight reflects the
episode into a fact, which is approved (the review queue). Tuesday, in a new thread, the
``HindsightContextHook`` puts what Hindsight knows in front of the model, and the agent
steers the user away from kung pao chicken.

    make run                                  # in one terminal: Hindsight on 127.0.0.1:8080
    .venv/bin/python examples/langgraph_agent.py

The model is a scripted stand-in (``scripted_langchain.ScriptedWaiter``): no network, no
API key. Swap in any LangChain chat model that supports tool calling. ``HINDSIGHT_URL`` and
``HINDSIGHT_API_KEY`` point it elsewhere. Exits 1 if Tuesday's answer forgot the allergy.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import Annotated, Any

from hindsight_client import Hindsight
from hindsight_client.langgraph import HindsightContextHook, HindsightStore
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import InjectedStore, ToolNode, tools_condition
from langgraph.store.base import BaseStore
from scripted_langchain import ScriptedWaiter
from story import MONDAY, TUESDAY, remembered


@tool
def remember(
    content: str,
    category: str,
    config: RunnableConfig,
    store: Annotated[BaseStore, InjectedStore()],
) -> str:
    """Save something the user stated that matters later: a fact, preference or constraint."""
    user_id = config["configurable"]["user_id"]
    store.put((user_id,), str(uuid.uuid4()), {"content": content, "category": category})
    return "Saved."


def build_agent(memory: Hindsight) -> CompiledStateGraph[Any, Any, Any, Any]:
    context = HindsightContextHook(memory)  # user_id and thread_id from the config
    model = ScriptedWaiter().bind_tools([remember])

    def call_model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [model.invoke(context.messages(state, config))]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([remember]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=InMemorySaver(), store=HindsightStore(memory))


def say(agent: CompiledStateGraph[Any, Any, Any, Any], user_id: str, thread: str, text: str) -> str:
    config: RunnableConfig = {"configurable": {"user_id": user_id, "thread_id": thread}}
    print(f"[{thread}] user: {text}")
    state = agent.invoke({"messages": [HumanMessage(text)]}, config)
    answer = str(state["messages"][-1].text)
    print(f"[{thread}] agent: {answer}")
    return answer


def overnight(memory: Hindsight, user_id: str) -> None:
    """What the nightly schedule does on AWS, and a reviewer after it."""
    reflection = memory.reflect(user_id)
    for fact in reflection.pending:
        print(f"[night] approving fact: {fact.content}")
        memory.approve(fact.memory_id)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", default="alice-langgraph", help="the demo user (erased first)")
    args = parser.parse_args()
    with Hindsight() as memory:
        memory.erase_user(args.user)  # start the story afresh on every run
        agent = build_agent(memory)
        say(agent, args.user, "monday", MONDAY)
        overnight(memory, args.user)
        answer = say(agent, args.user, "tuesday", TUESDAY)
    return 0 if remembered(answer) else 1


if __name__ == "__main__":
    sys.exit(main())
