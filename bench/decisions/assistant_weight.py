"""How much an assistant's turn weighs when the query does not ask for the assistant's
words (``Policy.assistant_weight``, ``core/speakers.py``).

The full system with the weight at several values (1: off, as before session 20) on the
dev sets given, next to plain BM25 and plain dense retrieval of the same run. Only the
chat set has assistant turns; on every other set each value ranks alike. With
``--notes-as-assistant`` the events set is run once more with speakers: its notes about
the user ("User works night shifts…", "用户…") as the assistant's, the rest as the user's,
the shape where an assistant's turns are facts, not echoes.

    .venv/bin/python bench/decisions/assistant_weight.py                  # chat: ~1 min
    .venv/bin/python bench/decisions/assistant_weight.py --weights 1,0.8 --notes-as-assistant
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import events_devset
from sweep import Variant, sweep_table

WEIGHTS = (1.0, 0.9, 0.85, 0.8, 0.7, 0.6)
NOTE_STARTS = ("User", "用户")


def notes_as_assistant(**options: Any) -> events_devset.EventsSet:
    """The events set with speakers: notes about the user are the assistant's."""
    dataset = events_devset.load(**options)

    def spoken(event: events_devset.Event) -> events_devset.Event:
        note = event.text.strip().startswith(NOTE_STARTS)
        return dataclasses.replace(event, speaker="assistant" if note else "user")

    users = [
        dataclasses.replace(user, memories=[spoken(e) for e in user.memories])
        for user in dataset.users
    ]
    return dataclasses.replace(dataset, users=users)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="chat", help="comma-separated dev sets")
    parser.add_argument(
        "--weights", default=",".join(f"{w:g}" for w in WEIGHTS), help="comma-separated weights"
    )
    parser.add_argument(
        "--notes-as-assistant", action="store_true", help="also the events set with speakers"
    )
    args = parser.parse_args(argv)
    weights = [float(x) for x in args.weights.split(",")]
    variants = [Variant(f"w={w:g}", {"assistant_weight": w}) for w in weights]
    print(sweep_table(variants, args.sets.split(",")))
    if args.notes_as_assistant:
        print("\nevents, notes by the assistant:\n")
        print(sweep_table(variants, ["events"], load=notes_as_assistant))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
