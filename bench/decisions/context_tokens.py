"""How long a turn before may be and still be a reply's context (``Policy.context_tokens``).

The full system (``bench/devsets.py``'s store and retrieve path, default ranking) with the
turn before as context only when it is at most ``T`` tokens, for several ``T`` (``0``:
any length, as before session 19), on the dev sets given. Prints recall@10 / hit@5 of
each ``T`` next to plain BM25 and plain dense retrieval of the same run.

    .venv/bin/python bench/decisions/context_tokens.py                  # chat: ~1 min
    .venv/bin/python bench/decisions/context_tokens.py --sets chat,msc,locomo,longmem,events

The ablation's ``context_tokens=0`` row (``bench/results/devsets.md``) is the default
against any length on every set.
"""

from __future__ import annotations

import argparse

from sweep import Variant, sweep_table

LIMITS = (0, 256, 128, 64)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="chat", help="comma-separated dev sets")
    parser.add_argument(
        "--limits", default=",".join(map(str, LIMITS)), help="comma-separated token limits"
    )
    args = parser.parse_args(argv)
    limits = [int(x) for x in args.limits.split(",")]
    variants = [Variant(f"T={t}", stored=(("context_tokens", t),)) for t in limits]
    print(sweep_table(variants, args.sets.split(",")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
