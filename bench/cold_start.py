"""Cold start of the Lambda handlers on the embedded backend: import, first and second call.

For each handler (functions/{store,retrieve,reflect,forget}/app.py) a fresh process (this
script with ``--worker``) imports ``app`` as Lambda does and calls ``lambda_handler`` twice
(``scenarios``) on a fresh copy of a seeded data dir. The module level imports only what
the worker needs, so the measured process loads nothing a handler would import before the
timer.

    .venv/bin/python bench/cold_start.py --repeats 3  # medians of 3 processes per route
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from hindsight.gateway.lambda_emulation import LocalLambdaContext, proxy_event

REPO = Path(__file__).resolve().parents[1]
FUNCTIONS = REPO / "functions"
MEDIANS = ("import_ms", "first_call_ms", "second_call_ms")
TABLE_KEYS = ["function", "route", "needs_model", *MEDIANS, "status_codes"]
TABLE_KEYS += ["model_loaded", "jieba_loaded"]
SEED = [  # u1's memories, the user of the sample events
    "我对花生过敏，吃了会起疹子",
    "I love hiking in the mountains on weekends",
    "我养了一只猫，叫咪咪",
    "My sister Emma lives in Berlin",
    "下周三要去北京出差，帮我订酒店",
    "I am vegetarian, no meat please",
    "我不喜欢吃香菜",
    "I drink black coffee every morning",
    "我每天早上跑步五公里",
    "I prefer window seats on long flights",
]


def sample(name: str, body: dict[str, Any] | None = None, **params: str) -> dict[str, Any]:
    """events/<name>.json, or its request with another JSON body or path parameters."""
    event: dict[str, Any] = json.loads((REPO / "events" / f"{name}.json").read_text("utf-8"))
    if body is None and not params:
        return event
    return proxy_event(
        event["httpMethod"],
        event["resource"],
        path_parameters=params or event.get("pathParameters"),
        headers=event.get("headers") or {},
        body=event["body"] if body is None else json.dumps(body, ensure_ascii=False),
    )


def scenarios(memory_ids: list[str]) -> list[dict[str, Any]]:
    """One route per handler, and retrieve's list route (a handler with the model that
    must not load it for a route without embeddings); reflect needs the model to embed the
    facts it creates, if any. Second calls store and search new text (a repeat would be
    deduplicated or served from the text caches) and delete another memory."""
    new_memory = {"user_id": "u1", "content": "I moved to Lisbon last month"}
    query = {"user_id": "u1", "query": "what can't the user eat"}
    deletes = [sample("delete", memory_id=memory_id) for memory_id in memory_ids[:2]]
    rows = [
        ("store", "POST /v1/memories", "yes", sample("store"), sample("store", new_memory)),
        ("retrieve", "POST /v1/retrieve", "yes", sample("retrieve"), sample("retrieve", query)),
        ("retrieve", "GET /v1/users/{user_id}/memories", "no", sample("list"), sample("list")),
        ("reflect", "POST /v1/reflect", "for new facts", sample("reflect"), sample("reflect")),
        ("forget", "DELETE /v1/memories/{memory_id}", "no", *deletes),
    ]
    keys = ("function", "route", "needs_model", "first", "second")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def run_worker(scenario_file: Path, result_file: Path) -> None:
    """Import ``app`` as Lambda does, then call it with the scenario's two events."""
    scenario = json.loads(scenario_file.read_text("utf-8"))
    function = scenario["function"]
    sys.path.insert(0, str(FUNCTIONS / function))  # Lambda's task root is the function dir
    started = time.perf_counter()
    app = importlib.import_module("app")
    result: dict[str, Any] = {"import_ms": round((time.perf_counter() - started) * 1000, 1)}
    result["status_codes"] = []
    for name in ("first", "second"):
        context = LocalLambdaContext(f"hindsight-{function}", memory_mb=1024, timeout_seconds=30)
        started = time.perf_counter()
        response = app.lambda_handler(scenario[name], context)
        result[f"{name}_call_ms"] = round((time.perf_counter() - started) * 1000, 1)
        result["status_codes"].append(response["statusCode"])
    from hindsight.bootstrap import get_service

    # the service's ServingEmbedder follows the served index's model; the configured
    # embedder beneath it is the one that loads the model (or not)
    embedder = get_service().ports.embedder
    result["model_loaded"] = getattr(getattr(embedder, "configured", embedder), "is_loaded", None)
    jieba = sys.modules.get("jieba")
    result["jieba_loaded"] = bool(jieba and jieba.dt.initialized)
    result_file.write_text(json.dumps(result))


def worker_env(data_dir: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "AWS_"))}
    return env | {
        "HINDSIGHT_BACKEND": "embedded",
        "HINDSIGHT_DATA_DIR": str(data_dir),
        "HINDSIGHT_ALLOW_ANONYMOUS": "true",
        "POWERTOOLS_SERVICE_NAME": "hindsight",
        "POWERTOOLS_METRICS_NAMESPACE": "Hindsight",
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def run_python(args: list[str], env: dict[str, str], log: Path) -> str:
    """Run this interpreter with ``args`` (stdout to ``log``); its stderr."""
    import subprocess

    with log.open("a") as out:
        done = subprocess.run(
            [sys.executable, *args], env=env, stdout=out, stderr=subprocess.PIPE, text=True
        )
    if done.returncode != 0:
        raise RuntimeError(f"python {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stderr


def top_imports(function: str, env: dict[str, str], log: Path) -> list[tuple[str, float]]:
    """The five third-party packages with the largest cumulative ms under ``-X importtime``
    (each package's outermost import, ms)."""
    code = f"import sys; sys.path.insert(0, {str(FUNCTIONS / function)!r}); import app"
    cumulative: dict[str, float] = {}
    for line in run_python(["-X", "importtime", "-c", code], env, log).splitlines():
        fields = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or not fields[1].strip().isdigit():
            continue  # the header line, or something the import printed
        package = fields[2].strip().split(".")[0]
        if package not in sys.stdlib_module_names | {"app", "hindsight"}:
            cumulative[package] = max(cumulative.get(package, 0), int(fields[1]) / 1000)
    ranked = sorted(cumulative.items(), key=lambda item: -item[1])[:5]
    return [(package, round(ms, 1)) for package, ms in ranked]


def measure(scenario: dict[str, Any], seeded: Path, root: Path, repeats: int) -> dict[str, Any]:
    """Medians of ``repeats`` worker processes, each on a fresh copy of ``seeded``."""
    import shutil
    import statistics

    log, data_dir = root / "handlers.log", root / "data"
    scenario_file, result_file = root / "scenario.json", root / "result.json"
    scenario_file.write_text(json.dumps(scenario, ensure_ascii=False), "utf-8")
    runs = []
    for _ in range(repeats):
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.copytree(seeded, data_dir)
        worker = [str(Path(__file__).resolve()), "--worker", str(scenario_file), str(result_file)]
        run_python(worker, worker_env(data_dir), log)
        runs.append(json.loads(result_file.read_text()))
    medians = {key: round(statistics.median(run[key] for run in runs), 1) for key in MEDIANS}
    top = top_imports(scenario["function"], worker_env(root / "empty"), log)
    row = {key: scenario[key] for key in ("function", "route", "needs_model")}
    return row | runs[0] | medians | {"top_imports": top, "runs": runs}


def cells(row: dict[str, Any]) -> list[Any]:
    """The table's cells for one measured route."""
    top = ", ".join(f"{package} {ms:.0f}" for package, ms in row["top_imports"])
    return [row[key] for key in TABLE_KEYS] + [top]


def main() -> int:
    import argparse
    import shutil
    import tempfile

    import harness

    from hindsight.core.commands import BatchItem, StoreBatchCommand

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=harness.RESULTS_DIR / "cold_start.json")
    args = parser.parse_args()
    info = harness.machine_info()
    print(harness.machine_header(info), flush=True)
    root = Path(tempfile.mkdtemp(prefix="hindsight-cold-"))
    try:
        service = harness.open_service(root / "seeded")
        items = [BatchItem(content=text, speaker="user", session_id="s1") for text in SEED]
        command = StoreBatchCommand(user_id="u1", items=items)
        stored = service.store_batch(harness.PRINCIPAL, command)
        harness.close_service(service)
        rows = []
        for scenario in scenarios([outcome.memory_id for outcome in stored]):
            print(f"{scenario['function']}: {scenario['route']}", flush=True)
            rows.append(measure(scenario, root / "seeded", root, args.repeats))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    headers = ["handler", "route", "needs model", "import ms", "first call ms", "second call ms"]
    headers += ["status", "model loaded", "jieba loaded", "top imports (cumulative ms)"]
    print(f"\n{harness.markdown_table(headers, [cells(row) for row in rows])}\n")
    print(f"medians of {args.repeats} processes per route; load average {harness.load_average()}")
    result = {"machine": info, "repeats": args.repeats, "seed_memories": len(SEED)}
    result |= {"scenarios": rows, "load_average_at_end": harness.load_average()}
    harness.write_json(args.out, result)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:  # SCENARIO_FILE RESULT_FILE, from measure()
        run_worker(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        raise SystemExit(main())
