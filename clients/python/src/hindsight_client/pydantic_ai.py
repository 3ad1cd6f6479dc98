"""Pydantic AI tools for Hindsight: a toolset with store / retrieve / forget and the
working-memory block as instructions.

    from pydantic_ai import Agent
    from hindsight_client import Hindsight
    from hindsight_client.pydantic_ai import HindsightToolset

    agent = Agent(model, deps_type=User, toolsets=[HindsightToolset(Hindsight())])
    agent.run_sync("What should I eat tonight?", deps=User(user_id="alice"))

The tools (``memory_store``, ``memory_retrieve``, ``memory_forget``) act for the run's user,
never one the model picks: by default ``ctx.deps.user_id`` (or ``deps["user_id"]``), or a
fixed ``user_id=``, or a function of the ``RunContext``. The session is the run's
``conversation_id`` unless given. With ``context=True`` (the default) the toolset also adds
Hindsight's ``/v1/context`` block (the user's approved facts, the session's recent turns and
summary) to the agent's instructions on every model request.

Invalid arguments (422) go back to the model as a retry; a memory id it may not touch is a
failed tool call it sees; other errors (the server unreachable, 5xx after retries) end the run.

Needs ``pip install "hindsight-client[pydantic-ai]"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import Field
from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

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
from hindsight_client.errors import (
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
)

T = TypeVar("T")
Resolver = str | Callable[[RunContext[Any]], str | None] | None


def deps_field(ctx: RunContext[Any], name: str) -> str | None:
    """``ctx.deps.<name>`` or ``ctx.deps[name]``, as a string (None when absent)."""
    deps = ctx.deps
    value = deps.get(name) if isinstance(deps, Mapping) else getattr(deps, name, None)
    return str(value) if value else None


class HindsightToolset(FunctionToolset[Any]):
    """Hindsight memory for a Pydantic AI agent: three tools, and context as instructions.

    ``user_id``/``session_id``/``scope``: a value, a function of the ``RunContext``, or
    None (user: ``deps.user_id``; session: ``deps.session_id``, else the run's
    ``conversation_id``; scope: the API key's default). ``top_k``: results a retrieve
    returns unless the model asks. ``context``: add the ``/v1/context`` block to the
    instructions; ``budget_tokens``, ``recent_turns`` and ``max_facts`` shape it.
    """

    def __init__(
        self,
        client: Hindsight | None = None,
        *,
        user_id: Resolver = None,
        session_id: Resolver = None,
        scope: str | None = None,
        top_k: int = 5,
        context: bool = True,
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
        tools = [
            Tool(self.memory_store, name=STORE_NAME, description=STORE_DESCRIPTION),
            Tool(self.memory_retrieve, name=RETRIEVE_NAME, description=RETRIEVE_DESCRIPTION),
            Tool(self.memory_forget, name=FORGET_NAME, description=FORGET_DESCRIPTION),
        ]
        super().__init__(tools, instructions=[self.context_block] if context else None)

    # --- whose memories -------------------------------------------------------------
    def who(self, ctx: RunContext[Any]) -> Who:
        user_id = _resolve(self._user, ctx) or deps_field(ctx, "user_id")
        if not user_id:
            raise ValueError(
                "HindsightToolset needs the run's user: give deps with a user_id "
                "(attribute or key), or HindsightToolset(user_id=...)"
            )
        session_id = (
            _resolve(self._session, ctx) or deps_field(ctx, "session_id") or ctx.conversation_id
        )
        return Who(user_id, session_id, self.scope)

    # --- the tools ------------------------------------------------------------------
    def memory_store(
        self,
        ctx: RunContext[Any],
        content: Annotated[str, Field(description=CONTENT_HELP, min_length=1, max_length=8_000)],
        category: Annotated[str | None, Field(description=CATEGORY_HELP, max_length=64)] = None,
    ) -> str:
        return store_text(_tool_call(lambda: self.toolbox.store(self.who(ctx), content, category)))

    def memory_retrieve(
        self,
        ctx: RunContext[Any],
        query: Annotated[str, Field(description=QUERY_HELP, min_length=1, max_length=2_000)],
        top_k: Annotated[int | None, Field(description=TOP_K_HELP, ge=1, le=20)] = None,
    ) -> str:
        page = _tool_call(lambda: self.toolbox.retrieve(self.who(ctx), query, top_k))
        return retrieve_text(page)

    def memory_forget(
        self,
        ctx: RunContext[Any],
        memory_id: Annotated[str, Field(description=MEMORY_ID_HELP, min_length=1)],
    ) -> str:
        result = _tool_call(lambda: self.toolbox.forget(self.who(ctx), memory_id))
        return forget_text(result)

    # --- the instructions -----------------------------------------------------------
    def context_block(self, ctx: RunContext[Any]) -> str | None:
        """The ``/v1/context`` block for the run's user and session (None when empty)."""
        who = self.who(ctx)
        query = ctx.prompt if isinstance(ctx.prompt, str) else None
        result = self.toolbox.client.context(
            who.user_id,
            who.session_id or who.user_id,
            query=(query or "")[:2_000] or None,
            budget_tokens=self.budget_tokens,
            recent_turns=self.recent_turns,
            max_facts=self.max_facts,
        )
        return result.context or None


def _resolve(resolver: Resolver, ctx: RunContext[Any]) -> str | None:
    if resolver is None:
        return None
    if isinstance(resolver, str):
        return resolver
    value = resolver(ctx)
    return str(value) if value else None


def _tool_call(call: Callable[[], T]) -> T:
    """Run one Hindsight call: bad arguments are the model's to retry, a memory it may not
    touch a failed call it sees; anything else ends the run."""
    try:
        return call()
    except InvalidRequestError as exc:
        raise ModelRetry(f"Hindsight refused the arguments: {exc.message}") from exc
    except (NotFoundError, PermissionDeniedError) as exc:
        raise ToolFailed(f"Hindsight: {exc.message}") from exc


__all__ = ["HindsightToolset", "deps_field"]
