"""RecordStore on one DynamoDB table (single-table design): the AWS backend's source of truth.

Table design (string keys ``pk``/``sk``; ``#`` and ``%`` inside ids are escaped as ``%23``
and ``%25`` so ids can never forge another key):

=============  ==============================  ===============  =============================
item           pk                              sk               what else
=============  ==============================  ===============  =============================
memory         ``T#{tenant}#M#{memory_id}``    ``M``            filter attributes, ``body``
                                                                (the memory as pydantic JSON,
                                                                or ``s3://…`` of it), ``vec``
                                                                (float32 rows, one per chunk)
                                                                and ``vec_spans`` (the chunks'
                                                                spans, JSON) or ``vec_ref``
                                                                (``s3://…`` of both),
                                                                ``vec_model``, ``vec_dim``
dedup marker   ``T#{tenant}#U#{user}``         ``D#{sha256}``   ``memory_id``, ``occurred_us``,
                                                                ``expires_us`` of its memory
cursor         ``T#{tenant}#U#{user}``         ``C#{name}``     ``value_us``
lease          ``T#{tenant}#U#{user}``         ``L#{name}``     ``holder``, ``until_us``
activity       ``T#{tenant}#U#{user}``         ``A``            ``last_episode_us``
=============  ==============================  ===============  =============================

Memories are keyed by id (not by user) so that ``get``/``get_many`` (every retrieve, right
after a store) are strongly consistent reads, and update/delete are conditional writes
on the base key. A user's memories are kept together by the global secondary index
``by_user`` (``gsi1pk`` = ``T#{tenant}#U#{user}``, ``gsi1sk`` = ``{occurred_us + 10^17,
20 digits}#{memory_id}``, so the index order is ``occurred_at`` then id, exactly the
paging order); it projects the filter attributes and ``body`` but not the vector.
Markers, cursors, leases and the activity item share the user's partition in the base
table (so ``erase_user`` removes them with the rest). A lease is taken with one
conditional PutItem (absent, expired, or its own holder's), so of concurrent takers
exactly one wins.

A user's facts alone are kept together by the sparse index ``by_user_facts`` (``gsi3pk``
and ``gsi3sk``, the ``by_user`` keys, set on semantic items only): a list of facts only
(reflection, context, the review queue, forgetting an episode) reads it instead of every
memory of the user, once the table is marked as having every fact in it
(``table.facts_indexed``; ``DynamoDBRecordStore.index_facts`` brings a table made before
it in step).

What was stored after a moment (reflection's cursor: ``ListQuery.created_after``) is
listed from ``by_user_created`` (``gsi1pk``, ``created_us``: keys every memory item has,
so DynamoDB fills it from the table; it projects the filter attributes and ``gsi1sk``,
not the body): one ``Query`` reads the keys stored since, they are put in the list order
and the page's memories are read by id (``listing.created_page``; more than
``CREATED_SCAN`` stored since, and the page, and the rest of that list, is read from
``by_user`` as before).

``users_with_episodes_since`` reads the sparse index ``by_activity`` (``gsi2pk`` =
``A#{shard 0..15}``, ``gsi2sk`` = ``last_episode_us``, a number) over the activity items,
which each episodic store moves forward with a conditional update.

Times are integer microseconds since the epoch (``*_us``), exact like the SQLite store.
``expires_at`` is the TTL attribute in epoch seconds (rounded up, so DynamoDB never
deletes early); DynamoDB deletes expired items late, so every list filters on the exact
``expires_us`` itself. Dedup: one ``TransactWriteItems`` puts the memory (condition: id
absent) and the marker (condition: absent, or its memory occurred outside the window, or
has expired), so concurrent duplicates create exactly one memory. A marker whose memory
was deleted (TTL, or a crash between the two deletes of ``delete``) is detected and
reclaimed. Pages use the shared keyset cursor of ``hindsight.adapters.paging``; filters
the index cannot key on are a ``FilterExpression`` and pages are read until ``limit``
items pass. Lists and erase read the ``by_user`` index, which DynamoDB updates
asynchronously (usually well under a second) after a write.

Large memories (``large_items``, ``payloads``): an item holds at most 400 KB, and a long
memory (content up to ``HINDSIGHT_MAX_CONTENT_CHARS``, 100,000 characters by default; ~300 KB
of UTF-8 for Chinese, plus a vector per chunk) may not fit. We keep such a memory in ONE item
whose large payloads live in S3 (bucket ``HINDSIGHT_BLOB_BUCKET``) rather than splitting it
over several items: the body and the vectors each stay inline up to 128 KiB and otherwise
become one S3 object the item points at (``body`` = ``s3://bucket/key``; ``vec_ref``). Why S3
and not split items: one item stays one conditional write (the dedup transaction, update and
delete conditions are unchanged), lists and the stream see one item per memory, nothing is
capped by the 4 MB transaction or 16 MB batch limits, and a byte costs far less in S3 than
in DynamoDB write units (and the ``by_user`` index would store the body twice). The object
is written BEFORE the item, so no item names a missing object; a failed write deletes what
it wrote; update and delete remove the objects the item no longer names once it changed;
erasing a user deletes the user's S3 prefix. Reads hydrate references transparently (in
parallel); a read that finds an object replaced under it reads the item again. A 100,000
character Chinese memory (436 chunks with multilingual-e5-small) costs one item of ~0.5 KB
(keys, filter attributes, two references) and two S3 objects (276 KB of content, 676 KB of
384-dimension vectors); an English one (185 chunks) keeps its ~101 KB body inline and puts
its 287 KB of vectors in one object.

The modules: ``items`` (keys, item <-> memory mapping), ``table`` (creating the table, the
default client), ``requests`` (counted requests, paging, batches), ``errors`` (botocore
errors as domain errors), ``expressions`` (attribute names and values, list filters), ``dedup`` (the
memory-and-marker transaction), ``listing`` (pages, scans, active users), ``payloads`` (the
S3 objects), ``large_items`` (what goes to S3 and back) and ``store``.
"""

from hindsight.adapters.aws.dynamodb_record_store.items import (
    ACTIVITY_SHARDS,
    ACTIVITY_SK,
    MEMORY_SK,
    from_attribute_values,
    is_memory_item,
    memory_from_item,
    memory_item,
    memory_pk,
    to_attribute_values,
    user_pk,
    vector_attributes,
    vector_from_item,
)
from hindsight.adapters.aws.dynamodb_record_store.items import marker_sk as _marker_sk
from hindsight.adapters.aws.dynamodb_record_store.large_items import (
    DEFAULT_INLINE_BYTES,
    ITEM_LIMIT_BYTES,
    LargeItems,
    references_of,
)
from hindsight.adapters.aws.dynamodb_record_store.payloads import (
    PayloadMissingError,
    S3PayloadStore,
    default_s3_client,
)
from hindsight.adapters.aws.dynamodb_record_store.store import DynamoDBRecordStore
from hindsight.adapters.aws.dynamodb_record_store.table import (
    BY_ACTIVITY_INDEX,
    BY_USER_INDEX,
    create_table,
    default_client,
    table_exists,
)

__all__ = [
    "ACTIVITY_SHARDS",
    "ACTIVITY_SK",
    "BY_ACTIVITY_INDEX",
    "BY_USER_INDEX",
    "DEFAULT_INLINE_BYTES",
    "ITEM_LIMIT_BYTES",
    "MEMORY_SK",
    "DynamoDBRecordStore",
    "LargeItems",
    "PayloadMissingError",
    "S3PayloadStore",
    "_marker_sk",
    "create_table",
    "default_client",
    "default_s3_client",
    "from_attribute_values",
    "is_memory_item",
    "memory_from_item",
    "memory_item",
    "memory_pk",
    "references_of",
    "table_exists",
    "to_attribute_values",
    "user_pk",
    "vector_attributes",
    "vector_from_item",
]
