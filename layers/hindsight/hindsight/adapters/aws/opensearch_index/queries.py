"""What goes to OpenSearch and back: documents, filter clauses, k-NN and BM25 bodies, hits.

A memory is one document per searchable piece (``IndexDocument.pieces()``): a memory short
enough to embed whole is one document, a long one a document per chunk. Every piece holds the
memory's filter fields plus ``chunk`` (its number), ``chunks`` (how many the memory has) and,
for chunks, ``span_start``/``span_end`` (its characters of the content). Both searches
collapse on ``memory_id``: a memory comes back once, scored by its best piece.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hindsight.adapters.paging import epoch_us
from hindsight.core.indexing import piece_terms
from hindsight.core.models import (
    HitFacts,
    IndexDocument,
    MemoryKind,
    SearchFilter,
    SearchHit,
    StoredVector,
)

MIN_CANDIDATES = 100  # HNSW candidates per shard; results are cut to k afterwards
MAX_CANDIDATES = 10_000  # the most nearest neighbours one k-NN query may ask for
_HIT_FIELDS = ("memory_id", "kind", "session_id", "chunk", "span_start", "span_end")
_COLLAPSE = {"field": "memory_id"}  # one hit per memory: its best piece


def term(field: str, value: str) -> dict[str, Any]:
    return {"term": {field: value}}


def _us(moment: Any) -> int | None:
    return None if moment is None else epoch_us(moment)


# --- documents --------------------------------------------------------------------------------
def document_id(tenant_id: str, memory_id: str, chunk: int = 0) -> str:
    """``{tenant}:{memory}`` for a memory's first (or only) piece, ``…#{n}`` for chunk n."""
    base = f"{tenant_id}:{memory_id}"
    return base if chunk == 0 else f"{base}#{chunk}"


def metadata_fields(document: IndexDocument) -> dict[str, Any]:
    """What a partial update changes of every piece: the filter fields (cleared ones as
    null), never the text, the vector or its model."""
    fields = {
        "user_id": document.user_id,
        "kind": document.kind.value,
        "scope": document.scope,
        "category": document.category,
        "emotion": document.emotion,
        "status": None if document.status is None else document.status.value,
        "session_id": document.session_id,
        "occurred_at": epoch_us(document.occurred_at),
        "created_at": epoch_us(document.created_at),
        "expires_at": _us(document.expires_at),
        "event_start": _us(document.event_start),
        "event_end": _us(document.event_end),
    }
    return fields


def _memory_fields(document: IndexDocument) -> dict[str, Any]:
    """The fields every piece of a memory carries (absent optional fields left out)."""
    fields: dict[str, Any] = {
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
    }
    return {key: value for key, value in fields.items() if value is not None}


def to_sources(document: IndexDocument) -> list[dict[str, Any]]:
    """The stored fields of each of a memory's documents, piece by piece."""
    common = _memory_fields(document)
    pieces = document.pieces()
    sources = []
    for (number, text, values, span), terms in zip(pieces, piece_terms(document), strict=True):
        source = {
            **common,
            "chunk": number,
            "chunks": len(pieces),
            "text": text,
            # the text's terms and the store-time search keys' (``core.indexing.piece_terms``)
            "text_tokens": " ".join(terms),
            "vector": np.asarray(values, dtype=np.float32).tolist(),
        }
        if span is not None:
            source["span_start"], source["span_end"] = span
        sources.append(source)
    return sources


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
def knn_body(
    search_filter: SearchFilter, vector: StoredVector, k: int, candidates: int
) -> dict[str, Any]:
    """The ``k`` memories whose pieces are nearest, among the ``candidates`` nearest pieces
    that pass the filter (several pieces of one memory collapse into one hit)."""
    values = np.asarray(vector.values, dtype=np.float32)
    return {
        "size": k,
        "_source": {"includes": list(_HIT_FIELDS)},
        "query": {
            "knn": {
                "vector": {
                    "vector": values.tolist(),
                    "k": candidates,
                    "filter": {"bool": {"filter": filter_clauses(search_filter)}},
                }
            }
        },
        "collapse": _COLLAPSE,
    }


def bm25_body(search_filter: SearchFilter, terms: list[str], k: int) -> dict[str, Any]:
    """The BM25 search on the pre-tokenised text of every piece, one hit per memory (its
    best piece), ties broken by memory id."""
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
        "collapse": _COLLAPSE,
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
        source = hit.get("_source") or {}
        memory_id = source.get("memory_id")
        if memory_id is None:  # a document written before pieces: its id names the memory
            doc_id: str = hit["_id"]
            memory_id = doc_id[len(prefix) :] if doc_id.startswith(prefix) else doc_id
        chunk = span = None
        if "span_start" in source:
            chunk = int(source.get("chunk", 0))
            span = (int(source["span_start"]), int(source["span_end"]))
        score = float(convert(hit["_score"]))
        hits.append(SearchHit(str(memory_id), score, _facts(source), chunk=chunk, span=span))
    return hits
