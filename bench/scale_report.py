"""bench/scale.py's figures: the printed summary per size, targets, markdown tables, chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import Series, line_chart, markdown_table, write_json

TARGETS = {
    "heavy_p95_excl_ms_at_100k": 5.0,
    "across_p95_excl_ms_at_1m": 20.0,
    "heavy_p95_incl_ms_at_100k": 30.0,
    "store_per_second": 250.0,
}


def print_size(entry: dict[str, Any]) -> None:
    heavy, across = entry["heavy_retrieve_excl"], entry["across_retrieve_excl"]
    print(
        f"  retrieve excl. embedding: heavy p50 {heavy['p50_ms']:.1f} / p95 "
        f"{heavy['p95_ms']:.1f} ms; across users p50 {across['p50_ms']:.1f} / p95 "
        f"{across['p95_ms']:.1f} ms; incl. embedding heavy p95 "
        f"{entry['heavy_retrieve_incl']['p95_ms']:.1f} ms",
        flush=True,
    )
    store = entry["store"]
    print(
        f"  store_batch: {store['with_embedding']['per_second']}/s with embedding, "
        f"{store['vectors_precomputed']['per_second']}/s with vectors precomputed; "
        f"peak memory {entry['peak_memory_mb'].get('VmHWM', 0):.0f} MB; "
        f"disk {entry['disk_mb']} MB",
        flush=True,
    )


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    by_size = {e["memories"]: e for e in results["sizes"]}
    checks: list[dict[str, Any]] = []

    def check(name: str, size: int, value: float | None, limit: float, low_is_good: bool) -> None:
        if value is None:
            return
        met = value <= limit if low_is_good else value >= limit
        checks.append({"target": name, "size": size, "value": value, "limit": limit, "met": met})

    if 100_000 in by_size:
        e = by_size[100_000]
        check(
            "retrieve p95 ms, one user, embedding excluded",
            100_000,
            e["heavy_retrieve_excl"]["p95_ms"],
            TARGETS["heavy_p95_excl_ms_at_100k"],
            True,
        )
        check(
            "retrieve p95 ms, one user, embedding included",
            100_000,
            e["heavy_retrieve_incl"]["p95_ms"],
            TARGETS["heavy_p95_incl_ms_at_100k"],
            True,
        )
    if 1_000_000 in by_size:
        check(
            "retrieve p95 ms, across users, embedding excluded",
            1_000_000,
            by_size[1_000_000]["across_retrieve_excl"]["p95_ms"],
            TARGETS["across_p95_excl_ms_at_1m"],
            True,
        )
    for size, e in sorted(by_size.items()):
        check(
            "store_batch memories/s (embedding included)",
            size,
            e["store"]["with_embedding"]["per_second"],
            TARGETS["store_per_second"],
            False,
        )
    return checks


def latency_table(sizes: list[dict[str, Any]]) -> str:
    rows = []
    for e in sizes:
        heavy, across = e["heavy_retrieve_excl"], e["across_retrieve_excl"]
        rows.append([
            f"{e['memories']:,}", f"{e['users']:,}",
            heavy["p50_ms"], heavy["p95_ms"], heavy["p99_ms"],
            e["heavy_retrieve_incl"]["p95_ms"],
            across["p50_ms"], across["p95_ms"], across["p99_ms"],
            e["across_retrieve_incl"]["p95_ms"],
            e.get("first_retrieve_after_open_ms", "-"),
        ])  # fmt: skip
    return markdown_table(
        ["memories", "users", "one user p50", "p95", "p99", "p95 +embed",
         "across users p50", "p95", "p99", "p95 +embed", "first retrieve"],
        rows,
    )  # fmt: skip


def brute_force_table(sizes: list[dict[str, Any]]) -> str:
    rows = []
    for e in sizes:
        for who in ("heavy", "across"):
            vec, brute = e[f"{who}_vector_search_k10"], e[f"{who}_brute_force_k10"]
            retrieve_p50 = e[f"{who}_retrieve_excl"]["p50_ms"]
            rows.append([
                f"{e['memories']:,}", "one user" if who == "heavy" else "across users",
                e[f"{who}_user_memories_mean"],
                e.get(f"{who}_keyword_search_k100", {}).get("p50_ms", "-"),
                e.get(f"{who}_vector_search_k100", {}).get("p50_ms", "-"),
                vec["p50_ms"], brute["p50_ms"],
                round(brute["p50_ms"] / max(vec["p50_ms"], 1e-6), 2),
                e[f"{who}_vector_recall_at_10"], e[f"{who}_vector_similarity_ratio"],
                retrieve_p50, round(retrieve_p50 / max(brute["p50_ms"], 1e-6), 2),
            ])  # fmt: skip
    return markdown_table(
        ["memories", "queries to", "user's memories", "keyword_search k100 p50",
         "vector_search k100 p50", "vector_search p50", "brute p50", "brute / index",
         "recall@10", "similarity ratio", "full retrieve p50", "retrieve / brute"],
        rows,
    )  # fmt: skip


def build_table(sizes: list[dict[str, Any]]) -> str:
    rows = []
    for e in sizes:
        load, store = e["load"], e["store"]
        rows.append([
            f"{e['memories']:,}", load.get("memories_written", 0),
            load.get("write_per_second", "-"),
            e["first_heavy_vector_search_seconds"], e["open_seconds"],
            store["with_embedding"]["per_second"], store["vectors_precomputed"]["per_second"],
            store.get("embed_only", {}).get("per_second", "-"),
            round(e["peak_memory_mb"].get("VmHWM", 0)), e["disk_mb"],
        ])  # fmt: skip
    return markdown_table(
        ["memories", "written this step", "write /s", "HNSW build s", "open s",
         "store /s (+embed)", "store /s (vectors given)", "embedding alone /s", "peak MB",
         "disk MB"],
        rows,
    )  # fmt: skip


def server_table(sizes: list[dict[str, Any]]) -> str:
    rows = []
    for e in sizes:
        s = e["server"]
        rows.append([
            f"{e['memories']:,}", s["startup_seconds_until_health"], s["rss_mb_after_startup"],
            s["first_retrieve_ms_with_model_load"], s["http_retrieve"]["p50_ms"],
            s["http_retrieve"]["p95_ms"], s["vm_hwm_mb"], s["vm_rss_mb"],
        ])  # fmt: skip
    return markdown_table(
        ["memories", "startup s", "RSS after start MB", "first retrieve ms", "HTTP p50 ms",
         "HTTP p95 ms", "VmHWM MB", "VmRSS MB"],
        rows,
    )  # fmt: skip


def write_outputs(results: dict[str, Any], out: Path) -> None:
    write_json(out, results)
    sizes = results["sizes"]
    lines = [
        "## Retrieve latency (ms, MemoryService.retrieve, top_k 10)",
        "",
        latency_table(sizes),
        "",
        "## The index's stages, and against brute force "
        "(numpy matrix @ query over the user's vectors, top 10)",
        "",
        brute_force_table(sizes),
        "",
        "## Build, store, memory, disk",
        "",
        build_table(sizes),
        "",
    ]
    served = [e for e in sizes if "server" in e]
    if served:
        lines += ["## Local server (`hindsight serve`, HTTP retrieve, one user)", ""]
        lines += [server_table(served), ""]
    lines += ["## Targets", ""]
    for t in results["targets"]:
        mark = "met" if t["met"] else "NOT met"
        lines.append(
            f"- {t['target']} at {t['size']:,}: {t['value']} (target {t['limit']}): {mark}"
        )
    (out.with_suffix(".md")).write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines), flush=True)
    plot(results, out.with_suffix(".png"))
    print(f"wrote {out}, {out.with_suffix('.md')}, {out.with_suffix('.png')}", flush=True)


def plot(results: dict[str, Any], path: Path) -> None:
    entries = results["sizes"]
    sizes = [e["memories"] for e in entries]
    lines = [
        ("one user, retrieve p95 (embedding excluded)", "heavy_retrieve_excl", "-o"),
        ("one user, retrieve p95 (embedding included)", "heavy_retrieve_incl", "--o"),
        ("across users, retrieve p95 (embedding excluded)", "across_retrieve_excl", "-s"),
        ("one user, vector_search p95", "heavy_vector_search_k10", "-^"),
        ("one user, brute force p95", "heavy_brute_force_k10", ":x"),
    ]
    line_chart(
        path,
        [
            Series(label, sizes, [e[key]["p95_ms"] for e in entries], style)
            for label, key, style in lines
        ],
        title="Hindsight embedded engine: latency against size (2 cores)",
        xlabel="memories stored",
        ylabel="latency (ms)",
        log=True,
    )
