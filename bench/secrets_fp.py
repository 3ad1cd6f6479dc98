"""False positives and cost of the store-time secret filter on the LoCoMo turns.

Every LoCoMo turn (ordinary conversation: no secret in it) is run through
``hindsight.core.secrets.find_secrets`` as the store path runs it; every find is a false
positive. Prints the count (target 0), each false positive with its turn, and the cost
per text (the median of a few passes over all turns), then the same for a set of texts
that do hold secrets (each must be found).

    .venv/bin/python bench/secrets_fp.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from datasets.tables import load_tables
from locomo_data import load_locomo

from hindsight.core.secrets import find_secrets, redact_secrets

REPO = Path(__file__).resolve().parents[1]
LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
PASSES = 5

# real-looking secrets (the documented example values and made-up ones), English and Chinese
POSITIVES = tuple(load_tables("secrets_fp")["POSITIVES"])


def per_text_microseconds(texts: list[str]) -> float:
    """Median over passes of the mean time per text of ``redact_secrets``."""
    timings = []
    for _ in range(PASSES):
        started = time.perf_counter()
        for text in texts:
            redact_secrets(text)
        timings.append((time.perf_counter() - started) / len(texts) * 1e6)
    return statistics.median(timings)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    conversations = load_locomo(LOCOMO)
    texts = [turn.content for conversation in conversations for turn in conversation.turns]
    false_positives = [(text, find) for text in texts for find in find_secrets(text)]
    for text, find in false_positives:
        print(f"  false positive {find.kind}: {text[find.start : find.end]!r} in {text[:120]!r}")
    missed = [text for text in POSITIVES if not find_secrets(text)]
    for text in missed:
        print(f"  missed: {text!r}")
    print(f"LoCoMo turns scanned: {len(texts)}")
    print(f"false positives on LoCoMo: {len(false_positives)}")
    print(f"secret samples found: {len(POSITIVES) - len(missed)}/{len(POSITIVES)}")
    print(f"cost per LoCoMo turn: {per_text_microseconds(texts):.1f} µs (median of {PASSES})")
    long_text = " ".join(texts[:400])  # a long memory: ~{len} characters
    print(
        f"cost per long text ({len(long_text):,} chars): "
        f"{per_text_microseconds([long_text]) / 1000:.2f} ms"
    )
    return 0 if not false_positives and not missed else 1


if __name__ == "__main__":
    raise SystemExit(main())
