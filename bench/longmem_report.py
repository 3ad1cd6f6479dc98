"""The long-memory benchmark's measures and tables (bench/longmem.py runs the systems).

A question's rank is the place of the turn holding its needle among a system's top 10
(None: not there); recall@k, MRR and the groups (language, long or short) follow from the
ranks. ``tables`` prints what the JSON report holds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from harness import machine_header, markdown_table
from longmem_data import Dataset, Question

KS = (1, 5, 10)
TOP = max(KS)


@dataclass
class Ranked:
    """One question's top turn ids."""

    turn_ids: list[list[str]]  # per result: the turns its memory holds (duplicates share one)


# --- metrics -------------------------------------------------------------------------------


def needle_rank(question: Question, ranked: Ranked) -> int | None:
    """1-based rank of the turn holding the needle, or None (not in the top)."""
    for rank, turn_ids in enumerate(ranked.turn_ids, start=1):
        if question.turn_id in turn_ids:
            return rank
    return None


def groups_of(question: Question) -> list[str]:
    return ["overall", question.language, "long" if question.position != "short" else "short"]


def summarize(dataset: Dataset, ranks: dict[str, int | None]) -> dict[str, dict[str, float]]:
    rows: dict[str, list[int | None]] = defaultdict(list)
    for question in dataset.questions:
        for group in groups_of(question):
            rows[group].append(ranks[question.question_id])
    out: dict[str, dict[str, float]] = {}
    for group, values in rows.items():
        metrics: dict[str, float] = {"questions": len(values)}
        for k in KS:
            metrics[f"recall@{k}"] = round(sum(1 for r in values if r and r <= k) / len(values), 4)
        metrics["mrr"] = round(sum(1.0 / r for r in values if r) / len(values), 4)
        out[group] = metrics
    return out


# --- output --------------------------------------------------------------------------------


def tables(results: dict[str, Any]) -> str:
    systems = results["systems"]
    first = next(iter(systems.values()))["metrics"]

    def cell(metrics: dict[str, Any], group: str, k: int | str) -> Any:
        key = "mrr" if k == "mrr" else f"recall@{k}"
        return metrics[group][key] if group in metrics else "-"

    groups = [("overall", 1), ("overall", 5), ("en", 1), ("en", 5), ("zh", 1), ("zh", 5)]
    groups += [("long", 5), ("short", 5), ("overall", "mrr")]
    headers = ["system"] + [
        f"{g} {'MRR' if k == 'mrr' else f'R@{k}'} ({first.get(g, {}).get('questions', 0)})"
        for g, k in groups
    ]
    rows = [[name, *[cell(s["metrics"], g, k) for g, k in groups]] for name, s in systems.items()]
    lines = [
        machine_header(results["machine"]),
        f"data: {results['data']['questions']} questions, {results['data']['turns']} turns "
        f"({results['data']['long_turns']} long, {results['data']['long_chars']:,} characters)",
        "",
        markdown_table(headers, rows),
        "",
    ]
    for name, system in systems.items():
        if store := system.get("store"):
            lines.append(
                f"{name}: stored {store['memories']} memories in {store['seconds']} s; "
                f"refused {len(store['refused'])}"
            )
    return "\n".join(lines)
