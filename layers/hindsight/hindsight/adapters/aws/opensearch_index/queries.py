"""What goes to OpenSearch and back: documents, filter clauses, k-NN and BM25 bodies, hits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hindsight.adapters.paging import epoch_us
from hindsight.core.models import (
    HitFacts,
    IndexDocument,
    MemoryKind,
    SearchFilter,
    SearchHit,
    StoredVector,
)
from hindsight.core.text import tokenize

_MIN_CANDIDATES = 100  # HNSW candidates per shard; results are cut to k afterwards
_HIT_FIELDS = ("kind", "session_id")


def term(field: str, value: str) -> dict[str, Any]:
    return {"term": {field: value}}


def _us(moment: Any) -> int | None:
    return None if moment is None else epoch_us(moment)


# --- documents --------------------------------------------------------------------------------
def to_source(document: IndexDocument) -> dict[str, Any]:
    """The stored fields of one document (absent optional fields are left out)."""
    source: dict[str, Any] = {
        "memory_id": document.memory_id,
        "tenant_id": document.tenant_id,
        "user_id": document.user_id,
        "kind": document.kind.value,
        "scope": document.scope,
        "category": document.category,
        "emotion": document.emotion,
        "status": None if document.status is None else document.status.value,
        "session_id": document.session_id,
        "model": document.vector.model,
        "occurred_at": epoch_us(document.occurred_at),
        "created_at": epoch_us(document.created_at),
        "expires_at": _us(document.expires_at),
        "event_start": _us(document.event_start),
        "event_end": _us(document.event_end),
        "text": document.text,
        "text_tokens": " ".join(tokenize(document.text)),
        "vector": np.asarray(document.vector.values, dtype=np.float32).tolist(),
    }
    return {key: value for key, value in source.items() if value is not None}


# --- filters ----------------------------------------------------------------------------------
def filter_clauses(f: SearchFilter) -> list[dict[str, Any]]:
    """Filter clauses equal to the embedded index's: tenant and user always."""
    clauses: list[dict[str, Any]] = [term("tenant_id", f.tenant_id), term("user_id", f.user_id)]

    def among(field: str, values: frozenset[Any] | None) -> None:
        if values is not None:
            clauses.append({"terms": {field: sorted(str(getattr(v, "value", v)) for v in values)}})

    among("scope", f.scopes)
    among("kind", f.kinds)
    among("category", f.categories)
    among("emotion", f.emotions)
    if f.statuses is not None:
        # statuses narrow semantic memories only
        clauses.append(
            {
                "bool": {
                    "should": [
                        {"bool": {"must_not": [term("kind", MemoryKind.SEMANTIC.value)]}},
                        {"terms": {"status": sorted(s.value for s in f.statuses)}},
                    ],
                    "minimum_should_match": 1,
                }
            }
        )
    moments: dict[str, int] = {}
    if f.since is not None:
        moments["gte"] = epoch_us(f.since)
    if f.until is not None:
        moments["lt"] = epoch_us(f.until)
    if moments:
        clauses.append({"range": {"occurred_at": moments}})
    if f.now is not None:
        clauses.append(
            {
                "bool": {
                    "should": [
                        {"bool": {"must_not": [{"exists": {"field": "expires_at"}}]}},
                        {"range": {"expires_at": {"gt": epoch_us(f.now)}}},
                    ],
                    "minimum_should_match": 1,
                }
            }
        )
    if f.session_id is not None:
        clauses.append(term("session_id", f.session_id))
    return clauses


# --- search bodies ----------------------------------------------------------------------------
def knn_body(search_filter: SearchFilter, vector: StoredVector, k: int) -> dict[str, Any]:
    """The k-NN search for the ``k`` nearest vectors that pass the filter."""
    values = np.asarray(vector.values, dtype=np.float32)
    return {
        "size": k,
        "_source": {"includes": list(_HIT_FIELDS)},
        "query": {
            "knn": {
                "vector": {
                    "vector": values.tolist(),
                    "k": max(k, _MIN_CANDIDATES),
                    "filter": {"bool": {"filter": filter_clauses(search_filter)}},
                }
            }
        },
    }


def bm25_body(search_filter: SearchFilter, terms: list[str], k: int) -> dict[str, Any]:
    """The BM25 search on the pre-tokenised text, ties broken by memory id."""
    return {
        "size": k,
        "_source": {"includes": list(_HIT_FIELDS)},
        "track_scores": True,
        "sort": [{"_score": "desc"}, {"memory_id": "asc"}],
        "query": {
            "bool": {
                "must": [
                    {
                        "match": {
                            "text_tokens": {
                                "query": " ".join(terms),
                                "operator": "or",
                                "analyzer": "whitespace",
                            }
                        }
                    }
                ],
                "filter": filter_clauses(search_filter),
            }
        },
    }


# --- hits -------------------------------------------------------------------------------------
def _facts(source: dict[str, Any] | None) -> HitFacts | None:
    """Facts of a hit from its (partial) _source; None if a field is missing."""
    if not source or "kind" not in source:
        return None
    try:
        return HitFacts(kind=MemoryKind(source["kind"]), session_id=source.get("session_id"))
    except ValueError:
        return None


def hits_of(
    search_filter: SearchFilter, response: dict[str, Any], convert: Callable[[Any], float]
) -> list[SearchHit]:
    """The hits of a search response, scores passed through ``convert``."""
    prefix = f"{search_filter.tenant_id}:"
    hits = []
    for hit in response["hits"]["hits"]:
        doc_id: str = hit["_id"]
        memory_id = doc_id[len(prefix) :] if doc_id.startswith(prefix) else doc_id
        hits.append(SearchHit(memory_id, float(convert(hit["_score"])), _facts(hit.get("_source"))))
    return hits
