"""Bringing a DynamoDB table made before ``by_user_facts`` in step (``add_facts_index``):
the paths moto cannot show. An ``UpdateTable`` refused, an index still being built, time
running out between pages: each leaves the table unmarked, so lists keep reading
``by_user`` and a later maintenance run finishes the work. The same for
``by_user_created`` (``add_created_index``): nothing to backfill, but it is read only once
DynamoDB has filled it. A fake client, no network."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hindsight.adapters.aws.dynamodb_record_store import DynamoDBRecordStore
from hindsight.adapters.aws.dynamodb_record_store.table import (
    add_created_index,
    add_facts_index,
    facts_indexed,
)
from hindsight.core.models import ListQuery


def _fact_item(n: int) -> dict[str, Any]:
    return {
        "pk": {"S": f"T#t1#M#f{n}"},
        "sk": {"S": "M"},
        "gsi1pk": {"S": "T#t1#U#u1"},
        "gsi1sk": {"S": f"{n:020d}#f{n}"},
    }


class _Table:
    """Just enough of a DynamoDB client: one table, its indexes, scan pages, updates."""

    def __init__(
        self, index: str | None, pages: list[list[dict[str, Any]]], may_update_table: bool = True
    ) -> None:
        self.indexes = {} if index is None else {"by_user_facts": index}
        self.queried: list[str] = []
        self.may_describe = True
        self.pages = pages
        self.may_update_table = may_update_table
        self.updated: list[str] = []
        self.marked = False

    def describe_table(self, TableName: str) -> dict[str, Any]:  # boto3 spells it so
        if not self.may_describe:
            error = {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}
            raise ClientError(error, "DescribeTable")
        return {
            "Table": {
                "GlobalSecondaryIndexes": [
                    {"IndexName": "by_user", "IndexStatus": "ACTIVE"},
                    *({"IndexName": n, "IndexStatus": s} for n, s in self.indexes.items()),
                ]
            }
        }

    def update_table(self, **request: Any) -> None:
        if not self.may_update_table:
            error = {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}
            raise ClientError(error, "UpdateTable")
        (update,) = request["GlobalSecondaryIndexUpdates"]
        self.indexes[update["Create"]["IndexName"]] = "CREATING"

    def get_paginator(self, operation: str) -> Any:
        assert operation == "scan"
        table = self

        class _Pages:
            def paginate(self, **request: Any) -> Any:
                assert "attribute_not_exists(gsi3pk)" in request["FilterExpression"]
                return ({"Items": page} for page in table.pages)

        return _Pages()

    def update_item(self, **request: Any) -> None:
        assert request["UpdateExpression"] == "SET gsi3pk = :p, gsi3sk = :s"
        if request["Key"]["pk"]["S"] == "T#t1#M#gone":
            error = {"Error": {"Code": "ConditionalCheckFailedException", "Message": "gone"}}
            raise ClientError(error, "UpdateItem")
        self.updated.append(request["Key"]["pk"]["S"])

    def put_item(self, **request: Any) -> None:
        assert request["Item"]["sk"] == {"S": "facts_index"}
        self.marked = True

    def get_item(self, **request: Any) -> dict[str, Any]:
        return {"Item": {}} if self.marked else {}

    def query(self, **request: Any) -> dict[str, Any]:
        self.queried.append(request["IndexName"])
        return {"Items": []}


def test_facts_get_their_keys_and_the_table_its_mark() -> None:
    table = _Table("ACTIVE", [[_fact_item(1), _fact_item(2)], [_fact_item(3)]])
    assert not facts_indexed(table, "t")
    assert add_facts_index(table, "t", False, lambda: True) == 3
    assert table.updated == ["T#t1#M#f1", "T#t1#M#f2", "T#t1#M#f3"]
    assert table.marked and facts_indexed(table, "t")


def test_a_fact_deleted_during_the_scan_is_skipped() -> None:
    gone = {**_fact_item(9), "pk": {"S": "T#t1#M#gone"}}
    table = _Table("ACTIVE", [[gone, _fact_item(1)]])
    assert add_facts_index(table, "t", False, lambda: True) == 1
    assert table.marked


def test_without_the_index_nothing_happens_unless_it_may_be_added() -> None:
    table = _Table(None, [[_fact_item(1)]])
    assert add_facts_index(table, "t", False, lambda: True) == 0  # the stack adds it
    assert (table.indexes, table.updated, table.marked) == ({}, [], False)


def test_an_update_table_refused_leaves_the_table_as_it_was() -> None:
    table = _Table(None, [[_fact_item(1)]], may_update_table=False)
    assert add_facts_index(table, "t", True, lambda: True) == 0
    assert (table.updated, table.marked) == ([], False)


def test_an_index_still_being_built_is_not_marked_until_a_later_run() -> None:
    table = _Table(None, [[_fact_item(1)]])
    assert add_facts_index(table, "t", True, lambda: True) == 1  # keys set meanwhile
    assert table.indexes == {"by_user_facts": "CREATING"}
    assert not table.marked and not facts_indexed(table, "t")
    table.indexes["by_user_facts"] = "ACTIVE"
    table.pages = [[]]  # every fact has its keys now
    assert add_facts_index(table, "t", True, lambda: True) == 0
    assert table.marked and facts_indexed(table, "t")


@pytest.mark.parametrize("pages_in_time", [0, 1])
def test_time_running_out_between_pages_leaves_the_rest_to_the_next_run(
    pages_in_time: int,
) -> None:
    table = _Table("ACTIVE", [[_fact_item(1)], [_fact_item(2)], [_fact_item(3)]])
    checks = iter([True] * pages_in_time + [False] * 10)
    assert add_facts_index(table, "t", False, lambda: next(checks)) == pages_in_time + 1
    assert not table.marked


def test_the_created_index_is_added_only_where_it_may_be_and_once() -> None:
    table = _Table("ACTIVE", [])
    assert not add_created_index(table, "t", False)  # the stack adds it
    assert "by_user_created" not in table.indexes
    refused = _Table("ACTIVE", [], may_update_table=False)
    assert not add_created_index(refused, "t", True)
    assert "by_user_created" not in refused.indexes
    assert add_created_index(table, "t", True)
    assert table.indexes["by_user_created"] == "CREATING"
    assert not add_created_index(table, "t", True)  # asked for already
    table.may_describe = False  # a role without DescribeTable: nothing is changed
    assert not add_created_index(table, "t", True)


def test_lists_read_the_created_index_only_once_it_is_filled() -> None:
    table = _Table("ACTIVE", [])
    table.indexes["by_user_created"] = "CREATING"  # DynamoDB still filling it
    store = DynamoDBRecordStore("t", client=table)
    since = ListQuery(created_after=datetime(2026, 1, 1, tzinfo=UTC))
    store.list("t1", "u1", since, 10)
    assert table.queried == ["by_user"]
    table.indexes["by_user_created"] = "ACTIVE"
    store.list("t1", "u1", since, 10)
    assert table.queried == ["by_user"] * 2  # looked at most every INDEX_RECHECK seconds
    store._created_indexed.again()
    store.list("t1", "u1", since, 10)
    assert table.queried[2:] == ["by_user_created"]
    table.may_describe = False  # a role without DescribeTable lists through by_user
    denied = DynamoDBRecordStore("t", client=table)
    denied.list("t1", "u1", since, 10)
    assert table.queried[3:] == ["by_user"]
