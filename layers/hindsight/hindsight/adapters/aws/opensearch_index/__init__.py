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

The modules: ``mapping`` (index settings, mappings and template), ``client`` (building a
client for a node, a domain or a collection), ``queries`` (documents, filters, k-NN and BM25
request bodies, hits), ``errors`` (opensearch-py errors as domain errors) and ``index`` (the
adapter).
"""

from hindsight.adapters.aws.opensearch_index.client import AuthMode, build_opensearch_client
from hindsight.adapters.aws.opensearch_index.index import OpenSearchSearchIndex, Refresh
from hindsight.adapters.aws.opensearch_index.mapping import (
    DEFAULT_INDEX_PATTERN,
    SCHEMA_VERSION,
    create_index_body,
    index_template_body,
)
from hindsight.adapters.aws.opensearch_index.queries import filter_clauses, to_source

__all__ = [
    "DEFAULT_INDEX_PATTERN",
    "SCHEMA_VERSION",
    "AuthMode",
    "OpenSearchSearchIndex",
    "Refresh",
    "build_opensearch_client",
    "create_index_body",
    "filter_clauses",
    "index_template_body",
    "to_source",
]
