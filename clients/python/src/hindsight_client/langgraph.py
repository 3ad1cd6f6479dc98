"""LangGraph long-term memory backed by Hindsight: a ``BaseStore`` and a context hook.

    from hindsight_client import Hindsight
    from hindsight_client.langgraph import HindsightStore, HindsightContextHook

    memory = Hindsight()  # HINDSIGHT_URL / HINDSIGHT_API_KEY
    graph = builder.compile(checkpointer=..., store=HindsightStore(memory))

``HindsightStore`` maps LangGraph namespaces to Hindsight users and scopes:
``(user_id,)`` or ``(user_id, scope)``, after an optional fixed ``prefix`` (e.g.
``HindsightStore(memory, prefix=("memories",))`` for ``("memories", user_id)``). Each item
is one episodic memory whose content is the item's text (``index`` fields, else
``content``/``memory``/``text``/``data``, else the value as JSON); the item itself (key,
namespace, value) rides in the memory's metadata. ``search`` with a query is Hindsight
retrieval (meaning, keywords, time, approved facts first), so it also finds what the user
told another agent and the facts reflection distilled; those come back with their memory id
as key and ``{"content", "kind", ...}`` as value, and can be read or deleted by that key.

Needs ``pip install "hindsight-client[langgraph]"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from hindsight_client._langgraph_items import (
    LIST_PAGE,
    MAX_METADATA_BYTES,
    MAX_SCAN,
    MEMORY_ID_PREFIXES,
    METADATA_KEY,
    PASSED_FIELDS,
    RETRIEVE_PAGE,
    Target,
    item_created_at,
    item_text,
    key_session,
    matches_filter,
    memory_value,
    namespace_matches,
    stored_item,
)
from hindsight_client.client import Hindsight
from hindsight_client.errors import NotFoundError
from hindsight_client.types import Memory, RetrievedMemory

logger = logging.getLogger(__name__)


class HindsightStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are Hindsight memories.

    ``client``: a ``Hindsight`` client (default: ``Hindsight()`` from the environment).
    ``prefix``: labels every namespace starts with before ``(user_id[, scope])``.
    ``fields``: default JSON paths of an item's text (``put(..., index=[...])`` overrides).

    Semantics to know: ``put`` replaces the key's memory (the old one is deleted first, so a
    failed put leaves the key empty and raises); Hindsight keeps one memory per text per
    user and scope within its dedup window (1 h by default), so a put of text that another
    item already holds is skipped (logged) and leaves the key unset; ``ttl`` (minutes)
    counts from the put (reads do not refresh it); ``index=False`` is accepted, but every
    memory is searchable. ``abatch`` runs ``batch`` in a worker thread.
    """

    supports_ttl = True

    def __init__(
        self,
        client: Hindsight | None = None,
        *,
        prefix: Sequence[str] = (),
        fields: Sequence[str] | None = None,
    ) -> None:
        self.client = client if client is not None else Hindsight()
        self.prefix = tuple(prefix)
        self.fields = list(fields) if fields else None

    # --- BaseStore --------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # --- namespaces -------------------------------------------------------------------
    def target(self, namespace: tuple[str, ...], *, need_user: bool = True) -> Target | None:
        """The user and scope of a namespace (None if it names no user and none is needed)."""
        n = len(self.prefix)
        if tuple(namespace[:n]) != self.prefix[: len(namespace)]:
            raise InvalidNamespaceError(
                f"namespace {namespace} must start with this store's prefix {self.prefix}"
            )
        rest = tuple(namespace[n:])
        if len(rest) > 2:
            raise InvalidNamespaceError(
                f"namespace {namespace} is too deep: after the prefix {self.prefix} give "
                "(user_id,) or (user_id, scope)"
            )
        if not rest:
            if need_user:
                raise InvalidNamespaceError(
                    f"namespace {namespace} names no user: Hindsight keeps memories per user, "
                    f"so give {(*self.prefix, '<user_id>')} (and optionally a scope after it)"
                )
            return None
        return Target(rest[0], rest[1] if len(rest) == 2 else None)

    def memory_namespace(self, memory: Memory | RetrievedMemory, user_id: str) -> tuple[str, ...]:
        """The namespace an item reports: where it was put, else (prefix, user, scope)."""
        stored = stored_item(memory.metadata)
        if stored is not None:
            return tuple(stored["namespace"])
        return (*self.prefix, user_id, memory.scope)

    # --- get / put / delete -----------------------------------------------------------
    def _find(self, namespace: tuple[str, ...], key: str) -> list[Memory]:
        """The memories that hold ``key`` in ``namespace``, newest first."""
        target = self.target(namespace)
        assert target is not None
        found = self.client.iter_memories(
            target.user_id,
            session_id=key_session(namespace, key),
            kind="episodic",
            page_size=LIST_PAGE,
            limit=MAX_SCAN,
        )
        return [
            memory
            for memory in found
            if (stored := stored_item(memory.metadata)) is not None
            and stored["key"] == key
            and tuple(stored["namespace"]) == namespace
        ]

    def _by_memory_id(self, namespace: tuple[str, ...], key: str) -> Memory | None:
        """A memory addressed by its own id, if it belongs to the namespace's user and scope."""
        if not key.startswith(MEMORY_ID_PREFIXES):
            return None
        target = self.target(namespace)
        assert target is not None
        try:
            memory = self.client.get(key)
        except NotFoundError:
            return None
        if memory.user_id != target.user_id:
            return None
        if target.scope is not None and memory.scope != target.scope:
            return None
        return memory

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        found = self._find(namespace, key)
        if found:
            return self._item(found[0], namespace, key)
        memory = self._by_memory_id(namespace, key)
        if memory is None:
            return None
        return self._item(memory, self.memory_namespace(memory, str(memory.user_id)), key)

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        found = self._find(namespace, key) or [
            m for m in [self._by_memory_id(namespace, key)] if m is not None
        ]
        for memory in found:
            self._forget(memory.memory_id)

    def _forget(self, memory_id: str) -> None:
        # NotFound: deleted meanwhile (or with the episode a fact was derived from)
        with contextlib.suppress(NotFoundError):
            self.client.delete(memory_id)

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), str(op.key)
        if op.value is None:
            self._delete(namespace, key)
            return
        target = self.target(namespace)
        assert target is not None
        value = dict(op.value)
        existing = self._find(namespace, key)
        created = item_created_at(existing[0]) if existing else datetime.now(timezone.utc)
        record = {
            "namespace": list(namespace),
            "key": key,
            "value": value,
            "created_at": created.isoformat(),
        }
        size = len(json.dumps(record, ensure_ascii=False, default=str).encode("utf-8"))
        if size > MAX_METADATA_BYTES - 64:
            raise ValueError(
                f"the item {namespace}/{key} is {size} bytes as JSON; a Hindsight memory keeps "
                f"at most {MAX_METADATA_BYTES} bytes of metadata — put a shorter value"
            )
        fields = op.index if isinstance(op.index, list) else self.fields
        passed = {k: value[k] for k in PASSED_FIELDS if isinstance(value.get(k), str)}
        ttl_seconds = max(1, math.ceil(op.ttl * 60)) if op.ttl else None
        for memory in existing:
            self._forget(memory.memory_id)
        result = self.client.store(
            target.user_id,
            item_text(value, fields),
            scope=target.scope,
            session_id=key_session(namespace, key),
            ttl_seconds=ttl_seconds,
            metadata={METADATA_KEY: json.loads(json.dumps(record, default=str))},
            **passed,
        )
        if result.duplicate:
            logger.info(
                "item not stored: memory %s already holds the same text for user %s "
                "(Hindsight's dedup window); search finds it, get(%r) does not",
                result.memory_id,
                target.user_id,
                key,
            )

    # --- search -----------------------------------------------------------------------
    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        target = self.target(prefix)
        assert target is not None
        found: list[SearchItem] = []
        skipped = 0
        for candidate in self._candidates(target, op.query):
            if candidate.namespace[: len(prefix)] != prefix:
                continue
            if op.filter and not matches_filter(candidate.value, op.filter):
                continue
            if skipped < op.offset:
                skipped += 1
                continue
            found.append(candidate)
            if len(found) >= op.limit:
                break
        return found

    def _candidates(self, target: Target, query: str | None) -> Iterator[SearchItem]:
        scopes = [target.scope] if target.scope else None
        if query and query.strip():
            # a store's search ranks every match up to its limit (as LangGraph's own
            # stores do): no relevance floor
            for hit in self.client.iter_retrieve(
                target.user_id, query, scopes=scopes, top_k=RETRIEVE_PAGE, min_score=0
            ):
                yield self._search_item(hit, target.user_id, hit.score)
            return
        for memory in self.client.iter_memories(
            target.user_id, scope=target.scope, page_size=LIST_PAGE, limit=MAX_SCAN
        ):
            if memory.kind == "semantic" and memory.status != "approved":
                continue  # pending, rejected and superseded facts are not knowledge yet
            yield self._search_item(memory, target.user_id, None)

    def _search_item(
        self, memory: Memory | RetrievedMemory, user_id: str, score: float | None
    ) -> SearchItem:
        stored = stored_item(memory.metadata)
        created = item_created_at(memory)
        return SearchItem(
            namespace=self.memory_namespace(memory, user_id),
            key=str(stored["key"]) if stored else memory.memory_id,
            value=dict(stored["value"]) if stored else memory_value(memory),
            created_at=created,
            updated_at=memory.created_at or created,
            score=score,
        )

    def _item(self, memory: Memory, namespace: tuple[str, ...], key: str) -> Item:
        stored = stored_item(memory.metadata)
        created = item_created_at(memory)
        return Item(
            namespace=namespace,
            key=key,
            value=dict(stored["value"]) if stored else memory_value(memory),
            created_at=created,
            updated_at=memory.created_at or created,
        )

    # --- list_namespaces --------------------------------------------------------------
    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        user_id = self._listed_user(conditions)
        seen: dict[tuple[str, ...], None] = {}
        for memory in self.client.iter_memories(user_id, page_size=LIST_PAGE, limit=MAX_SCAN):
            namespace = self.memory_namespace(memory, user_id)
            if not all(namespace_matches(namespace, c) for c in conditions):
                continue
            if op.max_depth is not None:
                namespace = namespace[: op.max_depth]
            seen.setdefault(namespace, None)
        return sorted(seen)[op.offset : op.offset + op.limit]

    def _listed_user(self, conditions: tuple[MatchCondition, ...]) -> str:
        at = len(self.prefix)
        for condition in conditions:
            path = tuple(condition.path)
            if condition.match_type == "prefix" and len(path) > at and path[at] != "*":
                return str(path[at])
        raise InvalidNamespaceError(
            "Hindsight lists namespaces of one user at a time (it has no list of users): "
            f"pass prefix={(*self.prefix, '<user_id>')}"
        )


# --- the context hook ---------------------------------------------------------------------


class HindsightContextHook:
    """Put Hindsight's working-memory block (``/v1/context``) in front of the model's input.

    As ``create_react_agent(..., pre_model_hook=HindsightContextHook(memory))`` it returns
    ``{"llm_input_messages": [SystemMessage(block), *messages]}`` each turn, leaving the
    graph's message history untouched. In a graph of your own, call
    ``hook.messages(state, config)`` in the model node, or add the hook as a node before it
    (its state then needs an ``llm_input_messages`` key).

    The user and session come from ``config["configurable"]`` (``user_id`` and
    ``thread_id`` by default; rename with ``user_key``/``session_key``), or are fixed with
    ``user_id=``/``session_id=``. The query is the last human message, so the facts that
    matter for it come first. ``budget_tokens``, ``recent_turns`` and ``max_facts`` are
    passed to the server when given.
    """

    def __init__(
        self,
        client: Hindsight | None = None,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        user_key: str = "user_id",
        session_key: str = "thread_id",
        budget_tokens: int | None = None,
        recent_turns: int | None = None,
        max_facts: int | None = None,
    ) -> None:
        self.client = client if client is not None else Hindsight()
        self.user_id = user_id
        self.session_id = session_id
        self.user_key = user_key
        self.session_key = session_key
        self.budget_tokens = budget_tokens
        self.recent_turns = recent_turns
        self.max_facts = max_facts

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, list[AnyMessage]]:
        return {"llm_input_messages": self.messages(state, config)}

    def messages(self, state: Any, config: RunnableConfig | None = None) -> list[AnyMessage]:
        """The state's messages with the context block as a system message in front."""
        messages = list(_state_messages(state))
        block = self.block(config, query=last_human_text(messages))
        if not block:
            return messages
        return [SystemMessage(content=block), *messages]

    def block(self, config: RunnableConfig | None, query: str | None = None) -> str:
        """The context block for the config's user and session ("" when there is none)."""
        configurable = dict((config or {}).get("configurable") or {})
        user_id = self.user_id or configurable.get(self.user_key)
        session_id = self.session_id or configurable.get(self.session_key)
        if not user_id or not session_id:
            raise ValueError(
                "HindsightContextHook needs a user and a session: pass "
                f'config={{"configurable": {{"{self.user_key}": ..., "{self.session_key}": ...}}}} '
                "when invoking the graph, or fix them with user_id=/session_id="
            )
        result = self.client.context(
            str(user_id),
            str(session_id),
            query=query or None,
            budget_tokens=self.budget_tokens,
            recent_turns=self.recent_turns,
            max_facts=self.max_facts,
        )
        return result.context


def _state_messages(state: Any) -> Sequence[AnyMessage]:
    messages = state.get("messages") if isinstance(state, Mapping) else state.messages
    return list(messages or [])


def last_human_text(messages: Sequence[BaseMessage]) -> str | None:
    """The text of the newest human message (None if there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text[:2_000] or None
    return None


__all__ = [
    "HindsightContextHook",
    "HindsightStore",
    "item_text",
    "key_session",
    "matches_filter",
]
