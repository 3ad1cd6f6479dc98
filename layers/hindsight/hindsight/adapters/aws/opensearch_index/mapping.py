"""The index's settings and mappings, and the index template built from them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# 2: a document per chunk of a long memory (``chunk`` fields); 3: inner product
SCHEMA_VERSION = 3
# a session turn's vector mixes two unit vectors (core/embedding.py): its inner product
# with the query is the mix of the two cosines, which ``cosinesimil`` would divide by the
# vector's length. An index made before (``cosinesimil``) is still read right for unit
# vectors; ``vector_space`` tells the two apart
VECTOR_SPACE = "innerproduct"


def vector_space(mappings: dict[str, Any]) -> str:
    """The space type of an index's vector field (as ``indices.get`` returns its mappings)."""
    method = mappings.get("properties", {}).get("vector", {}).get("method", {})
    return str(method.get("space_type", "cosinesimil"))


def similarity_of(space: str, query_norm: float = 1.0) -> Callable[[Any], float]:
    """The port's similarity (the inner product of the query with a memory's unit or
    mixed vector) from the score OpenSearch gives a k-NN hit in that space.

    ``cosinesimil`` divides by the query's length, which is not 1 for a centred query
    (``core/retrieval/centering.py``): its cosine is scaled back by ``query_norm``."""
    if space == "innerproduct":
        # score = 1 + ip for ip >= 0, 1 / (1 - ip) below
        return lambda score: float(score) - 1.0 if float(score) >= 1.0 else 1.0 - 1.0 / float(score)
    # lucene's cosinesimil score is (1 + cos) / 2
    return lambda score: (2.0 * float(score) - 1.0) * query_norm


DEFAULT_INDEX_PATTERN = "hindsight-memories*"
_KEYWORDS = (
    "memory_id",
    "tenant_id",
    "user_id",
    "kind",
    "scope",
    "category",
    "emotion",
    "status",
    "session_id",
    "model",
)
_MOMENTS = ("occurred_at", "created_at", "expires_at", "event_start", "event_end")
# which piece of its memory a document is (``queries``); added to older indexes on first use
CHUNK_FIELDS: dict[str, Any] = {
    name: {"type": "integer"} for name in ("chunk", "chunks", "span_start", "span_end")
}


# BM25 without norms scores every document as of one length: no length normalisation, as
# backend_rules.BM25_B (0) for the embedded index. Norms can be turned off on an existing
# field, so an index made before takes it on first use (documents already written keep
# theirs until their segments merge)
TEXT_TOKENS: dict[str, Any] = {"type": "text", "analyzer": "whitespace", "norms": False}


def _mappings(dimension: int, engine: str, model: str | None) -> dict[str, Any]:
    properties: dict[str, Any] = {name: {"type": "keyword"} for name in _KEYWORDS}
    properties.update({name: {"type": "long"} for name in _MOMENTS})
    properties.update({name: dict(spec) for name, spec in CHUNK_FIELDS.items()})  # own copies
    properties["text"] = {"type": "text", "analyzer": "standard"}
    # the text's terms and the memory's store-time search keys (core.indexing.piece_terms):
    # keys needed no new field, so an index made before them takes them as it is
    properties["text_tokens"] = dict(TEXT_TOKENS)
    properties["vector"] = {
        "type": "knn_vector",
        "dimension": dimension,
        "method": {
            "name": "hnsw",
            "engine": engine,
            "space_type": VECTOR_SPACE,
            "parameters": {"m": 16, "ef_construction": 128},
        },
    }
    return {
        "dynamic": "strict",
        "_meta": {"hindsight": index_meta(model, dimension)},
        "_source": {"excludes": ["vector"]},  # DynamoDB holds the vectors; saves disk
        "properties": properties,
    }


def index_meta(model: str | None, dimension: int) -> dict[str, Any]:
    """The mapping's ``_meta.hindsight``: which embedding model's vectors the index holds."""
    return {"schema": SCHEMA_VERSION, "model": model, "dimension": dimension}


def _settings(shards: int | None, replicas: int | None) -> dict[str, Any]:
    """None leaves a setting out (OpenSearch Serverless manages shards and replicas)."""
    index: dict[str, Any] = {"knn": True}
    if shards is not None:
        index["number_of_shards"] = shards
    if replicas is not None:
        index["number_of_replicas"] = replicas
    return {"index": index}


def create_index_body(
    dimension: int,
    shards: int | None = 1,
    replicas: int | None = 0,
    engine: str = "lucene",
    model: str | None = None,
) -> dict[str, Any]:
    """The body of ``PUT /<index>``: settings and mappings for vectors of ``dimension``."""
    return {
        "settings": _settings(shards, replicas),
        "mappings": _mappings(dimension, engine, model),
    }


def index_template_body(
    dimension: int,
    index_patterns: Sequence[str] = (DEFAULT_INDEX_PATTERN,),
    shards: int | None = 1,
    replicas: int | None = 1,
    engine: str = "lucene",
) -> dict[str, Any]:
    """The body of ``PUT /_index_template/<name>`` (what ``infrastructure/opensearch`` holds)."""
    body = create_index_body(dimension, shards, replicas, engine)
    return {
        "index_patterns": list(index_patterns),
        "template": body,
        "_meta": {
            "description": "Hindsight memories: k-NN (HNSW, inner product) + BM25 on pre-tokenised "
            "text; dimension follows the configured embedder",
            "generated_by": "hindsight.adapters.aws.opensearch_index.index_template_body",
        },
    }
