"""SearchIndex on OpenSearch: k-NN (HNSW, cosine) with efficient filtering, and BM25.

One index holds every tenant. Documents:

- one document per searchable piece of a memory: a memory short enough to embed whole is
  one document, a long one (``core/chunking.py``) one per chunk. ``_id``
  ``{tenant_id}:{memory_id}`` for the first piece (so an index of short memories is what it
  always was) and ``{tenant_id}:{memory_id}#{n}`` for chunk n, all routed by
  ``{tenant_id}:{user_id}`` so that one user's documents share a shard and searches touch
  one shard only;
- ``chunk`` (the piece's number), ``chunks`` (how many the memory has), ``span_start`` and
  ``span_end`` (the chunk's characters of the content; absent for a memory searched whole);
- keyword fields ``memory_id tenant_id user_id kind scope category emotion status session_id
  model`` (the embedding model of the document's vector);
- ``occurred_at created_at expires_at event_start event_end`` as ``long`` epoch microseconds,
  exactly as the embedded index compares them (``date_nanos`` cannot hold dates before 1970);
- ``text`` (standard analyzer) and ``text_tokens``: ``core.text.tokenize`` output joined by
  spaces and indexed with the whitespace analyzer, so Chinese (jieba) and English (light
  stemming) are segmented exactly like the embedded index, without the ICU/smartcn plugins;
- ``vector``: ``knn_vector`` of the configured dimension, HNSW on the ``lucene`` engine (pure
  Java, efficient filtering, works on Amazon OpenSearch Service and Serverless too) with
  ``innerproduct``: a session turn's vector mixes two unit vectors and is scored by its inner
  product (``core/embedding.py``); an index made before (``cosinesimil``, schema 2) is read
  with its own score formula (``mapping.similarity_of``), right for the unit vectors it holds.
  For tens of millions of vectors the ``faiss`` engine is the option
  (``create_index_body(engine="faiss")``); its filtering is efficient from 2.9 on.

Chunks as documents of their own, not nested objects. Both searches ``collapse`` on
``memory_id``, so a memory comes back once, scored by its best piece (max: the excerpt an
agent needs is in one place; a sum would favour length), with that piece's number and span.
Why not ``nested``: a 100,000-character memory is hundreds of chunks and the content limit
goes to 5,000,000 characters; as one nested document it would be one request body of
megabytes of vector JSON (Amazon domains cap requests at 10 MB on small instances), hit the
10,000 nested-objects limit, and be rewritten whole on every status change. Chunk documents
are bulk-written in bounded requests and keep ids, routing, ``delete_user`` and the index
template's shape. The price, paid here: (1) k-NN returns the nearest *pieces*, so a memory
with many near pieces could crowd others out of the ``k`` hits; the search widens its
candidates (x4, up to 10,000) while fewer than ``k`` memories came back and more pieces
passed the filter; (2) an upsert must remove the pieces a memory no longer has: the first
piece records ``chunks``, read back in real time (``mget``, no refresh) before the bulk
that indexes the new pieces and deletes the surplus; (3) ``delete`` goes by ``memory_id``
(every piece) and ``count`` counts first pieces. BM25 statistics are over pieces, as in the
embedded index. Indexes made before chunks get the four integer fields added on first use.

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
from hindsight.adapters.aws.opensearch_index.queries import (
    document_id,
    filter_clauses,
    to_sources,
)

__all__ = [
    "DEFAULT_INDEX_PATTERN",
    "SCHEMA_VERSION",
    "AuthMode",
    "OpenSearchSearchIndex",
    "Refresh",
    "build_opensearch_client",
    "create_index_body",
    "document_id",
    "filter_clauses",
    "index_template_body",
    "to_sources",
]
