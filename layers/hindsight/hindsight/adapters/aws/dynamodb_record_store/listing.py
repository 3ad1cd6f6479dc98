"""Reads of many items: a user's memories a page at a time (the ``by_user`` index; what
was stored since a moment from ``by_user_created``), every memory (a scan, for
reindexing) and the users active since a moment (``by_activity``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, NamedTuple

from hindsight.adapters.aws.dynamodb_record_store.expressions import Expression, list_filter
from hindsight.adapters.aws.dynamodb_record_store.items import (
    ACTIVITY_SHARDS,
    MEMORY,
    MEMORY_SK,
    escape,
    from_attribute_values,
    from_occurred_key,
    memory_from_item,
    memory_pk,
    occurred_key,
    user_pk,
    vector_from_item,
)
from hindsight.adapters.aws.dynamodb_record_store.requests import TableRequests
from hindsight.adapters.aws.dynamodb_record_store.table import (
    BY_ACTIVITY_INDEX,
    BY_USER_CREATED_INDEX,
    BY_USER_FACTS_INDEX,
    BY_USER_INDEX,
)
from hindsight.adapters.paging import decode_page_cursor, encode_page_cursor, epoch_us
from hindsight.core.models import ListQuery, Memory, MemoryKind, Page, StoredVector

# a page of what was stored since a moment reads at most this many keys from
# by_user_created (one Query); a user who stored more since reads by_user instead
CREATED_SCAN = 1_000

Bodies = Callable[[Sequence[str]], list[str]]  # ``body`` values -> memory JSON (S3 fetched)
Hydrate = Callable[[Sequence[dict[str, Any]]], None]  # S3 references -> inline payloads
Fetch = Callable[[Sequence[str]], list[Memory]]  # memory ids -> the memories still there


def _inline(texts: Sequence[str]) -> list[str]:
    return list(texts)


class _Index(NamedTuple):
    """An index a list reads: its name, partition and sort key attributes."""

    name: str
    partition: str
    sort: str


_BY_USER = _Index(BY_USER_INDEX, "gsi1pk", "gsi1sk")
_BY_USER_FACTS = _Index(BY_USER_FACTS_INDEX, "gsi3pk", "gsi3sk")


def _index(query: ListQuery, facts_index: bool) -> _Index:
    """The facts alone (``by_user_facts``) when only facts are asked for and the table has
    them there, else ``by_user``."""
    if facts_index and query.kinds == frozenset({MemoryKind.SEMANTIC}):
        return _BY_USER_FACTS
    return _BY_USER


def list_page(
    table: TableRequests,
    tenant_id: str,
    user_id: str,
    query: ListQuery,
    limit: int,
    cursor: str | None = None,
    bodies: Bodies = _inline,
    facts_index: bool = False,
) -> Page:
    """One page of a user's memories in ``occurred_at``, id order (keyset cursor);
    ``facts_index``: the table's facts are all in ``by_user_facts``."""
    limit = max(1, limit)
    partition = user_pk(tenant_id, user_id)
    index = _index(query, facts_index)
    start_key = None if cursor is None else _start_key(tenant_id, partition, index, cursor, query)
    params = _query_params(table, partition, query, limit, index=index)
    if params is None:
        return Page(items=[])
    chosen, more = _read_page(table, params, start_key, limit, bodies)
    next_cursor = None
    if more:
        last = chosen[-1]
        next_cursor = encode_page_cursor(
            epoch_us(last.occurred_at), last.memory_id, query.oldest_first
        )
    return Page(items=chosen, next_cursor=next_cursor)


def list_ids(
    table: TableRequests,
    tenant_id: str,
    user_id: str,
    query: ListQuery,
    limit: int,
    facts_index: bool = False,
) -> list[str]:
    """The ids of ``list_page``'s first page, read from the index's sort key
    (``occurred_key``): no memory body is parsed or fetched from S3."""
    limit = max(1, limit)
    index = _index(query, facts_index)
    partition = user_pk(tenant_id, user_id)
    params = _query_params(table, partition, query, limit, projected=index.sort, index=index)
    if params is None:
        return []
    raws, _ = _read_items(table, params, None, limit)
    return [raw[index.sort]["S"].partition("#")[2] for raw in raws]


def created_page(
    table: TableRequests,
    tenant_id: str,
    user_id: str,
    query: ListQuery,
    limit: int,
    cursor: str | None,
    fetch: Fetch,
) -> Page | None:
    """``list_page`` of a query with ``created_after`` (the reflection cursor), from
    ``by_user_created``: one ``Query`` reads the keys of what was stored since, which are
    put in the page order (``occurred_at``, id: the ``by_user`` sort key, projected) and
    the page's memories read by id. None when more than ``CREATED_SCAN`` were stored
    since: ``list_page`` reads them, page by page, from ``by_user``."""
    if query.created_after is None:
        raise ValueError("created_page lists what was stored after a moment")
    window = _occurred_window(query)
    if window is None:
        return Page(items=[])
    low, high = window
    limit = max(1, limit)
    expr = Expression()
    key_condition = (
        f"{expr.name('gsi1pk')} = {expr.value(user_pk(tenant_id, user_id))} AND "
        f"{expr.name('created_us')} > {expr.value(epoch_us(query.created_after))}"
    )
    filters = list_filter(replace(query, created_after=None), expr)
    order = expr.name(_BY_USER.sort)
    if low is not None:
        filters.append(f"{order} >= {expr.value(low)}")
    if high is not None:
        filters.append(f"{order} < {expr.value(high)}")
    if cursor is not None:
        after = occurred_key(*decode_page_cursor(cursor, query.oldest_first))
        filters.append(f"{order} {'>' if query.oldest_first else '<'} {expr.value(after)}")
    params: dict[str, Any] = {
        "TableName": table.table_name,
        "IndexName": BY_USER_CREATED_INDEX,
        "KeyConditionExpression": key_condition,
        "ProjectionExpression": order,
        "Limit": CREATED_SCAN,
        **({"FilterExpression": " AND ".join(filters)} if filters else {}),
        **expr.params(),
    }
    response = table.call("Query", **params)
    if response.get("LastEvaluatedKey"):
        return None
    keys = sorted(
        (raw[_BY_USER.sort]["S"] for raw in response.get("Items", [])),
        reverse=not query.oldest_first,
    )
    chosen = keys[:limit]
    # the index is updated after the table: a memory changed since is checked again
    fetched = fetch([from_occurred_key(key)[1] for key in chosen])
    items = [memory for memory in fetched if query.admits(memory)]
    next_cursor = None
    if len(keys) > limit:
        next_cursor = encode_page_cursor(*from_occurred_key(chosen[-1]), query.oldest_first)
    return Page(items=items, next_cursor=next_cursor)


def _start_key(
    tenant_id: str, partition: str, index: _Index, cursor: str, query: ListQuery
) -> dict[str, Any]:
    """The index key a page cursor resumes after."""
    occurred_us, memory_id = decode_page_cursor(cursor, query.oldest_first)
    return {
        index.partition: {"S": partition},
        index.sort: {"S": occurred_key(occurred_us, memory_id)},
        "pk": {"S": memory_pk(tenant_id, memory_id)},
        "sk": {"S": MEMORY_SK},
    }


def _key_condition(
    expr: Expression,
    partition: str,
    low: str | None,
    high: str | None,
    index: _Index = _BY_USER,
) -> str:
    """The user's partition, narrowed to ``[low, high)`` of the sort key when given."""
    condition = f"{expr.name(index.partition)} = {expr.value(partition)}"
    sort_key = index.sort
    if low is not None and high is not None:
        condition += f" AND {sort_key} BETWEEN {expr.value(low)} AND {expr.value(high)}"
    elif low is not None:
        condition += f" AND {sort_key} >= {expr.value(low)}"
    elif high is not None:
        condition += f" AND {sort_key} < {expr.value(high)}"
    return condition


def _occurred_window(query: ListQuery) -> tuple[str | None, str | None] | None:
    """The ``by_user`` sort keys of ``[since, until)`` (None for an open end); None when
    the query admits nothing (no scope, or an empty window)."""
    if query.scopes is not None and not query.scopes:
        return None
    low = None if query.since is None else occurred_key(epoch_us(query.since))
    high = None if query.until is None else occurred_key(epoch_us(query.until))
    if low is not None and high is not None and low >= high:
        return None
    return low, high


def _query_params(
    table: TableRequests,
    partition: str,
    query: ListQuery,
    limit: int,
    projected: str = "body",
    index: _Index = _BY_USER,
) -> dict[str, Any] | None:
    """The ``Query`` request of a list page on ``index``, reading the ``projected``
    attribute of each item (None: the query admits nothing)."""
    window = _occurred_window(query)
    if window is None:
        return None
    low, high = window
    expr = Expression()
    key_condition = _key_condition(expr, partition, low, high, index)
    # the facts index holds facts alone: no filter on the kind (pages read no more)
    filters = list_filter(replace(query, kinds=None) if index is _BY_USER_FACTS else query, expr)
    params: dict[str, Any] = {
        "TableName": table.table_name,
        "IndexName": index.name,
        "KeyConditionExpression": key_condition,
        "ScanIndexForward": query.oldest_first,
        "ProjectionExpression": expr.name(projected),
        # a filter drops items after they are read: read bigger pages then
        "Limit": limit + 1 if not filters else min(1_000, max(50, 4 * (limit + 1))),
    }
    if filters:
        params["FilterExpression"] = " AND ".join(filters)
    params.update(expr.params())
    return params


def _read_page(
    table: TableRequests,
    params: dict[str, Any],
    start_key: dict[str, Any] | None,
    limit: int,
    bodies: Bodies,
) -> tuple[list[Memory], bool]:
    """Up to ``limit`` memories, reading on while the filter leaves pages short; and
    whether there are more after them."""
    raws, more = _read_items(table, params, start_key, limit)
    texts = [raw["body"]["S"] for raw in raws]
    return [MEMORY.validate_json(text) for text in bodies(texts)], more


def _read_items(
    table: TableRequests, params: dict[str, Any], start_key: dict[str, Any] | None, limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """Up to ``limit`` index items, reading on while the filter leaves pages short; and
    whether there are more after them."""
    raws: list[dict[str, Any]] = []
    more = False
    while not more:
        if start_key is not None:
            params["ExclusiveStartKey"] = start_key
        response = table.call("Query", **params)
        for raw in response.get("Items", []):
            if len(raws) == limit:
                more = True
                break
            raws.append(raw)
        start_key = response.get("LastEvaluatedKey")
        if not start_key:
            break
    return raws, more


def scan_memories(
    table: TableRequests, tenant_id: str | None = None, hydrate: Hydrate | None = None
) -> list[tuple[Memory, StoredVector | None]]:
    """Every memory (of one tenant, or all) with its vector, by tenant and id."""
    expr = Expression()
    prefix = "T#" if tenant_id is None else f"T#{escape(tenant_id)}#M#"
    params: dict[str, Any] = {
        "TableName": table.table_name,
        "FilterExpression": (
            f"{expr.name('item_type')} = {expr.value('memory')} AND "
            f"begins_with({expr.name('pk')}, {expr.value(prefix)})"
        ),
        **expr.params(),
    }
    found: list[tuple[Memory, StoredVector | None]] = []
    start: dict[str, Any] | None = None
    while True:
        extra = {"ExclusiveStartKey": start} if start else {}
        response = table.call("Scan", **params, **extra)
        items = [from_attribute_values(raw) for raw in response.get("Items", [])]
        if hydrate is not None:
            hydrate(items)
        found += [(memory_from_item(item), vector_from_item(item)) for item in items]
        start = response.get("LastEvaluatedKey")
        if not start:
            break
    found.sort(key=lambda pair: (pair[0].tenant_id, pair[0].memory_id))
    return found


def active_users_since(table: TableRequests, since: datetime) -> list[tuple[str, str]]:
    """(tenant, user) of every user whose latest episode was stored after ``since``."""
    users: set[tuple[str, str]] = set()
    for shard in range(ACTIVITY_SHARDS):
        for raw in table.query_all(
            IndexName=BY_ACTIVITY_INDEX,
            KeyConditionExpression="gsi2pk = :s AND gsi2sk > :t",
            ExpressionAttributeValues={
                ":s": {"S": f"A#{shard}"},
                ":t": {"N": str(epoch_us(since))},
            },
            ProjectionExpression="#t, #u",
            ExpressionAttributeNames={"#t": "tenant_id", "#u": "user_id"},
        ):
            users.add((raw["tenant_id"]["S"], raw["user_id"]["S"]))
    return sorted(users)
