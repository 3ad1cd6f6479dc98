"""Generated texts for the benchmarks: bilingual memories and queries, seeded.

The memories and queries are about half Chinese, half English, built from templates with
varied slot values (the word lists of ``datasets/tables/synthetic.json``) so that no two
memories are the same; ``variant`` appends a circumstance to a text (same meaning,
different words) when more memories are needed than the templates give.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from datasets.tables import load_tables

TABLES = load_tables("synthetic")

# --- generated memories ------------------------------------------------------------------

ZH_FOODS = TABLES["ZH_FOODS"]
ZH_CITIES = TABLES["ZH_CITIES"]
ZH_DRINKS = TABLES["ZH_DRINKS"]
ZH_NAMES = TABLES["ZH_NAMES"]
ZH_RELATIONS = TABLES["ZH_RELATIONS"]
ZH_HOBBIES = TABLES["ZH_HOBBIES"]
ZH_TIMES = TABLES["ZH_TIMES"]
ZH_MOODS = TABLES["ZH_MOODS"]
ZH_REASONS = TABLES["ZH_REASONS"]
ZH_TASKS = TABLES["ZH_TASKS"]
ZH_COMPANIES = TABLES["ZH_COMPANIES"]
ZH_JOBS = TABLES["ZH_JOBS"]
ZH_PETS = TABLES["ZH_PETS"]
ZH_PLACES = TABLES["ZH_PLACES"]
ZH_MOMENTS = TABLES["ZH_MOMENTS"]

EN_FOODS = TABLES["EN_FOODS"]
EN_CITIES = TABLES["EN_CITIES"]
EN_DRINKS = TABLES["EN_DRINKS"]
EN_NAMES = TABLES["EN_NAMES"]
EN_RELATIONS = TABLES["EN_RELATIONS"]
EN_HOBBIES = TABLES["EN_HOBBIES"]
EN_TIMES = TABLES["EN_TIMES"]
EN_MOODS = TABLES["EN_MOODS"]
EN_REASONS = TABLES["EN_REASONS"]
EN_TASKS = TABLES["EN_TASKS"]
EN_JOBS = TABLES["EN_JOBS"]
EN_PETS = TABLES["EN_PETS"]
EN_PLACES = TABLES["EN_PLACES"]
EN_MOMENTS = TABLES["EN_MOMENTS"]


# one (text, category) template per kind of memory (``ZH_TEMPLATES``, ``EN_TEMPLATES``); a
# slot ``{ZH_FOODS}`` is a value drawn from that word list, ``{3-12}`` a whole number drawn
# by ``randrange(3, 12)`` (the high end excluded); the slots are drawn left to right
ZH_TEMPLATES: list[list[str]] = TABLES["ZH_TEMPLATES"]
EN_TEMPLATES: list[list[str]] = TABLES["EN_TEMPLATES"]
_SLOT = re.compile(r"\{(\w+|\d+-\d+)\}")


def _fill(template: str, rng: random.Random) -> str:
    """``template`` with each slot drawn, left to right."""

    def draw(slot: re.Match[str]) -> str:
        name = slot.group(1)
        if name[0].isdigit():
            low, high = name.split("-")
            return str(rng.randrange(int(low), int(high)))
        return str(rng.choice(TABLES[name]))

    return _SLOT.sub(draw, template)


def _memory(rng: random.Random, templates: list[list[str]]) -> tuple[str, str]:
    text, category = templates[rng.randrange(len(templates))]
    return _fill(text, rng), category


def generate_memories(count: int, seed: int, zh_share: float = 0.5) -> list[tuple[str, str]]:
    """``count`` distinct (content, category) pairs, about half Chinese (5 to ~60
    characters) and the rest English (5 to ~60 words)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    attempts = 0
    while len(out) < count:
        attempts += 1
        if attempts > count * 200:
            raise RuntimeError(f"could not generate {count} distinct memories")
        for _retry in range(8):  # short templates run out of slot values first
            templates = ZH_TEMPLATES if rng.random() < zh_share else EN_TEMPLATES
            text, category = _memory(rng, templates)
            if text not in seen:
                break
        else:
            # add a distinguishing detail rather than give up on the template
            text = variant(text, rng.randrange(10_000))
            if text in seen:
                continue
        seen.add(text)
        out.append((text, category))
    return out


def _is_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def variant(text: str, number: int) -> str:
    """``text`` plus a short circumstance (place, time of day, a count): same meaning."""
    chinese = _is_chinese(text)
    places, moments = (ZH_PLACES, ZH_MOMENTS) if chinese else (EN_PLACES, EN_MOMENTS)
    place = places[number % len(places)]
    moment = moments[(number // len(places)) % len(moments)]
    rest = number // (len(places) * len(moments))
    if chinese:
        return text + f"（{moment}{place}说的" + (f"，第{rest + 1}次提到）" if rest else "）")
    return text + f" (said {moment} {place}" + (f", mention {rest + 1})" if rest else ")")


# --- generated queries -------------------------------------------------------------------

# paraphrases: no keyword in common with the memories they should find
PARAPHRASE_QUERIES = TABLES["PARAPHRASE_QUERIES"]


def generate_queries(count: int, seed: int) -> list[str]:
    """Bilingual queries: about half reuse memory keywords, the rest are paraphrases."""
    rng = random.Random(seed)
    c = rng.choice
    keyword_makers = [
        lambda: f"{c(ZH_FOODS)}过敏",
        lambda: f"去{c(ZH_CITIES)}出差",
        lambda: f"喝{c(ZH_DRINKS)}",
        lambda: f"给{c(ZH_NAMES)}打电话",
        lambda: f"{c(ZH_TIMES)}的会议",
        lambda: f"{c(ZH_HOBBIES)}",
        lambda: f"allergic to {c(EN_FOODS)}",
        lambda: f"trip to {c(EN_CITIES)}",
        lambda: f"call {c(EN_NAMES)}",
        lambda: f"{c(EN_HOBBIES)} every week",
        lambda: f"{c(EN_DRINKS)}",
        lambda: f"meeting {c(EN_TIMES)}",
    ]
    return [
        c(keyword_makers)() if rng.random() < 0.5 else c(PARAPHRASE_QUERIES) for _ in range(count)
    ]
