"""Short chat turns for the long-memory benchmark, and the words around a long paste.

English short turns are what one speaker said in Multi-Session Chat dialogues (MSC, the
validation split under /work/shared/data/msc, see its README), mixed with requests to an
assistant written for this benchmark; Chinese short turns come from templates written for
this benchmark (the requests, templates and word lists are in ``tables/longmem_chat.json``).
Both are drawn with the dataset's seeded ``random.Random``.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

from datasets.longmem_code import Document
from datasets.tables import load_tables

MSC_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "msc"
MSC_FILES = tuple(f"personasummary_session{n}_valid.jsonl" for n in (1, 2, 3, 4))
TABLES = load_tables("longmem_chat")

EN_REQUESTS = TABLES["EN_REQUESTS"]
ZH_CHAT = TABLES["ZH_CHAT"]
WORDS = TABLES["WORDS"]

INTROS = TABLES["INTROS"]
THINGS = TABLES["THINGS"]
OUTROS = TABLES["OUTROS"]


def load_msc_dialogues(directory: Path = MSC_DIR) -> list[list[str]]:
    """Every MSC dialogue as the list of its utterances, file by file, line by line."""
    dialogues = []
    for name in MSC_FILES:
        with (directory / name).open(encoding="utf-8") as lines:
            for line in lines:
                dialogue = json.loads(line)["dialog"]
                dialogues.append([turn["text"].strip() for turn in dialogue])
    return dialogues


def _fill(rng: random.Random, language: str, template: str) -> str:
    slots = {key: rng.choice(values) for key, values in WORDS[language].items()}
    return template.format(n=rng.randrange(3, 12), **slots)


def short_turns(
    rng: random.Random, language: str, count: int, dialogues: list[list[str]]
) -> list[str]:
    """``count`` short chat turns: English from MSC (one side of a few dialogues) and
    assistant requests; Chinese from templates. No two are the same."""
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < count:
        if language == "en" and rng.random() < 0.7:
            dialogue = rng.choice(dialogues)
            side = dialogue[rng.randrange(2) :: 2]
            picked = [t for t in side if 15 <= len(t) <= 300][: rng.randrange(2, 5)]
        else:
            templates = EN_REQUESTS if language == "en" else ZH_CHAT
            picked = [_fill(rng, language, rng.choice(templates))]
        for text in picked:
            if text not in seen and len(out) < count:
                seen.add(text)
                out.append(text)
    return out


def intro(rng: random.Random, language: str, kind: str) -> str:
    thing = THINGS[language][kind.split("-")[0]]
    return rng.choice(INTROS[language]).format(thing=thing)


def outro(rng: random.Random, language: str) -> str:
    return rng.choice(OUTROS[language])


def chat_export(
    rng: random.Random,
    language: str,
    chars: int,
    start: datetime,
    dialogues: list[list[str]],
) -> Document:
    """A pasted group chat: timestamped lines, a dialogue (or a few templates) per block."""
    names = ["Sam", "Alex"] if language == "en" else ["阿杰", "小雨"]
    blocks: list[str] = []
    when = start
    while sum(len(b) + 1 for b in blocks) < chars:
        if language == "en":
            texts = rng.choice(dialogues)
        else:
            texts = [_fill(rng, language, rng.choice(ZH_CHAT)) for _ in range(rng.randrange(4, 9))]
        lines = []
        when += timedelta(hours=rng.randrange(2, 30))
        for number, text in enumerate(texts):
            when += timedelta(minutes=rng.randrange(1, 9))
            lines.append(f"[{when:%Y-%m-%d %H:%M}] {names[number % 2]}: {text}")
        blocks.append("\n".join(lines))
    return Document("chat", blocks, joiner="\n")
