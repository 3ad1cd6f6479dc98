"""LangChain tools for Hindsight (store / retrieve / forget) and a context middleware.

    from hindsight_client import Hindsight
    from hindsight_client.langchain import HindsightContextMiddleware, hindsight_tools

    memory = Hindsight()
    agent = create_agent(model, tools=hindsight_tools(memory),
                         middleware=[HindsightContextMiddleware(memory)])
    agent.invoke({"messages": [...]}, {"configurable": {"user_id": "alice", "thread_id": "t1"}})

The tools are ``StructuredTool``s named ``memory_store``, ``memory_retrieve`` and
``memory_forget`` (the MCP server's names). They act for one user, never one the model
picks: fixed with ``user_id=``, or read at call time from ``config["configurable"]``
(``user_id``; the session from ``thread_id``). Server errors reach the model as the tool's
answer (``ToolException``), so it can correct itself; results also ride along as the tool
message's ``artifact`` (the typed ``StoreResult``, ``RetrievePage`` or ``DeleteResult``).

Needs ``pip install "hindsight-client[langchain]"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, ToolException
from langgraph.config import get_config
from pydantic import BaseModel, Field

from hindsight_client._tools import (
    CATEGORY_HELP,
    CONTENT_HELP,
    FORGET_DESCRIPTION,
    FORGET_NAME,
    MEMORY_ID_HELP,
    QUERY_HELP,
    RETRIEVE_DESCRIPTION,
    RETRIEVE_NAME,
    STORE_DESCRIPTION,
    STORE_NAME,
    TOP_K_HELP,
    MemoryToolbox,
    Who,
    forget_text,
    retrieve_text,
    store_text,
)
from hindsight_client.client import Hindsight
from hindsight_client.errors import HindsightError
from hindsight_client.langgraph import HindsightContextHook, last_human_text
from hindsight_client.types import DeleteResult, RetrievePage, StoreResult


class StoreArgs(BaseModel):
    content: str = Field(description=CONTENT_HELP, min_length=1, max_length=8_000)
    category: str | None = Field(default=None, description=CATEGORY_HELP, max_length=64)


class RetrieveArgs(BaseModel):
    query: str = Field(description=QUERY_HELP, min_length=1, max_length=2_000)
    top_k: int | None = Field(default=None, description=TOP_K_HELP, ge=1, le=20)


class ForgetArgs(BaseModel):
    memory_id: str = Field(description=MEMORY_ID_HELP, min_length=1, max_length=128)


@dataclass(frozen=True)
class ToolBinding:
    """How a tool call finds its user, session and scope: fixed, or from the run's config."""

    user_id: str | None = None
    session_id: str | None = None
    scope: str | None = None
    user_key: str = "user_id"
    session_key: str = "thread_id"

    def who(self, config: RunnableConfig | None) -> Who:
        configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
        user_id = self.user_id or configurable.get(self.user_key)
        if not user_id:
            raise ValueError(
                "the Hindsight tools need a user: pass user_id= to hindsight_tools, or "
                f'invoke with config={{"configurable": {{"{self.user_key}": ...}}}}'
            )
        session_id = self.session_id or configurable.get(self.session_key)
        return Who(str(user_id), str(session_id) if session_id else None, self.scope)


def hindsight_tools(
    client: Hindsight | None = None,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    scope: str | None = None,
    user_key: str = "user_id",
    session_key: str = "thread_id",
    top_k: int = 5,
) -> list[StructuredTool]:
    """``memory_store``, ``memory_retrieve`` and ``memory_forget`` as LangChain tools.

    ``user_id``/``session_id``: fix them, or leave them to ``config["configurable"]``
    (``user_key``/``session_key``). ``scope``: the scope to write to and read from
    (default: the API key's). ``top_k``: results a retrieve returns unless the model asks.
    """
    toolbox = MemoryToolbox(client if client is not None else Hindsight(), top_k)
    binding = ToolBinding(user_id, session_id, scope, user_key, session_key)

    def memory_store(
        content: str, config: RunnableConfig, category: str | None = None
    ) -> tuple[str, StoreResult]:
        result = _tool_call(lambda: toolbox.store(binding.who(config), content, category))
        return store_text(result), result

    def memory_retrieve(
        query: str, config: RunnableConfig, top_k: int | None = None
    ) -> tuple[str, RetrievePage]:
        page = _tool_call(lambda: toolbox.retrieve(binding.who(config), query, top_k))
        return retrieve_text(page), page

    def memory_forget(memory_id: str, config: RunnableConfig) -> tuple[str, DeleteResult]:
        result = _tool_call(lambda: toolbox.forget(binding.who(config), memory_id))
        return forget_text(result), result

    shapes = (
        (memory_store, STORE_NAME, STORE_DESCRIPTION, StoreArgs),
        (memory_retrieve, RETRIEVE_NAME, RETRIEVE_DESCRIPTION, RetrieveArgs),
        (memory_forget, FORGET_NAME, FORGET_DESCRIPTION, ForgetArgs),
    )
    return [
        StructuredTool.from_function(
            func=func,
            name=name,
            description=description,
            args_schema=schema,
            response_format="content_and_artifact",
            handle_tool_error=True,
        )
        for func, name, description, schema in shapes
    ]


def _tool_call(call: Callable[[], Any]) -> Any:
    """Run one Hindsight call; its errors become the tool's answer to the model."""
    try:
        return call()
    except HindsightError as exc:
        raise ToolException(f"Hindsight error: {exc}") from exc


class HindsightContextMiddleware(AgentMiddleware):
    """Adds Hindsight's working-memory block (``/v1/context``) to the system message of
    every model call of a ``create_agent`` agent.

    The user and session come from ``config["configurable"]`` (``user_id``, ``thread_id``)
    or are fixed; the query is the newest human message. Options as
    ``hindsight_client.langgraph.HindsightContextHook``.
    """

    def __init__(self, client: Hindsight | None = None, **hook_options: Any) -> None:
        super().__init__()
        self.hook = HindsightContextHook(client, **hook_options)

    def _block(self, request: ModelRequest) -> str:
        return self.hook.block(get_config(), query=last_human_text(request.messages))

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse | AIMessage:
        return handler(with_context(request, self._block(request)))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse | AIMessage:
        config = get_config()
        block = await asyncio.to_thread(self.hook.block, config, last_human_text(request.messages))
        return await handler(with_context(request, block))


def with_context(request: ModelRequest, block: str) -> ModelRequest:
    """The request with ``block`` appended to its system message (unchanged if empty)."""
    if not block:
        return request
    system = request.system_message.text if request.system_message is not None else ""
    text = f"{system}\n\n{block}" if system else block
    return request.override(system_message=SystemMessage(content=text))


__all__ = [
    "ForgetArgs",
    "HindsightContextMiddleware",
    "RetrieveArgs",
    "StoreArgs",
    "ToolBinding",
    "hindsight_tools",
    "with_context",
]
