"""The remarks dev set's builder: hand-written sources to ``remarks_{zh,en}.json``, seeded.

The sources (``bench/data/remarks/source_{zh,en}.txt``) hold each user's dated first-person
memories and the remarks the user makes long after them, in a line form quick to write and
read (below). This module parses them, gives every memory its time (a day of the month where
the source gives only the month, and a time of day, drawn from ``random.Random`` seeded by
``SEED`` and the user, so two builds give the same files), ids in time order and one session
a day, checks the set (the checks ``problems`` lists) and writes the JSON that
``events_devset.load`` reads (``remarks_devset.py``).

Source form, one item a line (``#`` starts a comment line, blank lines are skipped):

    @ en-1 2026-10-10 | a child of eight in Sheffield ...     a user, the remarks' date
    2024-12-25 {scooter} Father Christmas brought me ...       a memory (tag optional)
    2025-04 I fell off my scooter outside the shop ...          the day drawn by the seed
    > scooter ~scooter2,wheels | Can Ivy have a scooter ...     a remark: evidence tags,
                                                                 then ~ decoy tags

A remark's evidence is the memory (or memories) it evokes; its decoys are memories about
the same thing (object, person, place) that a reader must not take for it. The category is
``later`` when a decoy is newer than the evidence (the newest mention is wrong), ``earlier``
when every decoy is older, ``plain`` when there is none.

    .venv/bin/python bench/datasets/remarks_data.py          # build both files, print their size
    .venv/bin/python bench/datasets/remarks_data.py --check  # check the sources, write nothing
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import REPO

DATA_DIR = REPO / "bench" / "data" / "remarks"
LANGUAGES = ("zh", "en")
SEED = 40
PROVENANCE = (
    "Written for the Hindsight project on 2026-12-06 (bench/data/remarks/source_{lang}.txt, "
    "built by bench/datasets/remarks_data.py); not drawn from, translated from or adapted from any "
    "dataset."
)
MEMORIES = (60, 120)  # a user's memories, inclusive
REMARKS = (8, 15)  # a user's remarks, inclusive
REMARKS_A_LANGUAGE = 60
MIN_AGE = timedelta(days=90)  # every evidence memory at least this much older than its remark
# words that date a remark: a remark is what the user says now, not a question about a time
DATE_WORDS = {
    "en": re.compile(
        r"\b(yesterday|today|tomorrow|tonight|ago|last (?:week|month|year|summer|winter|spring"
        r"|autumn)|(?:this|next) (?:week|month|year)|january|february|march|april|may|june|july"
        r"|august|september|october|november|december|monday|tuesday|wednesday|thursday|friday"
        r"|saturday|sunday|christmas|easter|halloween|20\d\d)\b",
        re.IGNORECASE,
    ),
    "zh": re.compile(
        r"昨天|前天|今天|明天|去年|前年|今年|明年|上个?月|下个?月|这个月|上周|下周|上星期|下星期"
        r"|星期|礼拜|周[一二三四五六日末]|[一二三四五六七八九十\d]+月|春节|国庆|中秋|元旦|20\d\d"
    ),
}
MEMORY_LINE = re.compile(r"^(\d{4}-\d{2}(?:-\d{2})?)\s+(?:\{([\w-]+)\}\s+)?(.+)$")
REMARK_LINE = re.compile(r"^>\s*([\w,-]+)\s*(?:~([\w,-]+))?\s*\|\s*(.+)$")
USER_LINE = re.compile(r"^@\s*([\w-]+)\s+(\d{4}-\d{2}-\d{2})\s*\|\s*(.+)$")


@dataclass
class SourceMemory:
    when: str  # YYYY-MM or YYYY-MM-DD
    tag: str | None
    text: str


@dataclass
class SourceRemark:
    evidence: list[str]
    decoys: list[str]
    text: str


@dataclass
class SourceUser:
    key: str
    as_of: date
    persona: str
    memories: list[SourceMemory] = field(default_factory=list)
    remarks: list[SourceRemark] = field(default_factory=list)


def parse(text: str) -> list[SourceUser]:
    """The users of one source file; a line of no known form is an error naming it."""
    users: list[SourceUser] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if m := USER_LINE.match(line):
            users.append(SourceUser(m[1], date.fromisoformat(m[2]), m[3].strip()))
        elif not users:
            raise ValueError(f"line {number}: a memory or remark before the first @ user line")
        elif m := MEMORY_LINE.match(line):
            users[-1].memories.append(SourceMemory(m[1], m[2], m[3].strip()))
        elif m := REMARK_LINE.match(line):
            decoys = m[2].split(",") if m[2] else []
            users[-1].remarks.append(SourceRemark(m[1].split(","), decoys, m[3].strip()))
        else:
            raise ValueError(f"line {number}: neither @ user, dated memory nor > remark: {line}")
    return users


def _day(when: str, rng: random.Random) -> date:
    if len(when) == len("2025-01-01"):
        return date.fromisoformat(when)
    return date.fromisoformat(f"{when}-{rng.randint(1, 28):02d}")


def build_language(language: str, users: list[SourceUser]) -> dict:
    """The JSON document of one language (``events_devset.load``'s form, plus each
    question's ``decoys`` and each user's ``persona``)."""
    out_users, questions = [], []
    for user in users:
        user_id = f"remarks-{user.key}"
        rng = random.Random(f"{SEED}-{user_id}")
        days = [_day(m.when, rng) for m in user.memories]
        order = sorted(range(len(user.memories)), key=lambda i: days[i])  # stable: source order
        memories, by_tag, when_of = [], {}, {}
        sessions: dict[date, str] = {}
        last: datetime | None = None
        for position, i in enumerate(order, 1):
            memory, day = user.memories[i], days[i]
            session = sessions.setdefault(day, f"{user_id}-s{len(sessions) + 1:02d}")
            start = datetime.combine(day, time(rng.randint(7, 20), rng.randint(0, 59)), UTC)
            if last is not None and last.date() == day:
                start = last + timedelta(minutes=rng.randint(2, 25))
            last = start
            memory_id = f"{user_id}-m{position:03d}"
            memories.append(
                {
                    "id": memory_id,
                    "session": session,
                    "occurred_at": start.isoformat(),
                    "text": memory.text,
                }
            )
            if memory.tag:
                by_tag[memory.tag] = memory_id
                when_of[memory_id] = start
        asked_at = datetime.combine(user.as_of, time(rng.randint(8, 20), 0), UTC)
        for n, remark in enumerate(user.remarks, 1):
            evidence = [by_tag[t] for t in remark.evidence]
            decoys = [by_tag[t] for t in remark.decoys]
            newest = max(when_of[e] for e in evidence)
            if not decoys:
                category = "plain"
            elif any(when_of[d] > newest for d in decoys):
                category = "later"
            else:
                category = "earlier"
            questions.append(
                {
                    "id": f"{user_id}-r{n:02d}",
                    "user_id": user_id,
                    "text": remark.text,
                    "evidence": evidence,
                    "decoys": decoys,
                    "category": category,
                    "asked_at": asked_at.isoformat(),
                }
            )
        out_users.append({"user_id": user_id, "persona": user.persona, "memories": memories})
    return {"_": PROVENANCE, "language": language, "users": out_users, "questions": questions}


def problems(language: str, users: list[SourceUser]) -> list[str]:
    """What is wrong with one language's sources (nothing: an empty list)."""
    found: list[str] = []
    texts: set[str] = set()
    for user in users:
        where = f"{language} {user.key}"
        found += _user_problems(where, user)
        for m in user.memories:
            if m.text in texts:
                found.append(f"{where}: memory repeated: {m.text}")
            texts.add(m.text)
        for r in user.remarks:
            found += [f"{where}: {p}: {r.text}" for p in _remark_problems(language, user, r)]
    if (remarks := sum(len(u.remarks) for u in users)) < REMARKS_A_LANGUAGE:
        found.append(f"{language}: {remarks} remarks, fewer than {REMARKS_A_LANGUAGE}")
    return found


def _user_problems(where: str, user: SourceUser) -> list[str]:
    found: list[str] = []
    tags = [m.tag for m in user.memories if m.tag]
    if len(tags) != len(set(tags)):
        found.append(f"{where}: a tag repeats")
    if not MEMORIES[0] <= len(user.memories) <= MEMORIES[1]:
        found.append(f"{where}: {len(user.memories)} memories, not {MEMORIES}")
    if not REMARKS[0] <= len(user.remarks) <= REMARKS[1]:
        found.append(f"{where}: {len(user.remarks)} remarks, not {REMARKS}")
    for m in user.memories:
        when = m.when if len(m.when) > 7 else f"{m.when}-01"
        if date.fromisoformat(when) >= user.as_of:
            found.append(f"{where}: memory after the remarks' date: {m.text}")
    return found


def _remark_problems(language: str, user: SourceUser, remark: SourceRemark) -> list[str]:
    when_of = {m.tag: m.when for m in user.memories if m.tag}
    if unknown := [t for t in remark.evidence + remark.decoys if t not in when_of]:
        return [f"unknown tags {unknown}"]
    found: list[str] = []
    if set(remark.evidence) & set(remark.decoys):
        found.append("a tag is both evidence and decoy")
    for t in remark.evidence:
        # a month-only date may fall on its 28th: check against the month's end
        when = when_of[t] if len(when_of[t]) > 7 else f"{when_of[t]}-28"
        if user.as_of - date.fromisoformat(when) < MIN_AGE:
            found.append(f"evidence {t} is under {MIN_AGE.days} days old")
    if DATE_WORDS[language].search(remark.text):
        found.append("a date word in the remark")
    if "?" in remark.text or "？" in remark.text:
        found.append("the remark is a question")
    return found


def sources(language: str, data_dir: Path = DATA_DIR) -> list[SourceUser]:
    return parse((data_dir / f"source_{language}.txt").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="check the sources only")
    args = parser.parse_args(argv)
    failed = False
    for language in LANGUAGES:
        users = sources(language)
        if found := problems(language, users):
            print("\n".join(found))
            failed = True
            continue
        data = build_language(language, users)
        memories = sum(len(u["memories"]) for u in data["users"])
        kinds = dict(Counter(q["category"] for q in data["questions"]))
        print(
            f"{language}: {len(users)} users, {memories} memories, "
            f"{len(data['questions'])} remarks ({kinds})"
        )
        if not args.check:
            target = DATA_DIR / f"remarks_{language}.json"
            target.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", "utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
