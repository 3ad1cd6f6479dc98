"""Knowledge updates: does the newest state of the user win, in retrieval and reflection?

    .venv/bin/python bench/updates.py [--verbose]

Runs ``bench/data/updates/cases.json`` (made by ``bench/datasets/updates_data.py``) through
the embedded service with the offline defaults (no LLM), each case a fresh user whose
episodes are stored with their times. Measures (docs/benchmarks.md): current-first (the
new state in the top 10, above the old one, which may be absent), both-kept (additive
updates: both in the top 10), past-first, and fact-current after one reflection (a live
fact, pending or approved, names the new value and none names the old value without the
new one: "moved from Beijing to Shanghai" states the current state).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    PRINCIPAL,
    RESULTS_DIR,
    machine_info,
    markdown_table,
    temporary_service,
    write_json,
)

from hindsight.core.commands import (
    BatchItem,
    ListMemoriesCommand,
    ReflectCommand,
    RetrieveCommand,
    StoreBatchCommand,
)
from hindsight.core.models import MemoryKind
from hindsight.core.service import MemoryService

CASES = Path(__file__).resolve().parent / "data" / "updates" / "cases.json"
TOP_K = 10


def _store(service: MemoryService, user_id: str, case: dict[str, Any]) -> dict[str, str]:
    """The case's episodes stored as the user's; returns memory id by role (old, new)."""
    items = [
        BatchItem(content=e["content"], occurred_at=datetime.fromisoformat(e["occurred_at"]))
        for e in case["episodes"]
    ]
    outcomes = service.store_batch(PRINCIPAL, StoreBatchCommand(user_id=user_id, items=items))
    return {
        e["role"]: o.memory_id
        for e, o in zip(case["episodes"], outcomes, strict=True)
        if e["role"] != "noise"
    }


def _ranks(service: MemoryService, user_id: str, query: str, as_of: str) -> dict[str, int]:
    when = datetime.fromisoformat(as_of)
    command = RetrieveCommand(
        user_id=user_id, query=query, top_k=TOP_K, as_of=when, kinds=[MemoryKind.EPISODIC]
    )
    result = service.retrieve(PRINCIPAL, command)
    return {r.memory_id: position for position, r in enumerate(result.results)}


def _above(ranks: dict[str, int], first: str, second: str) -> bool:
    """``first`` in the results and above ``second`` (which may be absent)."""
    return first in ranks and ranks[first] < ranks.get(second, TOP_K + 1)


def _live_facts(service: MemoryService, user_id: str) -> list[str]:
    listed = service.list_memories(
        PRINCIPAL, ListMemoriesCommand(user_id=user_id, kind=MemoryKind.SEMANTIC, limit=50)
    )
    return [str(m["content"]) for m in listed.results if m.get("status") in ("pending", "approved")]


def _names(value: str, fact: str) -> bool:
    """Whether a fact names a value (a Latin value as whole words: "Tom" is not in
    "tomorrow")."""
    if value.isascii():
        pattern = rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])"
        return re.search(pattern, fact, re.IGNORECASE) is not None
    return value in fact


def _fact_current(case: dict[str, Any], facts: list[str]) -> bool:
    old, new = case["old_value"], case["new_value"]
    names_new = any(_names(new, f) for f in facts)
    names_old = any(_names(old, f) for f in facts)
    if case["kind"] == "additive":
        return names_new and names_old
    return names_new and not any(_names(old, f) and not _names(new, f) for f in facts)


def run_case(service: MemoryService, case: dict[str, Any]) -> dict[str, Any]:
    user_id = f"upd-{case['id']}-{time.time_ns()}"
    ids = _store(service, user_id, case)
    ranks = _ranks(service, user_id, case["question"], case["as_of"])
    row: dict[str, Any] = {"id": case["id"], "lang": case["lang"], "kind": case["kind"]}
    row["cue"] = case["cue"]
    if case["kind"] == "additive":
        row["both_kept"] = ids["old"] in ranks and ids["new"] in ranks
    else:
        row["current_first"] = _above(ranks, ids["new"], ids["old"])
    if case.get("past_question"):
        past = _ranks(service, user_id, case["past_question"], case["as_of"])
        row["past_first"] = _above(past, ids["old"], ids["new"])
    service.reflect(PRINCIPAL, ReflectCommand(user_id=user_id))
    facts = _live_facts(service, user_id)
    row["fact_current"] = _fact_current(case, facts)
    row["facts"] = facts
    row["ranks"] = {role: ranks.get(memory_id) for role, memory_id in ids.items()}
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rates per language and overall: passed / counted for each measure."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row["lang"]].append(row)
        groups["all"].append(row)
    out: dict[str, dict[str, Any]] = {}
    for name, group in groups.items():
        out[name] = {}
        counted = {
            measure: [r[measure] for r in group if measure in r]
            for measure in ("current_first", "both_kept", "past_first", "fact_current")
        }
        counted["current_first_without_cue"] = [
            r["current_first"] for r in group if "current_first" in r and not r["cue"]
        ]
        for measure, passed in counted.items():
            if passed:
                out[name][measure] = {
                    "rate": round(sum(passed) / len(passed), 4),
                    "passed": sum(passed),
                    "cases": len(passed),
                }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verbose", action="store_true", help="print every failed case")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "updates.json")
    args = parser.parse_args()
    cases = json.loads(CASES.read_text())["cases"]
    began = time.monotonic()
    with temporary_service("updates-") as service:
        rows = [run_case(service, case) for case in cases]
    summary = summarise(rows)
    measures = ["current_first", "current_first_without_cue", "both_kept", "past_first"]
    measures.append("fact_current")
    table = [
        [name, *[_cell(summary[name].get(m)) for m in measures]]
        for name in sorted(summary, key=lambda n: (n == "all", n))
    ]
    print(markdown_table(["set", *measures], table))
    if args.verbose:
        for row in rows:
            failed = [m for m in measures if row.get(m) is False]
            if failed:
                print(row["id"], failed, row["ranks"], row.get("facts"))
    write_json(
        args.out,
        {
            "benchmark": "knowledge updates (dev set)",
            "command": "python " + " ".join(sys.argv),
            "machine": machine_info(),
            "cases": len(cases),
            "summary": summary,
            "rows": rows,
            "seconds": round(time.monotonic() - began, 1),
        },
    )


def _cell(measure: dict[str, Any] | None) -> str:
    if not measure:
        return "-"
    return f"{measure['rate']:.2%} ({measure['passed']}/{measure['cases']})"


if __name__ == "__main__":
    main()
