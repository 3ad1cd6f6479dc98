"""Generated texts for the benchmarks: bilingual memories and queries, seeded.

The memories and queries are about half Chinese, half English, built from templates with
varied slot values (the word lists of ``datasets/tables/synthetic.json``) so that no two
memories are the same; ``variant`` appends a circumstance to a text (same meaning,
different words) when more memories are needed than the templates give.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
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


Template = Callable[[random.Random], tuple[str, str]]

# one (text, category) maker per kind of memory; the slots are drawn left to right
_ZH_TEMPLATES: tuple[Template, ...] = (
    lambda r: (f"我对{r.choice(ZH_FOODS)}过敏", "constraint"),
    lambda r: (f"我对{r.choice(ZH_FOODS)}过敏，吃了会起疹子，点菜时请避开", "constraint"),
    lambda r: (f"喜欢喝{r.choice(ZH_DRINKS)}", "preference"),
    lambda r: (f"我每天早上都要喝一杯{r.choice(ZH_DRINKS)}，不加糖，少冰", "preference"),
    lambda r: (
        f"{r.choice(ZH_TIMES)}要去{r.choice(ZH_CITIES)}出差，帮我订靠窗的座位和离会场近的酒店，"
        f"预算每晚{r.randrange(3, 12) * 100}元以内",
        "task",
    ),
    lambda r: (
        f"提醒我{r.choice(ZH_TIMES)}给{r.choice(ZH_RELATIONS)}{r.choice(ZH_NAMES)}打电话",
        "task",
    ),
    lambda r: (f"今天心情{r.choice(ZH_MOODS)}，因为{r.choice(ZH_REASONS)}", "mood"),
    lambda r: (
        f"我在{r.choice(ZH_COMPANIES)}做{r.choice(ZH_JOBS)}，已经{r.randrange(1, 15)}年了",
        "fact",
    ),
    lambda r: (f"我家的狗叫{r.choice(ZH_PETS)}，今年{r.randrange(1, 14)}岁，怕打雷", "fact"),
    lambda r: (f"最近迷上了{r.choice(ZH_HOBBIES)}，每周{r.randrange(1, 6)}次", "preference"),
    lambda r: (f"{r.choice(ZH_TIMES)}之前必须{r.choice(ZH_TASKS)}，别让我忘了", "task"),
    lambda r: (
        f"{r.choice(ZH_RELATIONS)}{r.choice(ZH_NAMES)}{r.choice(ZH_TIMES)}过生日，想送她一本关于"
        f"{r.choice(ZH_HOBBIES)}的书，再订一家{r.choice(ZH_CITIES)}菜馆",
        "task",
    ),
    lambda r: (f"会议改到{r.choice(ZH_TIMES)}下午{r.randrange(1, 6)}点", "task"),
    lambda r: (
        f"用户说{r.choice(ZH_MOMENTS)}{r.choice(ZH_PLACES)}不方便接电话，有事先发消息，"
        f"紧急情况打给{r.choice(ZH_RELATIONS)}{r.choice(ZH_NAMES)}",
        "preference",
    ),
)
_EN_TEMPLATES: tuple[Template, ...] = (
    lambda r: (f"User is allergic to {r.choice(EN_FOODS)}", "constraint"),
    lambda r: (
        f"I am seriously allergic to {r.choice(EN_FOODS)}, so please check every restaurant "
        f"menu and warn me before ordering anything that might contain it",
        "constraint",
    ),
    lambda r: (f"I prefer {r.choice(EN_DRINKS)} in the morning", "preference"),
    lambda r: (
        f"Flying to {r.choice(EN_CITIES)} {r.choice(EN_TIMES)} for a conference; book an aisle "
        f"seat and a hotel under {r.randrange(8, 30) * 10} dollars a night close to the venue",
        "task",
    ),
    lambda r: (
        f"Remind me to call my {r.choice(EN_RELATIONS)} {r.choice(EN_NAMES)} {r.choice(EN_TIMES)}",
        "task",
    ),
    lambda r: (f"Feeling {r.choice(EN_MOODS)} today because {r.choice(EN_REASONS)}", "mood"),
    lambda r: (
        f"I work as a {r.choice(EN_JOBS)} and have done so for {r.randrange(1, 20)} years",
        "fact",
    ),
    lambda r: (
        f"My dog {r.choice(EN_PETS)} is {r.randrange(1, 14)} and hates thunderstorms",
        "fact",
    ),
    lambda r: (
        f"Lately I have been getting into {r.choice(EN_HOBBIES)}, about {r.randrange(1, 6)} "
        f"times a week",
        "preference",
    ),
    lambda r: (f"I need to {r.choice(EN_TASKS)} before {r.choice(EN_TIMES)}", "task"),
    lambda r: (
        f"My {r.choice(EN_RELATIONS)} {r.choice(EN_NAMES)} has a birthday {r.choice(EN_TIMES)}; "
        f"I want to get a book about {r.choice(EN_HOBBIES)} and reserve a table somewhere "
        f"quiet in {r.choice(EN_CITIES)}, nothing with {r.choice(EN_FOODS)} on the menu, for "
        f"{r.randrange(2, 9)} people at {r.randrange(6, 10)} pm",
        "task",
    ),
    lambda r: (f"Meeting moved to {r.choice(EN_TIMES)} at {r.randrange(1, 6)} pm", "task"),
    lambda r: (
        f"Do not call me {r.choice(EN_MOMENTS)} when I am {r.choice(EN_PLACES)}; send a message "
        f"instead, and for emergencies contact my {r.choice(EN_RELATIONS)} {r.choice(EN_NAMES)}",
        "preference",
    ),
)


def _zh_memory(rng: random.Random) -> tuple[str, str]:
    """One Chinese memory and its category; 5 to ~60 characters."""
    return _ZH_TEMPLATES[rng.randrange(len(_ZH_TEMPLATES))](rng)


def _en_memory(rng: random.Random) -> tuple[str, str]:
    """One English memory and its category; 5 to ~60 words."""
    return _EN_TEMPLATES[rng.randrange(len(_EN_TEMPLATES))](rng)


def generate_memories(count: int, seed: int, zh_share: float = 0.5) -> list[tuple[str, str]]:
    """``count`` distinct (content, category) pairs, about half Chinese."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    attempts = 0
    while len(out) < count:
        attempts += 1
        if attempts > count * 200:
            raise RuntimeError(f"could not generate {count} distinct memories")
        for _retry in range(8):  # short templates run out of slot values first
            text, category = _zh_memory(rng) if rng.random() < zh_share else _en_memory(rng)
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
    if _is_chinese(text):
        place = ZH_PLACES[number % len(ZH_PLACES)]
        moment = ZH_MOMENTS[(number // len(ZH_PLACES)) % len(ZH_MOMENTS)]
        rest = number // (len(ZH_PLACES) * len(ZH_MOMENTS))
        suffix = f"（{moment}{place}说的" + (f"，第{rest + 1}次提到）" if rest else "）")
        return text + suffix
    place = EN_PLACES[number % len(EN_PLACES)]
    moment = EN_MOMENTS[(number // len(EN_PLACES)) % len(EN_MOMENTS)]
    rest = number // (len(EN_PLACES) * len(EN_MOMENTS))
    suffix = f" (said {moment} {place}" + (f", mention {rest + 1})" if rest else ")")
    return text + suffix


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
    queries = []
    for _ in range(count):
        if rng.random() < 0.5:
            queries.append(c(keyword_makers)())
        else:
            queries.append(c(PARAPHRASE_QUERIES))
    return queries
