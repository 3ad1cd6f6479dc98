"""A request body's numbers and booleans take their JSON types only: ``false`` is not a
``min_score`` of 0, ``"5"`` not a ``top_k`` (found in review: both were accepted)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from hindsight.core.commands import (
    ContextCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreMemoryCommand,
)

RETRIEVE = {"user_id": "u1", "query": "what can't I eat"}
CONTEXT = {"user_id": "u1", "session_id": "s1"}
STORE = {"user_id": "u1", "content": "I am allergic to peanuts"}


@pytest.mark.parametrize(
    ("model", "base", "field", "value"),
    [
        (RetrieveCommand, RETRIEVE, "min_score", False),
        (RetrieveCommand, RETRIEVE, "min_score", "0.5"),
        (RetrieveCommand, RETRIEVE, "min_similarity", True),
        (RetrieveCommand, RETRIEVE, "time_decay", "0.9"),
        (RetrieveCommand, RETRIEVE, "top_k", True),
        (RetrieveCommand, RETRIEVE, "top_k", "5"),
        (RetrieveCommand, RETRIEVE, "top_k", 5.5),
        (RetrieveCommand, RETRIEVE, "max_content_chars", "500"),
        (RetrieveCommand, RETRIEVE, "current_only", "false"),
        (RetrieveCommand, RETRIEVE, "include_archived", 1),
        (ContextCommand, CONTEXT, "budget_tokens", "2000"),
        (ContextCommand, CONTEXT, "min_score", False),
        (ContextCommand, CONTEXT, "max_facts", True),
        (ReflectCommand, {"user_id": "u1"}, "dry_run", "yes"),
        (StoreMemoryCommand, STORE, "ttl_seconds", "3600"),
        (StoreMemoryCommand, STORE, "pinned", 0),
    ],
)
def test_a_scalar_of_the_wrong_json_type_is_refused_by_name(
    model: type[BaseModel], base: dict[str, Any], field: str, value: Any
) -> None:
    body = {**base, field: value}
    for parse in (model.model_validate, lambda b: model.model_validate_json(json.dumps(b))):
        with pytest.raises(ValidationError) as refused:
            parse(body)
        assert refused.value.errors()[0]["loc"] == (field,)


def test_the_right_json_types_still_parse() -> None:
    body = {**RETRIEVE, "min_score": 0, "top_k": 5, "time_decay": 1, "current_only": False}
    parsed = RetrieveCommand.model_validate_json(json.dumps(body))
    assert parsed.min_score == 0.0 and parsed.top_k == 5 and parsed.time_decay == 1.0
    assert ReflectCommand.model_validate({"user_id": "u1", "dry_run": True}).dry_run
    stored = StoreMemoryCommand.model_validate({**STORE, "ttl_seconds": 60, "pinned": True})
    assert stored.ttl_seconds == 60 and stored.pinned
