"""The long-memory benchmark's measures and tables (bench/longmem.py runs the systems).

A question's rank is the place of the turn holding its needle among a system's top 10
(None: not there, or the needle was cut off what was stored); recall@k, MRR and the
groups (language, long or short, position, beyond the old 8,000-character limit) follow
from the ranks. ``tables`` prints what the JSON report holds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from harness import machine_header, markdown_table
from longmem_data import Dataset, Question

OLD_LIMIT = 8_000  # the content limit before long memories (the old MAX_CONTENT_CHARS)
KS = (1, 5, 10)
TOP = max(KS)


@dataclass
class Ranked:
    """One question's top turn ids, and for Hindsight the first highlight of each result."""

    turn_ids: list[list[str]]  # per result: the turns its memory holds (duplicates share one)
    highlights: list[tuple[int, int] | None] = field(default_factory=list)


# --- metrics -------------------------------------------------------------------------------


def needle_rank(question: Question, ranked: Ranked, cut: int | None) -> int | None:
    """1-based rank of the turn holding the needle, or None (not in the top, or the needle
    was cut off the stored text)."""
    if cut is not None and question.offset + len(question.needle) > cut:
        return None
    for rank, turn_ids in enumerate(ranked.turn_ids, start=1):
        if question.turn_id in turn_ids:
            return rank
    return None


def groups_of(question: Question) -> list[str]:
    groups = ["overall", question.language, "long" if question.position != "short" else "short"]
    groups.append(f"position:{question.position}")
    if question.position != "short" and question.offset >= OLD_LIMIT:
        groups.append(f"beyond {OLD_LIMIT:,}")
    return groups


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


def highlight_share(
    dataset: Dataset, ranked: dict[str, Ranked], ranks: dict[str, int | None]
) -> dict[str, Any]:
    """Of the long needles found in the top 10, how many the first highlight's span holds."""
    found = held = 0
    for question in dataset.questions:
        rank = ranks[question.question_id]
        if question.position == "short" or rank is None:
            continue
        found += 1
        span = ranked[question.question_id].highlights[rank - 1]
        if (
            span
            and span[0] <= question.offset
            and question.offset + len(question.needle) <= span[1]
        ):
            held += 1
    return {"long_needles_found": found, "first_highlight_holds_needle": held}


# --- output --------------------------------------------------------------------------------


def _two(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def tables(results: dict[str, Any]) -> str:
    systems = results["systems"]
    if not systems:
        cost = results.get("store_cost")
        return f"store one {cost['chars']:,}-character memory (no cache): {cost}" if cost else ""
    first = next(iter(systems.values()))["metrics"]
    beyond = f"beyond {OLD_LIMIT:,}"

    def cell(metrics: dict[str, Any], group: str, k: int | str) -> Any:
        key = "mrr" if k == "mrr" else f"recall@{k}"
        return metrics[group][key] if group in metrics else "-"

    groups = [("overall", 1), ("overall", 5), ("en", 1), ("en", 5), ("zh", 1), ("zh", 5)]
    groups += [("long", 5), ("short", 5), (beyond, 5), ("overall", "mrr")]
    headers = ["system"] + [
        f"{g} {'MRR' if k == 'mrr' else f'R@{k}'} ({first.get(g, {}).get('questions', 0)})"
        for g, k in groups
    ]
    rows = [[name, *[cell(s["metrics"], g, k) for g, k in groups]] for name, s in systems.items()]
    positions = ["start", "middle", "end", "short"]
    position_headers = ["system"] + [
        f"{p} R@1/R@5 ({first.get(f'position:{p}', {}).get('questions', 0)})" for p in positions
    ]
    position_rows = [
        [name]
        + [
            " / ".join(_two(cell(s["metrics"], f"position:{p}", k)) for k in (1, 5))
            for p in positions
        ]
        for name, s in systems.items()
    ]
    lines = [
        machine_header(results["machine"]),
        f"data: {results['data']['questions']} questions, {results['data']['turns']} turns "
        f"({results['data']['long_turns']} long, {results['data']['long_chars']:,} characters)",
        "",
        markdown_table(headers, rows),
        "",
        markdown_table(position_headers, position_rows),
        "",
    ]
    for name, system in systems.items():
        store = system.get("store")
        if store:
            lines.append(
                f"{name}: stored {store['memories']} memories ({store['chars']:,} characters) in "
                f"{store['seconds']} s = {store['memories_per_second']} memories/s, "
                f"{store['chars_per_second']:,} characters/s; refused {len(store['refused'])}; "
                f"chunks of long memories: {store['long_chunks']}; "
                f"embedding cache {system.get('embedding_cache', 'off')}"
            )
        if system.get("highlights"):
            h = system["highlights"]
            lines.append(
                f"{name}: first highlight holds the needle for {h['first_highlight_holds_needle']}"
                f" of {h['long_needles_found']} long needles found"
            )
    cost = results.get("store_cost")
    if cost:
        lines.append(f"store one {cost['chars']:,}-character memory (no cache): {cost}")
    return "\n".join(lines)
