"""Expression attribute names and values, and the filter a list query needs beyond the key."""

from __future__ import annotations

from typing import Any

from hindsight.adapters.aws.dynamodb_record_store.items import SERIALIZER
from hindsight.adapters.paging import epoch_us
from hindsight.core.models import ListQuery


class Expression:
    """Placeholders for attribute names and values of one request."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        """The ``#name`` token standing for an attribute name in an expression."""
        token = f"#{attribute}"
        self.names[token] = attribute
        return token

    def value(self, value: Any) -> str:
        """The ``:vN`` token standing for a value in an expression."""
        token = f":v{len(self.values)}"
        self.values[token] = SERIALIZER.serialize(value)
        return token

    def one_of(self, attribute: str, values: frozenset[Any]) -> str:
        options = ", ".join(self.value(str(v)) for v in sorted(values))
        return f"{self.name(attribute)} IN ({options})"

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.names:
            params["ExpressionAttributeNames"] = self.names
        if self.values:
            params["ExpressionAttributeValues"] = self.values
        return params


def list_filter(query: ListQuery, expr: Expression) -> list[str]:
    """The clauses of a list's ``FilterExpression`` (empty: no filter)."""
    clauses: list[str] = []
    for attribute, values in (
        ("kind", query.kinds),
        ("status", query.statuses),
        ("category", query.categories),
        ("scope", query.scopes),
    ):
        if values is not None:
            clauses.append(expr.one_of(attribute, values))
    if query.session_id is not None:
        clauses.append(f"{expr.name('session_id')} = {expr.value(query.session_id)}")
    if query.created_after is not None:
        clauses.append(f"{expr.name('created_us')} > {expr.value(epoch_us(query.created_after))}")
    if query.now is not None and not query.include_expired:
        expires = expr.name("expires_us")
        clauses.append(
            f"(attribute_not_exists({expires}) OR {expires} > {expr.value(epoch_us(query.now))})"
        )
    return clauses
