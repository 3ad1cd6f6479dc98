"""How much an assistant's turn weighs when the query does not address the assistant
(``Policy.assistant_weight``, ``core/speakers.py``).

The full system with the weight at several values (1: off, as before session 20) on the
dev sets given, next to plain BM25 and plain dense retrieval of the same run. Only the
chat set has assistant turns; on every other set each value ranks alike.

    .venv/bin/python bench/decisions/assistant_weight.py                  # chat: ~1 min
    .venv/bin/python bench/decisions/assistant_weight.py --weights 1,0.8 --sets chat,msc
"""

from __future__ import annotations

import argparse

from sweep import Variant, sweep_table

WEIGHTS = (1.0, 0.9, 0.85, 0.8, 0.7, 0.6)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="chat", help="comma-separated dev sets")
    parser.add_argument(
        "--weights", default=",".join(f"{w:g}" for w in WEIGHTS), help="comma-separated weights"
    )
    args = parser.parse_args(argv)
    weights = [float(x) for x in args.weights.split(",")]
    variants = [Variant(f"w={w:g}", {"assistant_weight": w}) for w in weights]
    print(sweep_table(variants, args.sets.split(",")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
