"""OpenSearchSearchIndex: the SearchIndex port on one OpenSearch index."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

from hindsight.adapters.aws.opensearch_index.errors import translated_errors
from hindsight.adapters.aws.opensearch_index.mapping import create_index_body, index_meta
from hindsight.adapters.aws.opensearch_index.queries import (
    bm25_body,
    hits_of,
    knn_body,
    term,
    to_source,
)
from hindsight.adapters.index_rules import model_mismatch
from hindsight.core.errors import EmbeddingModelMismatchError
from hindsight.core.models import IndexDocument, SearchFilter, SearchHit, StoredVector
from hindsight.core.text import tokenize

logger = logging.getLogger(__name__)

Refresh = Literal["wait_for", "true", "false"] | bool

_BULK_CHUNK = 500


@dataclass
class _IndexState:
    model: str | None
    dimension: int
    shards: int


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
        self._state = _IndexState(meta.get("model"), dimension, shards)
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
        self._state = _IndexState(vector.model, vector.dim, state.shards)

    # --- writes --------------------------------------------------------------------------
    def upsert(self, documents: Sequence[IndexDocument]) -> None:
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

        with self._translate("indexing"):
            self._claim_model(first)
            actions = [self._action(document) for document in documents]
            helpers.bulk(
                self.client,
                actions,
                chunk_size=_BULK_CHUNK,
                refresh=self._refresh_param(),
                max_retries=2,
            )
            if self._current().shards > 1:
                self._drop_copies_under_other_users(documents)

    def _action(self, document: IndexDocument) -> dict[str, Any]:
        return {
            "_op_type": "index",
            "_index": self.index_name,
            "_id": f"{document.tenant_id}:{document.memory_id}",
            "_routing": f"{document.tenant_id}:{document.user_id}",
            "_source": to_source(document),
        }

    def _drop_copies_under_other_users(self, documents: Sequence[IndexDocument]) -> None:
        """With several shards, a memory that moved to another user was indexed under a new
        routing; its old copy sits on another shard and must go."""
        by_owner: dict[tuple[str, str], list[str]] = {}
        for document in documents:
            owner = (document.tenant_id, document.user_id)
            by_owner.setdefault(owner, []).append(f"{document.tenant_id}:{document.memory_id}")
        should = [
            {
                "bool": {
                    "filter": [{"ids": {"values": ids}}],
                    "must_not": [{"term": {"user_id": user_id}}],
                }
            }
            for (_, user_id), ids in by_owner.items()
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
        ids = [f"{tenant_id}:{memory_id}" for memory_id in memory_ids]
        query = {"bool": {"filter": [{"ids": {"values": ids}}, term("tenant_id", tenant_id)]}}
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
        with self._translate("vector search"):
            state = self._current()
            if (state.model, state.dimension) != (vector.model, vector.dim):
                state = self._read_state()
                if state.model is None or self._is_empty():
                    return []
                if (state.model, state.dimension) != (vector.model, vector.dim):
                    raise EmbeddingModelMismatchError(
                        model_mismatch(state.model, state.dimension, vector)
                    )
            body = knn_body(search_filter, vector, k)
            response = self._search(search_filter, body)
        # lucene's cosinesimil score is (1 + cos) / 2; the port speaks cosine
        return hits_of(search_filter, response, lambda score: 2.0 * score - 1.0)

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
        body = None if tenant_id is None else {"query": term("tenant_id", tenant_id)}
        with self._translate("count"):
            response = self.client.count(index=self.index_name, body=body)
        return int(response["count"])
