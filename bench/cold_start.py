"""Cold start of the Lambda handlers on the embedded backend: import, first and second call.

For each handler module (functions/{store,retrieve,reflect,forget}/app.py) and a few
routes, a fresh Python process imports the module the way Lambda does (the function's
directory on sys.path, ``import app``), then invokes ``lambda_handler`` twice with
API Gateway proxy events (events/*.json, and for other bodies and paths events built by
``hindsight.gateway.lambda_emulation.proxy_event`` with the sample's headers) and a
``LocalLambdaContext`` against a fresh copy of a small seeded data dir
(HINDSIGHT_DATA_DIR, HINDSIGHT_ALLOW_ANONYMOUS=true). Another fresh process runs
``python -X importtime`` on the same import to show what dominates it. After each call
the worker records whether the embedding model has been loaded.

    .venv/bin/python bench/cold_start.py              # 3 runs per scenario, medians
    .venv/bin/python bench/cold_start.py --repeats 1  # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cold_start_worker import FUNCTIONS, SEED_U1, SEED_U1_LATER, SEED_U2
from harness import (
    REPO,
    RESULTS_DIR,
    load_average,
    machine_header,
    machine_info,
    markdown_table,
    write_json,
)

from hindsight.gateway.lambda_emulation import proxy_event

EVENTS = REPO / "events"
WORKER = Path(__file__).resolve().with_name("cold_start_worker.py")

# --- events ------------------------------------------------------------------------------


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))


def with_body(event: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The sample ``event``'s request with another JSON body."""
    return proxy_event(
        event["httpMethod"],
        event["resource"],
        path_parameters=event.get("pathParameters") or {},
        headers=event.get("headers") or {},
        body=json.dumps(body, ensure_ascii=False),
    )


def with_path(event: dict[str, Any], parameters: dict[str, str]) -> dict[str, Any]:
    """The sample ``event``'s request on another concrete path of its resource (real ids)."""
    return proxy_event(
        event["httpMethod"],
        event["resource"],
        path_parameters=parameters,
        headers=event.get("headers") or {},
        body=event.get("body"),
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
                with_body(store, {"user_id": "u1", "content": "I moved to Lisbon last month"}),
            ],
        },
        {
            "function": "retrieve",
            "route": "POST /v1/retrieve",
            "needs_model": True,
            "events": [
                retrieve,
                with_body(retrieve, {"user_id": "u1", "query": "what can't the user eat"}),
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
            "events": [with_path(load_event("delete"), {"memory_id": m}) for m in memories[:2]],
        },
        {
            "function": "forget",
            "route": "DELETE /v1/users/{user_id}",
            "needs_model": False,
            "events": [with_path(load_event("erase_user"), {"user_id": u}) for u in ("u1", "u2")],
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
                "events": [with_path(approve, {"memory_id": f}) for f in facts[:2]],
            },
        )
    return out


# --- subprocess environment ---------------------------------------------------------------


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


# --- -X importtime ------------------------------------------------------------------------


def parse_importtime(stderr: str) -> list[dict[str, Any]]:
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3:
            continue
        self_us, cumulative_us, name = parts
        if not (self_us.strip().isdigit() and cumulative_us.strip().isdigit()):
            continue
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        rows.append(
            {
                "module": name.strip(),
                "self_ms": int(self_us) / 1000,
                "cumulative_ms": int(cumulative_us) / 1000,
                "depth": depth,
            }
        )
    return rows


def importer_of(rows: list[dict[str, Any]], position: int) -> str | None:
    """The nearest hindsight module whose import pulled in ``rows[position]``.

    -X importtime prints a module after everything it imported, one level deeper.
    """
    depth = rows[position]["depth"]
    for row in rows[position + 1 :]:
        if row["depth"] < depth:
            depth = row["depth"]
            if row["module"].startswith("hindsight"):
                return str(row["module"])
    return None


def top_imports(rows: list[dict[str, Any]], count: int = 5) -> list[dict[str, Any]]:
    """Third-party packages by cumulative import time (each one's outermost import)."""
    best: dict[str, tuple[int, dict[str, Any]]] = {}
    for position, row in enumerate(rows):
        root = row["module"].split(".")[0]
        if root in {"app", "hindsight"}:
            continue
        if root not in best or row["cumulative_ms"] > best[root][1]["cumulative_ms"]:
            best[root] = (position, row)
    ranked = sorted(best.items(), key=lambda item: -item[1][1]["cumulative_ms"])[:count]
    return [
        {
            "package": root,
            "outermost_module": row["module"],
            "cumulative_ms": round(row["cumulative_ms"], 1),
            "imported_by": importer_of(rows, position),
        }
        for root, (position, row) in ranked
    ]


def importtime(function: str, data_dir: Path, omp: int | None, log: Path) -> dict[str, Any]:
    code = f"import sys; sys.path.insert(0, {str(FUNCTIONS / function)!r}); import app  # noqa"
    done = run_python(["-X", "importtime", "-c", code], worker_env(data_dir, omp), log)
    if done.returncode != 0:
        raise RuntimeError(f"importing functions/{function}/app.py failed:\n{done.stderr[-2000:]}")
    rows = parse_importtime(done.stderr)
    app_rows = [r for r in rows if r["module"] == "app"]
    return {
        "app_cumulative_ms_under_importtime": round(app_rows[0]["cumulative_ms"], 1)
        if app_rows
        else None,
        "modules_imported": len(rows),
        "hindsight_own_ms": round(
            sum(r["self_ms"] for r in rows if r["module"].startswith("hindsight")), 1
        ),
        "top5": top_imports(rows),
    }


# --- driver -------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def measure(
    scenario: dict[str, Any],
    template_dir: Path,
    root: Path,
    repeats: int,
    omp: int | None,
    log: Path,
) -> dict[str, Any]:
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
                str(WORKER),
                "--worker",
                function,
                "--events-file",
                str(events_file),
                "--result-file",
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
    first, second = (r["calls"][0] for r in runs), (r["calls"][1] for r in runs)
    first_list, second_list = list(first), list(second)
    loads = [c["model_loaded"] for c in first_list]
    return {
        "function": function,
        "module": f"functions/{function}/app.py",
        "route": scenario["route"],
        "needs_model": scenario["needs_model"],
        "import_ms": median([r["import_ms"] for r in runs]),
        "first_call_ms": median([c["ms"] for c in first_list]),
        "second_call_ms": median([c["ms"] for c in second_list]),
        "process_wall_ms": median([r["process_wall_ms"] for r in runs]),
        "status_codes": [first_list[0]["status"], second_list[0]["status"]],
        "model_loaded_after_first_call": loads[0],
        "model_loaded_after_second_call": second_list[0]["model_loaded"],
        "heavy_modules_after_import": runs[0]["heavy_modules_after_import"],
        "heavy_modules_after_calls": runs[0]["calls"][-1]["heavy_modules_loaded"],
        "runs": runs,
    }


def seed(template_dir: Path, root: Path, omp: int | None, log: Path) -> dict[str, Any]:
    result_file = root / "seed.json"
    started = time.perf_counter()
    done = run_python(
        [str(WORKER), "--seed-dir", str(template_dir), "--result-file", str(result_file)],
        worker_env(template_dir, omp),
        log,
    )
    if done.returncode != 0:
        raise RuntimeError(f"seeding failed:\n{done.stderr[-3000:]}")
    data = json.loads(result_file.read_text())
    data["seconds"] = round(time.perf_counter() - started, 1)
    return data


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
    imports = result["importtime"]
    rows = []
    for row in result["scenarios"]:
        top = imports[row["function"]]["top5"]
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
                ", ".join(f"{t['package']} {t['cumulative_ms']:.0f}" for t in top),
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
        seeded = seed(template_dir, root, args.omp_threads, log)
        seeded["memories"] = len(SEED_U1) + len(SEED_U1_LATER) + len(SEED_U2)
        result: dict[str, Any] = {
            "machine": info,
            "repeats": args.repeats,
            "omp_threads": args.omp_threads,
            "seed": seeded,
            "importtime": {},
            "scenarios": [],
        }
        for function in ("store", "retrieve", "reflect", "forget"):
            print(f"-X importtime functions/{function}/app.py", flush=True)
            empty = root / f"empty-{function}"
            result["importtime"][function] = importtime(function, empty, args.omp_threads, log)
        for scenario in scenarios(seeded):
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
    raise SystemExit(main())
