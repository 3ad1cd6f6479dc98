"""Update pairs: is an older memory marked updated only when a newer one really changes it?

    .venv/bin/python bench/update_pairs.py [--lang en|zh] [--split fit|held|shapes]
        [--no-reflect] [--pairs bench/data/updates/shapes.json]

Runs ``bench/data/updates/pairs.json`` (docs/benchmarks.md, bench/data/updates/README.md)
through the embedded service with the offline defaults (no LLM), each pair a fresh user
(``_store``; the measures: ``retrieve_measures``, ``reflect_measures``). Negatives give
the false-update rate (target ≤ 1%), updates the recall (≥ 95%), per split and language,
and every rate per language × category × split. Writes ``bench/results/update_pairs.json``
and ``.md`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from datasets.update_pairs_data import POSITIVE, SHAPES_NEGATIVE
from harness import (
    PRINCIPAL,
    RESULTS_DIR,
    machine_header,
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

DEFAULT_PAIRS = Path(__file__).resolve().parent / "data" / "updates" / "pairs.json"
AS_OF = datetime(2026, 6, 1, 12, tzinfo=UTC)
OLDER_DAYS, NEWER_DAYS = 90, 1
NOISE_DAYS = (75, 40, 12)  # the everyday memories fall between the two
TOP_K = 10
DECAYS = {"decay1": 1.0, "default": None}  # None: the command's default time_decay
# the precision set's negatives, then those only the shapes set has
# (``bench/datasets/update_pairs_data.py --shapes``)
NEGATIVE = SHAPES_NEGATIVE
FALSE_UPDATE_TARGET, RECALL_TARGET = 0.01, 0.95
ROW_FIELDS = ("id", "lang", "split", "category", "negative", "attribute", "newer_has_cue")


def _store(service: MemoryService, user_id: str, pair: dict[str, Any]) -> tuple[str, str]:
    """The pair's memories stored as the user's; the ids of the older and the newer."""
    dated = [
        *zip(pair["noise"], NOISE_DAYS, strict=False),
        (pair["older"], OLDER_DAYS),
        (pair["newer"], NEWER_DAYS),
    ]
    items = [BatchItem(content=text, occurred_at=AS_OF - timedelta(days=d)) for text, d in dated]
    outcomes = service.store_batch(PRINCIPAL, StoreBatchCommand(user_id=user_id, items=items))
    return outcomes[-2].memory_id, outcomes[-1].memory_id


def _retrieve(
    service: MemoryService, user_id: str, question: str, decay: float | None, current: bool
) -> list[Any]:
    fields: dict[str, Any] = {"time_decay": decay} if decay is not None else {}
    command = RetrieveCommand(
        user_id=user_id,
        query=question,
        top_k=TOP_K,
        as_of=AS_OF,
        kinds=[MemoryKind.EPISODIC],
        current_only=current,
        **fields,
    )
    return list(service.retrieve(PRINCIPAL, command).results)


def _rank(results: Sequence[Any], memory_id: str) -> int | None:
    return next((i for i, r in enumerate(results) if r.memory_id == memory_id), None)


def retrieve_measures(
    service: MemoryService, user_id: str, question: str, older: str, newer: str
) -> dict[str, dict[str, Any]]:
    """Per time decay: marked, first_lost, newer_first and the ranks seen."""
    out: dict[str, dict[str, Any]] = {}
    for name, decay in DECAYS.items():
        served = _retrieve(service, user_id, question, decay, current=True)
        relevance = _retrieve(service, user_id, question, decay, current=False)
        old_result = next((r for r in served if r.memory_id == older), None)
        ranks = {"older": _rank(served, older), "newer": _rank(served, newer)}
        plain = {"older": _rank(relevance, older), "newer": _rank(relevance, newer)}
        out[name] = {
            "marked": bool(
                old_result and old_result.updated_later and old_result.superseded_by == newer
            ),
            "marked_by_other": bool(
                old_result and old_result.updated_later and old_result.superseded_by != newer
            ),
            "first_lost": plain["older"] == 0 and ranks["newer"] == 0,
            "newer_first": ranks["newer"] == 0,
            "ranks": ranks,
            "relevance_ranks": plain,
        }
    return out


def reflect_measures(
    service: MemoryService, user_id: str, older: str, newer: str
) -> dict[str, Any]:
    """One reflection, then whether a fact of the older statement ends superseded by one of
    the newer memory (seen from the listed facts' statuses and sources)."""
    service.reflect(PRINCIPAL, ReflectCommand(user_id=user_id))
    facts = service.list_memories(
        PRINCIPAL, ListMemoriesCommand(user_id=user_id, kind=MemoryKind.SEMANTIC, limit=50)
    ).results
    by_id = {f["memory_id"]: f for f in facts}
    from_older = [f for f in facts if older in f["source_memory_ids"]]
    superseded = [  # by a fact of the newer memory, or by the newer memory itself
        f
        for f in from_older
        if f["status"] == "superseded"
        and (
            f.get("superseded_by") == newer
            or newer in by_id.get(f.get("superseded_by") or "", {}).get("source_memory_ids", [])
        )
    ]
    role = {older: "older", newer: "newer"}  # of a fact's sources; the rest are noise
    return {
        "older_fact": bool(from_older),
        "reflect_superseded": bool(superseded),
        "facts": [
            {k: f[k] for k in ("content", "topic", "status")}
            | {"from": [role.get(s, "noise") for s in f["source_memory_ids"]]}
            for f in facts
        ],
    }


def run_pair(service: MemoryService, pair: dict[str, Any], reflect: bool) -> dict[str, Any]:
    user_id = f"pair-{pair['id']}-{time.time_ns()}"
    older, newer = _store(service, user_id, pair)
    row: dict[str, Any] = {k: pair[k] for k in ROW_FIELDS}
    row["retrieve"] = retrieve_measures(service, user_id, pair["question"], older, newer)
    if reflect:
        row.update(reflect_measures(service, user_id, older, newer))
        if row["reflect_superseded"] != row["negative"]:
            del row["facts"]  # the facts are kept for the pairs reflection got wrong
    return row


# --- summaries ---------------------------------------------------------------------------

MEASURES: dict[str, Callable[[dict[str, Any]], bool | None]] = {
    "marked (decay 1.0)": lambda r: r["retrieve"]["decay1"]["marked"],
    "first lost (decay 1.0)": lambda r: r["retrieve"]["decay1"]["first_lost"],
    "marked (default decay)": lambda r: r["retrieve"]["default"]["marked"],
    "first lost (default decay)": lambda r: r["retrieve"]["default"]["first_lost"],
    "reflect superseded": lambda r: r.get("reflect_superseded"),
}


def _rate(values: Sequence[bool | None]) -> dict[str, Any] | None:
    counted = [v for v in values if v is not None]
    if not counted:
        return None
    return {
        "rate": round(sum(counted) / len(counted), 4),
        "hits": sum(counted),
        "pairs": len(counted),
    }


def by_group(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every measure per language × category × split."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["lang"], row["category"], row["split"])].append(row)
    order = {c: i for i, c in enumerate(NEGATIVE + POSITIVE)}
    out = []
    for (lang, category, split), members in sorted(
        groups.items(), key=lambda kv: (kv[0][0], order[kv[0][1]], kv[0][2])
    ):
        measures = {name: _rate([m(r) for r in members]) for name, m in MEASURES.items()}
        out.append(
            {"lang": lang, "category": category, "split": split, "pairs": len(members)}
            | {"measures": measures}
        )
    return out


def headline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """False-update rate over negatives and recall over genuine updates, at retrieve
    (time_decay 1.0, and the default) and at reflect; per split × language and overall."""
    keys: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        for split in (row["split"], "all"):
            for lang in (row["lang"], "all"):
                keys[(split, lang)].append(row)
    out = []
    for (split, lang), members in sorted(keys.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        negatives = [r for r in members if r["negative"]]
        positives = [r for r in members if not r["negative"]]
        entry: dict[str, Any] = {"split": split, "lang": lang}
        for label, measure in (
            ("retrieve (decay 1.0)", MEASURES["marked (decay 1.0)"]),
            ("retrieve (default decay)", MEASURES["marked (default decay)"]),
            ("reflect", MEASURES["reflect superseded"]),
        ):
            entry[f"false update, {label}"] = _rate([measure(r) for r in negatives])
            entry[f"recall, {label}"] = _rate([measure(r) for r in positives])
        out.append(entry)
    return out


def _cell(measure: dict[str, Any] | None) -> str:
    if not measure:
        return "-"
    return f"{measure['rate']:.1%} ({measure['hits']}/{measure['pairs']})"


def tables(groups: list[dict[str, Any]], summary: list[dict[str, Any]]) -> tuple[str, str]:
    group_table = markdown_table(
        ["lang", "category", "split", "pairs", *MEASURES],
        [
            [g["lang"], g["category"], g["split"], g["pairs"]]
            + [_cell(g["measures"][m]) for m in MEASURES]
            for g in groups
        ],
    )
    columns = [c for c in summary[0] if c not in ("split", "lang")] if summary else []
    summary_table = markdown_table(
        ["split", "lang", *columns],
        [[e["split"], e["lang"], *[_cell(e[c]) for c in columns]] for e in summary],
    )
    return group_table, summary_table


def select(pairs: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The pairs of ``--lang`` and ``--split``."""
    return [
        p
        for p in pairs
        if (args.lang is None or p["lang"] == args.lang)
        and (args.split is None or p["split"] == args.split)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=Path, default=DEFAULT_PAIRS)
    parser.add_argument("--lang", choices=["en", "zh"], default=None)
    parser.add_argument("--split", choices=["fit", "held", "shapes"], default=None)
    parser.add_argument("--no-reflect", action="store_true", help="retrieve measures only")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "update_pairs.json")
    args = parser.parse_args()
    pairs = select(json.loads(args.pairs.read_text(encoding="utf-8"))["pairs"], args)
    info = machine_info()
    began = time.monotonic()
    rows: list[dict[str, Any]] = []
    with temporary_service("update-pairs-") as service:
        for number, pair in enumerate(pairs, 1):
            rows.append(run_pair(service, pair, not args.no_reflect))
            if number % 50 == 0:
                seconds = time.monotonic() - began
                print(f"  {number}/{len(pairs)} pairs, {seconds:.0f} s", file=sys.stderr)
    seconds = round(time.monotonic() - began, 1)
    groups, summary = by_group(rows), headline(rows)
    group_table, summary_table = tables(groups, summary)
    command = "python " + " ".join(sys.argv)
    print(group_table, "", summary_table, sep="\n")
    print(f"\n{len(rows)} pairs in {seconds} s ({seconds / max(len(rows), 1):.2f} s a pair)")
    write_json(
        args.out,
        {
            "benchmark": "update pairs (precision and recall of updated_later and supersede)",
            "command": command,
            "machine": info,
            "as_of": AS_OF.isoformat(),
            "pairs": len(rows),
            "seconds": seconds,
            "targets": {"false_update_max": FALSE_UPDATE_TARGET, "recall_min": RECALL_TARGET},
            "summary": summary,
            "groups": groups,
            "rows": rows,
        },
    )
    args.out.with_suffix(".md").write_text(
        f"# Update pairs\n\n`{command}`: {len(rows)} pairs in {seconds} s\n\n"
        f"{machine_header(info)}\n\n"
        f"False-update rate over negatives (target <= {FALSE_UPDATE_TARGET:.0%}) and recall "
        f"over genuine updates (target >= {RECALL_TARGET:.0%}):\n\n{summary_table}\n\n"
        f"Per language, category and split:\n\n{group_table}\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
