"""What ``HindsightStore`` keeps and computes without a server: how items sit in memories.

An item of namespace ``(*prefix, user_id[, scope])`` and key ``k`` is one episodic memory
of that user and scope, in a session of its own (``key_session``), whose content is the
item's text (``item_text``) and whose metadata holds the item under ``METADATA_KEY``.
Memories the store did not write read back as ``memory_value``. Filters and namespace
conditions follow LangGraph's semantics (``matches_filter``, ``namespace_matches``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import MatchCondition, get_text_at_path

from hindsight_client.types import Memory, RetrievedMemory

METADATA_KEY = "langgraph"  # memory.metadata[METADATA_KEY] = {"namespace", "key", "value"}
MAX_METADATA_BYTES = 16_384  # the server's limit for one memory's metadata
TEXT_FIELDS = ("content", "memory", "text", "data")  # tried in order for an item's text
PASSED_FIELDS = ("category", "emotion", "speaker")  # value fields Hindsight keeps as its own
MEMORY_ID_PREFIXES = ("mem_", "fact_")
LIST_PAGE = 50  # the server's largest list page
RETRIEVE_PAGE = 20  # the server's largest retrieve page
MAX_SCAN = 2_000  # memories read at most to answer one search without a query, or a listing
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Target:
    """Where a namespace lives in Hindsight: a user and, optionally, one scope."""

    user_id: str
    scope: str | None


def key_session(namespace: tuple[str, ...], key: str) -> str:
    """The ``session_id`` that finds an item in one request: a digest of namespace and key.

    Items are memories with server-made ids; storing each under a session of its own
    (``kv-<digest>``, never a real conversation's id) lets ``get`` list exactly that
    session instead of paging through the user's memories.
    """
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8")).hexdigest()
    return f"kv-{digest[:40]}"


def item_text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text Hindsight embeds and searches for an item."""
    if fields:
        parts = [text for path in fields for text in get_text_at_path(value, path)]
        text = "\n".join(part for part in parts if part.strip())
        if text.strip():
            return text
    for name in TEXT_FIELDS:
        candidate = value.get(name)
        if isinstance(candidate, str) and candidate.strip():
            return candidate
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def matches_filter(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: exact values, nested objects, ``$eq/$ne/$gt/$gte/$lt/$lte``."""
    if isinstance(wanted, Mapping):
        operators = {k: v for k, v in wanted.items() if str(k).startswith("$")}
        if operators:
            return all(_compare(value, op, operand) for op, operand in operators.items())
        if not isinstance(value, Mapping):
            return False
        return all(matches_filter(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(matches_filter(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _compare(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    ordered = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
    if operator not in ordered:
        raise ValueError(f"unsupported filter operator {operator!r}; use $eq $ne $gt $gte $lt $lte")
    try:
        return bool(ordered[operator](float(value), float(operand)))
    except (TypeError, ValueError):
        return False


def namespace_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(want in ("*", have) for have, want in zip(part, path, strict=True))


def stored_item(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The LangGraph item a memory holds, if the store wrote it."""
    stored = (metadata or {}).get(METADATA_KEY)
    if (
        isinstance(stored, dict)
        and isinstance(stored.get("key"), str)
        and isinstance(stored.get("namespace"), list)
        and isinstance(stored.get("value"), dict)
    ):
        return stored
    return None


def item_created_at(memory: Memory | RetrievedMemory) -> datetime:
    """When the item was first put (kept across puts), else when the memory was created."""
    stored = stored_item(memory.metadata)
    if stored is not None and isinstance(stored.get("created_at"), str):
        try:
            return datetime.fromisoformat(stored["created_at"])
        except ValueError:
            pass
    return memory.created_at or _EPOCH


def memory_value(memory: Memory | RetrievedMemory) -> dict[str, Any]:
    """The value of a memory the store did not write (stored by another client, or a fact)."""
    value: dict[str, Any] = {"content": memory.content, "kind": memory.kind}
    extra = {
        "category": memory.category,
        "confidence": memory.confidence,
        "status": memory.status,
        "session_id": memory.session_id,
        "occurred_at": memory.occurred_at.isoformat() if memory.occurred_at else None,
        "metadata": memory.metadata or None,
    }
    value.update({k: v for k, v in extra.items() if v is not None})
    return value
