"""SearchIndex on OpenSearch: k-NN (HNSW, cosine) with efficient filtering, and BM25.

One index holds every tenant. Documents:

- ``_id`` ``{tenant_id}:{memory_id}``, routed by ``{tenant_id}:{user_id}`` so that one user's
  documents share a shard and searches touch one shard only;
- keyword fields ``memory_id tenant_id user_id kind scope category emotion status session_id
  model`` (the embedding model of the document's vector);
- ``occurred_at created_at expires_at event_start event_end`` as ``long`` epoch microseconds,
  exactly as the embedded index compares them (``date_nanos`` cannot hold dates before 1970);
- ``text`` (standard analyzer) and ``text_tokens``: ``core.text.tokenize`` output joined by
  spaces and indexed with the whitespace analyzer, so Chinese (jieba) and English (light
  stemming) are segmented exactly like the embedded index, without the ICU/smartcn plugins;
- ``vector``: ``knn_vector`` of the configured dimension, HNSW on the ``lucene`` engine with
  ``cosinesimil`` (pure Java, efficient filtering, works on Amazon OpenSearch Service and
  Serverless too). For tens of millions of vectors the ``faiss`` engine is the option
  (``create_index_body(engine="faiss")``); its filtering is efficient from 2.9 on.

The index mapping's ``_meta.hindsight`` records the embedding model and dimension; vectors of
another model raise EmbeddingModelMismatchError until the index is empty again.
``infrastructure/opensearch/index-template.json`` is ``index_template_body(1024)``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from hindsight.adapters.index_rules import model_mismatch
from hindsight.adapters.paging import epoch_us
from hindsight.core.errors import EmbeddingModelMismatchError, UnavailableError
from hindsight.core.models import (
    HitFacts,
    IndexDocument,
    MemoryKind,
    SearchFilter,
    SearchHit,
    StoredVector,
)
from hindsight.core.text import tokenize

logger = logging.getLogger(__name__)

AuthMode = Literal["none", "basic", "sigv4-es", "sigv4-aoss"]
Refresh = Literal["wait_for", "true", "false"] | bool

SCHEMA_VERSION = 1
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
_BULK_CHUNK = 500
_MIN_CANDIDATES = 100  # HNSW candidates per shard; results are cut to k afterwards


# --- index body ---------------------------------------------------------------------------
def _mappings(dimension: int, engine: str, model: str | None) -> dict[str, Any]:
    properties: dict[str, Any] = {name: {"type": "keyword"} for name in _KEYWORDS}
    properties.update({name: {"type": "long"} for name in _MOMENTS})
    properties["text"] = {"type": "text", "analyzer": "standard"}
    properties["text_tokens"] = {"type": "text", "analyzer": "whitespace"}
    properties["vector"] = {
        "type": "knn_vector",
        "dimension": dimension,
        "method": {
            "name": "hnsw",
            "engine": engine,
            "space_type": "cosinesimil",
            "parameters": {"m": 16, "ef_construction": 128},
        },
    }
    return {
        "dynamic": "strict",
        "_meta": {"hindsight": _meta(model, dimension)},
        "_source": {"excludes": ["vector"]},  # DynamoDB holds the vectors; saves disk
        "properties": properties,
    }


def _meta(model: str | None, dimension: int) -> dict[str, Any]:
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
            "description": "Hindsight memories: k-NN (HNSW, cosine) + BM25 on pre-tokenised "
            "text; dimension follows the configured embedder",
            "generated_by": "hindsight.adapters.aws.opensearch_index.index_template_body",
        },
    }


# --- client -------------------------------------------------------------------------------
def build_opensearch_client(
    url: str,
    auth_mode: AuthMode = "none",
    region: str | None = None,
    username: str | None = None,
    password: str | None = None,
    timeout: float = 10.0,
    http_compress: bool | None = None,
) -> Any:
    """An ``opensearchpy.OpenSearch`` client for a local node, a domain or a collection.

    ``sigv4-es`` signs for Amazon OpenSearch Service, ``sigv4-aoss`` for OpenSearch
    Serverless, with credentials from boto3's standard chain. Request bodies are gzipped
    except on loopback, where compressing costs more than it saves (bulk of vectors: 2x).
    """
    from urllib.parse import urlparse

    from opensearchpy import OpenSearch

    if http_compress is None:
        http_compress = urlparse(url).hostname not in ("127.0.0.1", "localhost", "::1")
    options: dict[str, Any] = {
        "hosts": [url],
        "timeout": timeout,
        "max_retries": 2,
        "retry_on_timeout": True,
        "http_compress": http_compress,
    }
    if auth_mode == "basic":
        if not username or password is None:
            raise ValueError("basic auth needs a username and a password")
        options["http_auth"] = (username, password)
    elif auth_mode in ("sigv4-es", "sigv4-aoss"):
        import boto3
        from opensearchpy import RequestsAWSV4SignerAuth, RequestsHttpConnection

        session = boto3.Session()
        credentials = session.get_credentials()
        region = region or session.region_name
        if credentials is None or not region:
            raise UnavailableError(
                "no AWS credentials or region for signing OpenSearch requests; configure the "
                "standard AWS chain (AWS_REGION, AWS_PROFILE or a role)"
            )
        service = "es" if auth_mode == "sigv4-es" else "aoss"
        options["http_auth"] = RequestsAWSV4SignerAuth(credentials, region, service)
        options["connection_class"] = RequestsHttpConnection
    elif auth_mode != "none":
        raise ValueError(f"unknown OpenSearch auth mode {auth_mode!r}")
    return OpenSearch(**options)


# --- adapter ------------------------------------------------------------------------------
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
    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        from opensearchpy import exceptions as os_errors
        from opensearchpy.helpers import BulkIndexError

        try:
            yield
        except (EmbeddingModelMismatchError, UnavailableError):
            raise
        except os_errors.ConnectionError as exc:
            raise UnavailableError(
                f"the search index is unavailable: cannot reach OpenSearch for {action} "
                f"({exc.__class__.__name__}); retry later"
            ) from exc
        except (os_errors.AuthenticationException, os_errors.AuthorizationException) as exc:
            raise UnavailableError(
                f"OpenSearch refused the credentials for {action} (HTTP {exc.status_code}); "
                "check HINDSIGHT_OPENSEARCH_URL, the auth mode and the role's access policy"
            ) from exc
        except os_errors.NotFoundError as exc:
            raise UnavailableError(
                f"the search index {self.index_name!r} does not exist; create it "
                "(`hindsight serve` does on start) or run `hindsight reindex`"
            ) from exc
        except BulkIndexError as exc:
            first = exc.errors[0] if exc.errors else {}
            raise UnavailableError(
                f"OpenSearch rejected {len(exc.errors)} document(s) during {action}: {first}"
            ) from exc
        except os_errors.TransportError as exc:
            raise UnavailableError(
                f"the search index failed during {action} (HTTP {exc.status_code}: "
                f"{exc.error}); retry later"
            ) from exc

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
            index=self.index_name, body={"_meta": {"hindsight": _meta(vector.model, vector.dim)}}
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
        query = {"bool": {"filter": [{"ids": {"values": ids}}, _term("tenant_id", tenant_id)]}}
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
        query = {"bool": {"filter": [_term("tenant_id", tenant_id), _term("user_id", user_id)]}}
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
            values = np.asarray(vector.values, dtype=np.float32)
            body = {
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
            response = self._search(search_filter, body)
        # lucene's cosinesimil score is (1 + cos) / 2; the port speaks cosine
        return self._hits(search_filter, response, lambda score: 2.0 * score - 1.0)

    def keyword_search(self, search_filter: SearchFilter, text: str, k: int) -> list[SearchHit]:
        terms = list(dict.fromkeys(tokenize(text)))
        if not terms or k <= 0:
            return []
        body = {
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
        with self._translate("keyword search"):
            response = self._search(search_filter, body)
        return self._hits(search_filter, response, float)

    def _search(self, search_filter: SearchFilter, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.client.search(
            index=self.index_name,
            body=body,
            routing=f"{search_filter.tenant_id}:{search_filter.user_id}",
        )
        return result

    @staticmethod
    def _hits(
        search_filter: SearchFilter, response: dict[str, Any], convert: Any
    ) -> list[SearchHit]:
        prefix = f"{search_filter.tenant_id}:"
        hits = []
        for hit in response["hits"]["hits"]:
            doc_id: str = hit["_id"]
            memory_id = doc_id[len(prefix) :] if doc_id.startswith(prefix) else doc_id
            hits.append(
                SearchHit(memory_id, float(convert(hit["_score"])), _facts(hit.get("_source")))
            )
        return hits

    def count(self, tenant_id: str | None = None) -> int:
        body = None if tenant_id is None else {"query": _term("tenant_id", tenant_id)}
        with self._translate("count"):
            response = self.client.count(index=self.index_name, body=body)
        return int(response["count"])


# --- documents and filters ------------------------------------------------------------------
def _term(field: str, value: str) -> dict[str, Any]:
    return {"term": {field: value}}


def _us(moment: Any) -> int | None:
    return None if moment is None else epoch_us(moment)


_HIT_FIELDS = ("kind", "session_id")


def _facts(source: dict[str, Any] | None) -> HitFacts | None:
    """Facts of a hit from its (partial) _source; None if a field is missing."""
    if not source or "kind" not in source:
        return None
    try:
        return HitFacts(kind=MemoryKind(source["kind"]), session_id=source.get("session_id"))
    except ValueError:
        return None


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


def filter_clauses(f: SearchFilter) -> list[dict[str, Any]]:
    """Filter clauses equal to the embedded index's: tenant and user always."""
    clauses: list[dict[str, Any]] = [_term("tenant_id", f.tenant_id), _term("user_id", f.user_id)]

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
                        {"bool": {"must_not": [_term("kind", MemoryKind.SEMANTIC.value)]}},
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
        clauses.append(_term("session_id", f.session_id))
    return clauses
