"""The OpenSearch index body is built fresh for every index: no body shares a dict with
another or with the module's field constants (a caller that edits one body, as
``_read_state`` does to an index's mapping, changes nothing else)."""

from __future__ import annotations

from hindsight.adapters.aws.opensearch_index import create_index_body
from hindsight.adapters.aws.opensearch_index.mapping import CHUNK_FIELDS, TEXT_TOKENS


def test_every_body_holds_its_own_field_mappings() -> None:
    chunk_before = {name: dict(spec) for name, spec in CHUNK_FIELDS.items()}
    tokens_before = dict(TEXT_TOKENS)
    first = create_index_body(64, model="m")["mappings"]["properties"]
    second = create_index_body(64, model="m")["mappings"]["properties"]
    for name in (*CHUNK_FIELDS, "text_tokens"):
        first[name]["edited"] = True
        assert "edited" not in second[name]
    assert {name: dict(spec) for name, spec in CHUNK_FIELDS.items()} == chunk_before
    assert tokens_before == TEXT_TOKENS
