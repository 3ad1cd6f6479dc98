"""Chinese conversations between named people, for the unknown-names check (negatives.py).

How it is made (deterministic; nothing is tuned on it): the 48 dialogues of
``data/extraction_zh/dialogues.txt`` (written for this repository, see its README), six
a user, so eight users. Each dialogue's two speakers get names drawn once, without
repeats, from common surnames and given names (``SURNAMES`` x ``GIVEN_NAMES``, seeded),
so no name is in two users' histories. Each turn is stored as "王芳: 今天……" with its
speaker, its dialogue as the session, the user's dialogues three days apart. Questions:
each fact annotated on a turn, said in the first person ("我是护士。"), asked about its
speaker by name ("王芳是护士吗？"); its evidence is that turn. Facts about "我们" or
without "我" are skipped.

The names are a fair draw, not chosen to be found: jieba does not tag every one as a name
(a given name that is a common word, e.g. "浩然"), and those questions are not gated.

    .venv/bin/python bench/datasets/names_zh.py    # prints the set's size and sample questions
"""

from __future__ import annotations

import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extraction_data import load_zh
from locomo_data import Conversation, Question, Turn

from datasets.tables import load_tables

SEED = 20261205
SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹"
GIVEN_NAMES = load_tables("names_zh")["GIVEN_NAMES"]
DIALOGUES_PER_USER = 6
START = datetime(2025, 3, 1, 19, 0, tzinfo=UTC)
GAP = timedelta(days=3)
CATEGORY = 0
CATEGORIES = {CATEGORY: "fact of a named speaker"}


def question(fact: str, name: str) -> str | None:
    """The first-person fact asked about its speaker by name (None: not first person)."""
    fact = fact.strip().rstrip("。.")
    if "我" not in fact or "我们" in fact:
        return None
    return fact.replace("我", name) + "吗？"


def build() -> list[Conversation]:
    dialogues = load_zh()
    pool = [s + g for s in SURNAMES for g in GIVEN_NAMES]
    names = random.Random(SEED).sample(pool, 2 * len(dialogues))
    users = []
    for user in range(len(dialogues) // DIALOGUES_PER_USER):
        turns: list[Turn] = []
        questions: list[Question] = []
        dates: dict[int, datetime] = {}
        for session in range(1, DIALOGUES_PER_USER + 1):
            number = user * DIALOGUES_PER_USER + session - 1
            who = {"A": names[2 * number], "B": names[2 * number + 1]}
            dates[session] = START + GAP * (session - 1)
            for k, utterance in enumerate(dialogues[number].utterances):
                dia_id = f"zh{number}:{k}"
                name = who[utterance.speaker]
                when = dates[session] + timedelta(minutes=k)
                turns.append(Turn(dia_id, name, utterance.text, session, when))
                for fact in utterance.facts:
                    if (text := question(fact, name)) is not None:
                        questions.append(Question(text, CATEGORY, (dia_id,)))
        users.append(
            Conversation(
                sample_id=f"names-zh-{user}",
                turns=turns,
                questions=questions,
                last_session=max(dates.values()),
                session_dates=dates,
            )
        )
    return users


def main() -> int:
    users = build()
    turns = sum(len(u.turns) for u in users)
    questions = [q for u in users for q in u.questions]
    print(f"{len(users)} users, {turns} turns, {len(questions)} questions")
    for q in questions[:: max(1, len(questions) // 8)]:
        print(" ", q.text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
