"""The third dev set: persona facts asked for in other words, over multi-session chats (MSC).

How it is made (deterministic; nothing of it is committed but this code, since the MSC
data's terms of use were not confirmed: see /work/shared/data/msc/README.md):

- Source: the four ``personasummary_session{1..4}_valid.jsonl`` files of MSC (Xu et al.
  2022). The four files hold four consecutive sessions of the same 500 pairs of speakers
  (the same ``initial_data_id``); each utterance of sessions 2-4 (and many of 1) carries
  ``persona_text``: the facts about its speaker that it reveals, written by annotators.
- Histories: the chains (one pair's four sessions) are taken in ``initial_data_id`` order,
  ``CHAINS_PER_USER`` (5) consecutive chains make one user's history: 20 sessions and
  ~240 turns of mostly unrelated chatter between ten people. In a user, chain ``j``'s two
  speakers get the names ``NAMES[2j]`` and ``NAMES[2j + 1]`` (``bot_0`` and ``bot_1``);
  each turn is stored as "Name: text" with that speaker, its session, and a date: the
  user's sessions three days apart, in chain then session order.
- Questions: each utterance's ``persona_text`` is put into the topic categories whose
  keyword pattern it matches (``TOPICS``, read from ``datasets/tables/msc_devset.json``:
  pets, work, family, food, ...; a fact may have several). For each (chain, speaker, topic)
  with one to ``MAX_EVIDENCE`` (3) such utterances, one question asks for that topic about
  that speaker by name, from the topic's templates (``TOPICS``), written for this set with
  words chosen to differ from how people state such facts ("How does Avery earn a living?").
  A template is used only if none of its content words (Hindsight's tokenizer, the name left
  out) occurs in any evidence utterance; the first such template is taken, and the question
  is dropped if there is none. So no question copies its evidence's words: BM25 cannot match
  it by the words alone, a retriever has to know what the topic looks like.
- Evidence: those one to three utterances (every one must be in the top 10 for
  recall@10; any in the top 5 is a hit@5). A question's category is its topic.

    .venv/bin/python bench/msc_devset.py     # prints the set's size and sample questions

``bench/devsets.py`` runs it with the other dev sets (``--sets msc``).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from datasets.tables import load_tables
from harness import REPO
from locomo_data import Conversation, Question, Turn

from hindsight.core.text import tokenize

MSC_DIR = REPO.parent / "shared" / "data" / "msc"
SESSION_FILES = tuple(f"personasummary_session{n}_valid.jsonl" for n in (1, 2, 3, 4))
CHAINS_PER_USER = 5
DEFAULT_USERS = 8  # 40 chains, ~2,000 turns
MAX_EVIDENCE = 3
START = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
SESSION_GAP = timedelta(days=3)
NAMES = ("Avery", "Jordan", "Morgan", "Riley", "Casey", "Quinn", "Harper", "Rowan", "Ellis", "Sage")


@dataclass(frozen=True)
class Topic:
    name: str
    pattern: re.Pattern[str]
    templates: tuple[str, ...]


def _topic(name: str, words: str, *templates: str) -> Topic:
    return Topic(name, re.compile(rf"\b(?:{words})", re.IGNORECASE), templates)


TOPICS = tuple(
    _topic(t["name"], t["words"], *t["templates"]) for t in load_tables("msc_devset")["TOPICS"]
)
CATEGORIES = {number: topic.name for number, topic in enumerate(TOPICS, start=101)}


def load_chains(directory: Path = MSC_DIR) -> list[list[list[dict[str, str]]]]:
    """Each pair's four sessions, in ``initial_data_id`` order: utterances with ``id``,
    ``text`` and ``persona_text`` ("" when none)."""
    sessions: dict[str, list[list[dict[str, str]]]] = defaultdict(list)
    for name in SESSION_FILES:
        path = directory / name
        if not path.exists():
            raise SystemExit(f"{path} is missing: the MSC files of {MSC_DIR} are needed")
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            utterances = [
                {"id": u["id"], "text": u["text"].strip(), "persona": u.get("persona_text") or ""}
                for u in row["dialog"]
            ]
            sessions[row["initial_data_id"]].append(utterances)
    return [sessions[key] for key in sorted(sessions, key=_natural)]


def _natural(key: str) -> tuple[str, int]:
    prefix, _, number = key.rpartition("_")
    return (prefix, int(number)) if number.isdigit() else (key, 0)


def build_users(users: int | None = None, directory: Path = MSC_DIR) -> list[Conversation]:
    """``users`` histories (``DEFAULT_USERS`` if None) as conversations with questions."""
    chains = load_chains(directory)
    count = DEFAULT_USERS if users is None else users
    out: list[Conversation] = []
    for number in range(count):
        part = chains[number * CHAINS_PER_USER : (number + 1) * CHAINS_PER_USER]
        if len(part) < CHAINS_PER_USER:
            break
        out.append(_user(f"msc-{number:03d}", part))
    return out


def _user(user_id: str, chains: list[list[list[dict[str, str]]]]) -> Conversation:
    turns: list[Turn] = []
    facts: dict[tuple[int, str, str], list[Turn]] = defaultdict(list)  # (chain, name, topic)
    session = 0
    for chain_number, chain in enumerate(chains):
        names = {"bot_0": NAMES[2 * chain_number], "bot_1": NAMES[2 * chain_number + 1]}
        for utterances in chain:
            session += 1
            when = START + SESSION_GAP * (session - 1)
            for position, utterance in enumerate(utterances):
                name = names.get(utterance["id"], utterance["id"])
                turn = Turn(
                    f"{user_id}:S{session}:{position}", name, utterance["text"], session, when
                )
                turns.append(turn)
                for topic in TOPICS:
                    if utterance["persona"] and topic.pattern.search(utterance["persona"]):
                        facts[(chain_number, name, topic.name)].append(turn)
    questions = [q for key, evidence in facts.items() if (q := _question(key, evidence))]
    return Conversation(user_id, turns, questions, last_session=max(t.when for t in turns))


def _question(key: tuple[int, str, str], evidence: list[Turn]) -> Question | None:
    """The topic's first template that shares no content word with the evidence."""
    _, name, topic_name = key
    if not 1 <= len(evidence) <= MAX_EVIDENCE:
        return None
    number, topic = next((n, t) for n, t in enumerate(TOPICS, start=101) if t.name == topic_name)
    said = {word for turn in evidence for word in tokenize(turn.text)}
    named = set(tokenize(name))
    for template in topic.templates:
        text = template.format(name=name)
        if not (set(tokenize(text)) - named) & said:
            return Question(text, number, tuple(t.dia_id for t in evidence))
    return None


def main() -> int:
    users = build_users()
    questions = [q for u in users for q in u.questions]
    turns = sum(len(u.turns) for u in users)
    print(f"{len(users)} users, {turns} turns, {len(questions)} questions")
    print(dict(Counter(CATEGORIES[q.category] for q in questions)))
    evidence = [len(q.evidence) for q in questions]
    print(f"evidence per question: {sum(evidence) / len(evidence):.2f}")
    turn_text = {t.dia_id: t.content for u in users for t in u.turns}
    for q in questions[:8]:
        print(f"- {q.text}  <- {[turn_text[d][:90] for d in q.evidence]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
