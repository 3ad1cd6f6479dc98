"""OpenAI Agents SDK tools for Hindsight: store / retrieve / forget as function tools and the
working-memory block in the agent's instructions.

    from agents import Agent, Runner
    from hindsight_client import Hindsight
    from hindsight_client.openai_agents import HindsightMemory

    memory = HindsightMemory(Hindsight())
    agent = Agent(
        name="waiter",
        instructions=memory.instructions("You are a friendly waiter."),
        tools=memory.tools,
    )
    Runner.run_sync(agent, "What should I eat tonight?", context=User(user_id="alice"))

The tools (``memory_store``, ``memory_retrieve``, ``memory_forget``) act for the run's user,
never one the model picks: by default ``context.user_id`` (or ``context["user_id"]``), or a
fixed ``user_id=``, or a function of the ``RunContextWrapper``. The session is
``context.session_id`` unless given. ``instructions(base)`` is a dynamic instructions
function: the base text, then Hindsight's ``/v1/context`` block (the user's approved facts,
the session's recent turns and summary) for the run's newest user message, on every model
call.

Invalid arguments (422) and a memory id the model may not touch (404, 403) come back to the
model as the tool's answer, for it to act on; other errors (the server unreachable, 5xx after
retries) end the run. Sync tools run in the SDK's worker threads; the context block is fetched
off the event loop.

Needs ``pip install "hindsight-client[openai-agents]"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from agents import Agent, FunctionTool, RunContextWrapper, function_tool
from pydantic import Field

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
from hindsight_client.errors import InvalidRequestError, NotFoundError, PermissionDeniedError

T = TypeVar("T")
Context = RunContextWrapper[Any]
Resolver = str | Callable[[Context], str | None] | None


def context_field(ctx: Context, name: str) -> str | None:
    """``ctx.context.<name>`` or ``ctx.context[name]``, as a string (None when absent)."""
    context = ctx.context
    value = context.get(name) if isinstance(context, Mapping) else getattr(context, name, None)
    return str(value) if value else None


def last_user_text(ctx: Context) -> str | None:
    """The text of the newest user message of the run's input (None if there is none)."""
    for item in reversed(ctx.turn_input or []):
        if not isinstance(item, Mapping) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content[:2_000] or None
        parts = content if isinstance(content, list) else []
        texts = [str(part.get("text") or "") for part in parts if isinstance(part, Mapping)]
        return " ".join(t for t in texts if t)[:2_000] or None
    return None


class HindsightMemory:
    """Hindsight memory for an OpenAI Agents SDK agent: three tools and context instructions.

    ``user_id``/``session_id``/``scope``: a value, a function of the ``RunContextWrapper``, or
    None (user: ``context.user_id``; session: ``context.session_id``; scope: the API key's
    default). ``top_k``: results a retrieve returns unless the model asks.
    ``budget_tokens``, ``recent_turns`` and ``max_facts`` shape the context block.
    """

    def __init__(
        self,
        client: Hindsight | None = None,
        *,
        user_id: Resolver = None,
        session_id: Resolver = None,
        scope: str | None = None,
        top_k: int = 5,
        budget_tokens: int | None = None,
        recent_turns: int | None = None,
        max_facts: int | None = None,
    ) -> None:
        self.toolbox = MemoryToolbox(client if client is not None else Hindsight(), top_k)
        self._user = user_id
        self._session = session_id
        self.scope = scope
        self.budget_tokens = budget_tokens
        self.recent_turns = recent_turns
        self.max_facts = max_facts
        self.tools: list[FunctionTool] = [
            self._tool(self.memory_store, STORE_NAME, STORE_DESCRIPTION),
            self._tool(self.memory_retrieve, RETRIEVE_NAME, RETRIEVE_DESCRIPTION),
            self._tool(self.memory_forget, FORGET_NAME, FORGET_DESCRIPTION),
        ]

    @staticmethod
    def _tool(func: Callable[..., str], name: str, description: str) -> FunctionTool:
        # failure_error_function=None: an error the model cannot act on ends the run instead
        # of being shown to it as text (the ones it can act on are answers, see _for_model)
        return function_tool(
            func,
            name_override=name,
            description_override=description,
            use_docstring_info=False,
            failure_error_function=None,
        )

    # --- whose memories -------------------------------------------------------------------
    def who(self, ctx: Context) -> Who:
        user_id = _resolve(self._user, ctx) or context_field(ctx, "user_id")
        if not user_id:
            raise ValueError(
                "HindsightMemory needs the run's user: run with context= an object or dict "
                "with a user_id, or HindsightMemory(user_id=...)"
            )
        session_id = _resolve(self._session, ctx) or context_field(ctx, "session_id")
        return Who(user_id, session_id, self.scope)

    # --- the tools --------------------------------------------------------------------------
    def memory_store(
        self,
        ctx: Context,
        content: Annotated[str, Field(description=CONTENT_HELP, min_length=1, max_length=8_000)],
        category: Annotated[str | None, Field(description=CATEGORY_HELP, max_length=64)] = None,
    ) -> str:
        return _for_model(lambda: store_text(self.toolbox.store(self.who(ctx), content, category)))

    def memory_retrieve(
        self,
        ctx: Context,
        query: Annotated[str, Field(description=QUERY_HELP, min_length=1, max_length=2_000)],
        top_k: Annotated[int | None, Field(description=TOP_K_HELP, ge=1, le=20)] = None,
    ) -> str:
        return _for_model(lambda: retrieve_text(self.toolbox.retrieve(self.who(ctx), query, top_k)))

    def memory_forget(
        self,
        ctx: Context,
        memory_id: Annotated[str, Field(description=MEMORY_ID_HELP, min_length=1)],
    ) -> str:
        return _for_model(lambda: forget_text(self.toolbox.forget(self.who(ctx), memory_id)))

    # --- the instructions -------------------------------------------------------------------
    def context_block(self, ctx: Context) -> str:
        """The ``/v1/context`` block for the run's user and session ("" when empty)."""
        who = self.who(ctx)
        result = self.toolbox.client.context(
            who.user_id,
            who.session_id or who.user_id,
            query=last_user_text(ctx),
            budget_tokens=self.budget_tokens,
            recent_turns=self.recent_turns,
            max_facts=self.max_facts,
        )
        return result.context or ""

    def instructions(self, base: str | None = None) -> Callable[[Context, Agent[Any]], Any]:
        """An ``Agent(instructions=...)`` function: ``base``, then the context block."""

        async def instructions(ctx: Context, agent: Agent[Any]) -> str:
            block = await asyncio.to_thread(self.context_block, ctx)
            return "\n\n".join(part for part in ((base or "").strip(), block.strip()) if part)

        return instructions


def _resolve(resolver: Resolver, ctx: Context) -> str | None:
    if resolver is None:
        return None
    if isinstance(resolver, str):
        return resolver
    value = resolver(ctx)
    return str(value) if value else None


def _for_model(call: Callable[[], str]) -> str:
    """Run one Hindsight call: refused arguments and a memory the model may not touch are
    answers it reads; anything else ends the run."""
    try:
        return call()
    except InvalidRequestError as exc:
        return f"Hindsight refused the arguments: {exc.message}"
    except (NotFoundError, PermissionDeniedError) as exc:
        return f"Hindsight: {exc.message}"


__all__ = ["HindsightMemory", "context_field", "last_user_text"]
