"""OpenSearchSearchIndex: the SearchIndex port on one OpenSearch index."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from hindsight.adapters.aws.opensearch_index.errors import translated_errors
from hindsight.adapters.aws.opensearch_index.mapping import (
    CHUNK_FIELDS,
    TEXT_TOKENS,
    VECTOR_SPACE,
    create_index_body,
    index_meta,
    similarity_of,
    vector_space,
)
from hindsight.adapters.aws.opensearch_index.queries import (
    MAX_CANDIDATES,
    MIN_CANDIDATES,
    bm25_body,
    document_id,
    hits_of,
    knn_body,
    metadata_fields,
    term,
    to_sources,
)
from hindsight.adapters.backend_rules import model_mismatch
from hindsight.core.errors import (
    EmbeddingModelMismatchError,
    InvalidRequestError,
    UnavailableError,
)
from hindsight.core.models import IndexDocument, SearchFilter, SearchHit, StoredVector
from hindsight.core.text import tokenize

logger = logging.getLogger(__name__)

Refresh = Literal["wait_for", "true", "false"] | bool

_BULK_CHUNK = 500
_BULK_BYTES = 8 * 1024 * 1024  # under the 10 MB request limit of small Amazon domains
_ID_PAGE = 1000  # ids per page of indexed_ids


@dataclass
class _IndexState:
    model: str | None
    dimension: int
    shards: int
    previous: dict[str, Any] | None = None  # the index served before a migration's switch
    space: str = VECTOR_SPACE  # the vector field's space type (mapping.vector_space)


class OpenSearchSearchIndex:
    """SearchIndex on one OpenSearch index; the client is injected (thread-safe)."""

    def __init__(
        self,
        client: Any,
        index_name: str,
        dimension: int,
        refresh: Refresh = False,
        shards: int | None = 1,
        replicas: int | None = 0,
        engine: str = "lucene",
    ) -> None:
        """``refresh="wait_for"`` makes every write visible before it returns (tests,
        read-your-writes); production leaves it False and relies on the refresh interval.
        ``shards``/``replicas`` apply when this class creates the index (None: the
        service's default, as OpenSearch Serverless requires)."""
        self.client = client
        self.index_name = index_name
        self.dimension = dimension
        self.refresh = refresh
        self._shards = shards
        self._replicas = replicas
        self._engine = engine
        self._state: _IndexState | None = None

    # --- plumbing ------------------------------------------------------------------------
    def _translate(self, action: str) -> AbstractContextManager[None]:
        return translated_errors(self.index_name, action)

    def _refresh_param(self) -> Any:
        return self.refresh

    def _refresh_flag(self) -> bool:
        """delete_by_query knows no ``wait_for``; any refresh setting means refresh."""
        return self.refresh not in (False, "false")

    # --- index lifecycle -------------------------------------------------------------------
    def ensure_index(self) -> bool:
        """Create the index when missing; True if it was created."""
        with self._translate("index creation"):
            if self.client.indices.exists(index=self.index_name):
                self._state = None
                return False
            self._create(self.dimension, None)
            return True

    def _create(self, dimension: int, model: str | None) -> None:
        from opensearchpy import exceptions as os_errors

        body = create_index_body(dimension, self._shards, self._replicas, self._engine, model)
        try:
            self.client.indices.create(index=self.index_name, body=body)
        except os_errors.RequestError as exc:
            if exc.error != "resource_already_exists_exception":
                raise
        self._state = _IndexState(model, dimension, self._shards or 1)
        logger.info("opensearch index created index=%s dimension=%d", self.index_name, dimension)

    def drop_index(self) -> None:
        """Delete the whole index (tests, and rebuilding with another dimension)."""
        with self._translate("index deletion"):
            self.client.indices.delete(index=self.index_name, ignore_unavailable=True)
        self._state = None

    def _read_state(self) -> _IndexState:
        response = self.client.indices.get(index=self.index_name)
        body = next(iter(response.values()))
        mappings = body.get("mappings", {})
        meta = mappings.get("_meta", {}).get("hindsight", {})
        dimension = int(mappings["properties"]["vector"]["dimension"])
        shards = int(body["settings"]["index"].get("number_of_shards", 1))
        if not set(CHUNK_FIELDS) <= set(mappings["properties"]):
            # made before memories had chunks: add the fields (mappings only ever grow)
            self.client.indices.put_mapping(
                index=self.index_name, body={"properties": CHUNK_FIELDS}
            )
            logger.info("opensearch index mapping extended index=%s", self.index_name)
        if mappings["properties"].get("text_tokens", {}).get("norms", True):
            # made before BM25 dropped length normalisation (backend_rules.BM25_B)
            self.client.indices.put_mapping(
                index=self.index_name, body={"properties": {"text_tokens": dict(TEXT_TOKENS)}}
            )
            logger.info("opensearch index norms turned off index=%s", self.index_name)
        self._state = _IndexState(
            meta.get("model"), dimension, shards, meta.get("previous"), vector_space(mappings)
        )
        return self._state

    def _current(self) -> _IndexState:
        return self._state or self._read_state()

    def _is_empty(self) -> bool:
        self.client.indices.refresh(index=self.index_name)
        return int(self.client.count(index=self.index_name)["count"]) == 0

    def _claim_model(self, vector: StoredVector) -> None:
        """Make the index's model this vector's, or raise if it holds another model's."""
        state = self._current()
        wanted = (vector.model, vector.dim)
        if (state.model, state.dimension) == wanted:
            return
        state = self._read_state()  # another process may have claimed it meanwhile
        if (state.model, state.dimension) == wanted:
            return
        if state.model is not None and not self._is_empty():
            raise EmbeddingModelMismatchError(model_mismatch(state.model, state.dimension, vector))
        if state.dimension != vector.dim:
            # empty, but a knn_vector's dimension is fixed: make the index anew
            self.client.indices.delete(index=self.index_name, ignore_unavailable=True)
            self._create(vector.dim, vector.model)
            return
        self.client.indices.put_mapping(
            index=self.index_name,
            body={"_meta": {"hindsight": index_meta(vector.model, vector.dim)}},
        )
        self._state = _IndexState(vector.model, vector.dim, state.shards, space=state.space)

    # --- writes --------------------------------------------------------------------------
    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if not documents:
            return
        documents = self._refresh_foreign(documents)
        if not documents:
            return
        first = documents[0].vector
        for document in documents:
            vector = document.vector
            if (vector.model, vector.dim) != (first.model, first.dim):
                state = self._state
                index_model = (state.model, state.dimension) if state and state.model else None
                raise EmbeddingModelMismatchError(
                    model_mismatch(*(index_model or (first.model, first.dim)), vector)
                )
        from opensearchpy import helpers

        latest = list({(d.tenant_id, d.memory_id): d for d in documents}.values())
        with self._translate("indexing"):
            self._claim_model(first)
            before = self._pieces_before(latest)
            actions: list[dict[str, Any]] = []
            for document in latest:
                actions += self._actions(document, before.get(document.memory_id, 0))
            helpers.bulk(
                self.client,
                actions,
                chunk_size=_BULK_CHUNK,
                max_chunk_bytes=_BULK_BYTES,
                refresh=self._refresh_param(),
                max_retries=2,
                ignore_status=(404,),  # a stale piece already gone
            )
            if self._current().shards > 1:
                self._drop_copies_under_other_users(latest)

    def _refresh_foreign(self, documents: Sequence[IndexDocument]) -> list[IndexDocument]:
        """During an embedding-model migration (``core/usecases/reembed.py``) the stream
        indexer and the writers re-index records that may already hold the next model's
        vectors: a memory this index holds keeps its served text and vectors and takes the
        rest of the change (a partial update of every piece). The documents left are
        returned (one of another model that this index lacks is still refused)."""
        with self._translate("indexing"):
            state = self._current()
            served = (state.model, state.dimension)
            if state.model is None or all(
                (d.vector.model, d.vector.dim) == served for d in documents
            ):
                return list(documents)
            state = self._read_state()  # the alias may have moved to another index meanwhile
        served = (state.model, state.dimension)
        foreign = [d for d in documents if (d.vector.model, d.vector.dim) != served]
        if state.model is None or not foreign:
            return list(documents)
        from opensearchpy import helpers

        with self._translate("indexing"):
            held = self._pieces_before(foreign)
            actions = [
                {
                    "_op_type": "update",
                    "_index": self.index_name,
                    "_id": document_id(d.tenant_id, d.memory_id, number),
                    "_routing": f"{d.tenant_id}:{d.user_id}",
                    "doc": metadata_fields(d),
                }
                for d in foreign
                for number in range(held.get(d.memory_id, 0))
            ]
            if actions:
                helpers.bulk(self.client, actions, refresh=self._refresh_param(), max_retries=2)
        refreshed = {id(d) for d in foreign if d.memory_id in held}
        return [d for d in documents if id(d) not in refreshed]

    def _pieces_before(self, documents: Sequence[IndexDocument]) -> dict[str, int]:
        """How many documents (pieces) each memory has in the index now, read from its
        first piece in real time (no refresh needed): 0 for a memory not indexed yet."""
        docs = [
            {
                "_id": document_id(d.tenant_id, d.memory_id),
                "routing": f"{d.tenant_id}:{d.user_id}",
                "_source": ["memory_id", "chunks"],
            }
            for d in documents
        ]
        response = self.client.mget(index=self.index_name, body={"docs": docs})
        counts: dict[str, int] = {}
        for found in response.get("docs", []):
            source = found.get("_source") or {}
            if found.get("found") and "memory_id" in source:
                counts[str(source["memory_id"])] = int(source.get("chunks", 1))
        return counts

    def _actions(self, document: IndexDocument, before: int) -> list[dict[str, Any]]:
        """Index every piece of the memory, and delete the pieces it had beyond them."""
        routing = f"{document.tenant_id}:{document.user_id}"
        sources = to_sources(document)
        actions: list[dict[str, Any]] = [
            {
                "_op_type": "index",
                "_index": self.index_name,
                "_id": document_id(document.tenant_id, document.memory_id, number),
                "_routing": routing,
                "_source": source,
            }
            for number, source in enumerate(sources)
        ]
        actions += [
            {
                "_op_type": "delete",
                "_index": self.index_name,
                "_id": document_id(document.tenant_id, document.memory_id, number),
                "_routing": routing,
            }
            for number in range(len(sources), before)
        ]
        return actions

    def _drop_copies_under_other_users(self, documents: Sequence[IndexDocument]) -> None:
        """With several shards, a memory that moved to another user was indexed under a new
        routing; its old pieces sit on another shard and must go."""
        by_owner: dict[tuple[str, str], list[str]] = {}
        for document in documents:
            owner = (document.tenant_id, document.user_id)
            by_owner.setdefault(owner, []).append(document.memory_id)
        should = [
            {
                "bool": {
                    "filter": [term("tenant_id", tenant_id), {"terms": {"memory_id": ids}}],
                    "must_not": [term("user_id", user_id)],
                }
            }
            for (tenant_id, user_id), ids in by_owner.items()
        ]
        self.client.delete_by_query(
            index=self.index_name,
            body={"query": {"bool": {"should": should, "minimum_should_match": 1}}},
            refresh=self._refresh_flag(),
            conflicts="proceed",
        )

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        # every piece of each memory: by memory id, not document id
        query = {
            "bool": {
                "filter": [
                    {"terms": {"memory_id": list(dict.fromkeys(memory_ids))}},
                    term("tenant_id", tenant_id),
                ]
            }
        }
        with self._translate("deletion"):
            # by query, not by id: the routing (user) of each id is not known here. A query
            # sees only refreshed documents, so refresh first: a document indexed a moment
            # ago (an INSERT and a REMOVE in one stream batch) must go too. Deletes are rare.
            self.client.indices.refresh(index=self.index_name)
            self.client.delete_by_query(
                index=self.index_name,
                body={"query": query},
                refresh=self._refresh_flag(),
                conflicts="proceed",
            )

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        query = {"bool": {"filter": [term("tenant_id", tenant_id), term("user_id", user_id)]}}
        with self._translate("user deletion"):
            self.client.indices.refresh(index=self.index_name)
            self.client.delete_by_query(
                index=self.index_name,
                body={"query": query},
                routing=f"{tenant_id}:{user_id}",
                refresh=self._refresh_flag(),
                conflicts="proceed",
            )

    # --- reads ---------------------------------------------------------------------------
    def vector_search(
        self, search_filter: SearchFilter, vector: StoredVector, k: int
    ) -> list[SearchHit]:
        if k <= 0:
            return []
        from opensearchpy import exceptions as os_errors

        with self._translate("vector search"):
            state = self._current()
            if (state.model, state.dimension) != (vector.model, vector.dim):
                state = self._read_state()
                if state.model is None or self._is_empty():
                    return []
                if (state.model, state.dimension) != (vector.model, vector.dim):
                    return self._search_previous(search_filter, vector, k, state)
            try:
                response = self._nearest(search_filter, vector, k)
            except os_errors.RequestError:
                # the alias may have just moved to an index of another model (a migration)
                state = self._read_state()
                if (state.model, state.dimension) == (vector.model, vector.dim):
                    raise
                return self._search_previous(search_filter, vector, k, state)
        space = self._current().space
        norm = 1.0 if space == VECTOR_SPACE else float(np.linalg.norm(vector.values))
        return hits_of(search_filter, response, similarity_of(space, norm))

    def _search_previous(
        self, search_filter: SearchFilter, vector: StoredVector, k: int, state: _IndexState
    ) -> list[SearchHit]:
        """A query embedded with the model served before the last switch (a reader that has
        not noticed it yet): answered from the previous index while it is kept
        (``migration.py``), else EmbeddingModelMismatchError."""
        previous = state.previous or {}
        if (previous.get("model"), previous.get("dimension")) != (vector.model, vector.dim):
            raise EmbeddingModelMismatchError(
                model_mismatch(state.model or "", state.dimension, vector)
            )
        older = OpenSearchSearchIndex(self.client, str(previous["index"]), vector.dim)
        with self._translate("vector search"):
            space = older._read_state().space  # made before the switch: maybe cosinesimil
        older._state = _IndexState(vector.model, vector.dim, state.shards, space=space)
        try:
            return older.vector_search(search_filter, vector, k)
        except UnavailableError as exc:
            raise EmbeddingModelMismatchError(
                model_mismatch(state.model or "", state.dimension, vector)
            ) from exc

    def _nearest(self, search_filter: SearchFilter, vector: StoredVector, k: int) -> dict[str, Any]:
        """The k-NN search, widened while the nearest pieces belong to fewer than ``k``
        memories (a long memory has many pieces near a query) and more pieces are left."""
        candidates = max(k, MIN_CANDIDATES)
        while True:
            response = self._search(search_filter, knn_body(search_filter, vector, k, candidates))
            hits = response["hits"]
            matched = int(hits.get("total", {}).get("value", 0))
            if len(hits["hits"]) >= k or matched < candidates or candidates >= MAX_CANDIDATES:
                return response
            candidates = min(MAX_CANDIDATES, candidates * 4)

    def keyword_search(self, search_filter: SearchFilter, text: str, k: int) -> list[SearchHit]:
        terms = list(dict.fromkeys(tokenize(text)))
        if not terms or k <= 0:
            return []
        body = bm25_body(search_filter, terms, k)
        with self._translate("keyword search"):
            response = self._search(search_filter, body)
        return hits_of(search_filter, response, float)

    def _search(self, search_filter: SearchFilter, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.client.search(
            index=self.index_name,
            body=body,
            routing=f"{search_filter.tenant_id}:{search_filter.user_id}",
        )
        return result

    def count(self, tenant_id: str | None = None) -> int:
        """Memories, not documents: each memory's first piece."""
        query: dict[str, Any] = {"bool": {"must_not": [{"range": {"chunk": {"gt": 0}}}]}}
        if tenant_id is not None:
            query["bool"]["filter"] = [term("tenant_id", tenant_id)]
        body = {"query": query}
        with self._translate("count"):
            response = self.client.count(index=self.index_name, body=body)
        return int(response["count"])

    def indexed_ids(
        self, tenant_id: str | None = None, user_id: str | None = None
    ) -> set[tuple[str, str]]:
        """Every memory's first piece, paged in (tenant, memory) order with
        ``search_after``; refreshed first, so a write acknowledged a moment ago is counted."""
        if user_id is not None and tenant_id is None:
            raise InvalidRequestError("indexed_ids: give the tenant of the user too")
        clauses = [] if tenant_id is None else [term("tenant_id", tenant_id)]
        if user_id is not None:
            clauses.append(term("user_id", user_id))
        body: dict[str, Any] = {
            "size": _ID_PAGE,
            "_source": ["tenant_id", "memory_id"],
            "sort": [{"tenant_id": "asc"}, {"memory_id": "asc"}],
            "query": {"bool": {"filter": clauses, "must_not": [{"range": {"chunk": {"gt": 0}}}]}},
        }
        routing = None if user_id is None else f"{tenant_id}:{user_id}"
        found: set[tuple[str, str]] = set()
        with self._translate("id listing"):
            self.client.indices.refresh(index=self.index_name)
            while True:
                response = self.client.search(index=self.index_name, body=body, routing=routing)
                hits = response["hits"]["hits"]
                found.update((h["_source"]["tenant_id"], h["_source"]["memory_id"]) for h in hits)
                if len(hits) < _ID_PAGE:
                    return found
                body["search_after"] = hits[-1]["sort"]
