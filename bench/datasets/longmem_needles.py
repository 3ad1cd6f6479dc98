"""The long-memory benchmark's needles: facts stated once, and the questions that ask for them.

A needle kind is one personal fact with slots ("My locker combination at the gym is
{combo}."), one or more questions asking for it in other words ("What are the numbers to
open my gym locker?"), the slot whose value answers it, and short chat turns on the same
topic that do not state it (distractors: a memory a question could wrongly land on).
Slot values are drawn from the pools below (numbers and codes made here; names, places and
things from the word lists of ``tables/longmem_needles.json``) with the dataset's seeded
``random.Random``. The kinds themselves are data: ``bench/data/longmem/needle_kinds.json``
(hand-written for this benchmark, like every text here).
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from datasets.tables import load_tables

TABLES = load_tables("longmem_needles")


@dataclass(frozen=True)
class NeedleKind:
    key: str
    needle: str  # format string over the slots
    questions: tuple[str, ...]  # paraphrases; one is drawn
    answer: str  # format string: the part of the needle a correct answer holds
    distractors: tuple[str, ...] = ()  # same topic, not the fact


@dataclass(frozen=True)
class Needle:
    key: str
    language: str
    text: str
    question: str
    answer: str
    distractor: str | None


def _digits(n: int) -> Callable[[random.Random], str]:
    return lambda r: "".join(r.choice(string.digits) for _ in range(n))


def _pick(values: list[str]) -> Callable[[random.Random], str]:
    return lambda r: r.choice(values)


def _combo(r: random.Random) -> str:
    return "-".join(f"{r.randrange(1, 60):02d}" for _ in range(3))


def _code(r: random.Random, letters: int, digits: int) -> str:
    head = "".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(letters))
    return head + "".join(r.choice(string.digits) for _ in range(digits))


def _en_phone(r: random.Random) -> str:
    return f"0{r.randrange(7100, 7999)} {r.randrange(100, 999)} {r.randrange(100, 999)}"


def _zh_phone(r: random.Random) -> str:
    return f"1{r.choice('3589')}{r.randrange(0, 10)}{r.randrange(10**7, 10**8)}"


ZH_PROVINCES = TABLES["ZH_PROVINCES"]

POOLS: dict[str, Callable[[random.Random], str]] = {
    "combo": _combo,
    "d1": lambda r: str(r.randrange(2, 6)),
    "d2": lambda r: str(r.randrange(12, 98)),
    "d3": _digits(3),
    "d4": _digits(4),
    "d6": _digits(6),
    "d9": _digits(9),
    "shoe": lambda r: str(r.randrange(28, 38)),
    "psi": lambda r: str(r.randrange(30, 38)),
    "bar": lambda r: f"{r.randrange(22, 26) / 10:.1f}",
    "price": lambda r: str(r.randrange(29, 89)),
    "zh_price": lambda r: str(r.randrange(150, 480)),
    "day": lambda r: str(r.randrange(1, 29)),
    "month_no": lambda r: str(r.randrange(1, 13)),
    "code": lambda r: _code(r, 2, 6),
    "booking": lambda r: _code(r, 3, 5),
    "wifi": lambda r: (
        r.choice(["sunflower", "otterpond", "maplehouse", "quietfox"]) + _digits(4)(r)
    ),
    "zh_wifi": lambda r: r.choice(["laojia", "xiaoyuan", "tianjing", "nanfeng"]) + _digits(4)(r),
    "en_plate": lambda r: f"{_code(r, 2, 2)} {_code(r, 3, 0)}",
    "zh_plate": lambda r: r.choice(ZH_PROVINCES) + _code(r, 1, 0) + "·" + _code(r, 1, 4),
    "en_phone": _en_phone,
    "zh_phone": _zh_phone,
    "letter": lambda r: r.choice("ABCDEFGH"),
    "year": lambda r: str(r.randrange(2009, 2022)),
    # names, places, things: one value drawn from the pool's word list
    **{name: _pick(values) for name, values in TABLES["WORD_POOLS"].items()},
}

KINDS_FILE = Path(__file__).resolve().parents[1] / "data" / "longmem" / "needle_kinds.json"


def load_kinds(path: Path = KINDS_FILE) -> dict[str, tuple[NeedleKind, ...]]:
    """The hand-written needle kinds by language ("en", "zh"), one JSON object each."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {
        language: tuple(
            NeedleKind(
                key=item["key"],
                needle=item["needle"],
                questions=tuple(item["questions"]),
                answer=item["answer"],
                distractors=tuple(item.get("distractors", ())),
            )
            for item in items
        )
        for language, items in raw.items()
    }


def make_needle(kind: NeedleKind, language: str, rng: random.Random) -> Needle:
    """The kind with its slots filled (each slot drawn once, left to right)."""
    names = [
        name
        for text in (kind.needle, *kind.questions, *kind.distractors)
        for _, name, _, _ in string.Formatter().parse(text)
        if name
    ]
    values = {name: POOLS[name](rng) for name in dict.fromkeys(names)}
    question = rng.choice(kind.questions).format(**values)
    distractor = rng.choice(kind.distractors).format(**values) if kind.distractors else None
    return Needle(
        key=kind.key,
        language=language,
        text=kind.needle.format(**values),
        question=question,
        answer=kind.answer.format(**values),
        distractor=distractor,
    )
