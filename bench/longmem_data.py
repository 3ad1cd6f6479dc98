"""The long-memory benchmark's dataset: chat histories with needles in long pasted turns.

How the data was made (``python bench/longmem_data.py`` rebuilds it, byte for byte):

- Six users, three writing English and three Chinese. Each has six sessions over about a
  month (a multi-session import): 45-60 short chat turns, two long pasted turns of
  5,000-60,000 characters, three short turns that state a fact, and, for some facts,
  a short turn on the same topic that does not state it (a distractor).
- Long turns: an opening line, one or two pasted documents and a closing line. The
  documents are code (Python, JavaScript, SQL; comments in the user's language), logs
  (application with tracebacks, access, JSON lines), e-mail threads, meeting notes,
  weekly reports, articles and chat exports (``datasets/longmem_code``, ``longmem_prose``,
  ``longmem_chat``). The six long turns of a language have lengths on a geometric
  ladder from 5,000 to 60,000 characters (jittered), each with its own mix of documents
  (``COMPOSITIONS``); each user gets one shorter and one longer.
- Needles (``datasets/longmem_needles``; kinds in ``data/longmem/needle_kinds.json``): personal
  facts, each with a question that asks for it in other words. A user's two long turns
  hold four and six needles (the shorter turn four): one near the start (first 6%), one
  near the end (last 7%), the others in the middle (30-70%), each put between two blocks
  (paragraphs, functions, runs of log lines) and written as the context
  asks (a comment in code, a note in a log, a sentence in prose). 60 needles sit in long
  turns and 18 in short ones (the short-memory questions). A user's needles and filler
  are drawn again until every answer (the part of a needle a reply must hold) occurs
  exactly once in that user's whole history, as a word or number of its own.
- Sources: the English short turns and chat exports are utterances from the MSC
  validation dialogues in /work/shared/data/msc (see its README); every other text comes
  from templates and word lists written for this benchmark. One ``random.Random(SEED)``
  draws everything, so the file depends only on this code, the kinds file and MSC.

The dataset is committed as ``data/longmem/longmem.json.gz`` (gzip without a timestamp,
so rebuilding gives the same bytes); ``--check`` rebuilds it in memory and compares.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from datasets.longmem_chat import chat_export, intro, load_msc_dialogues, outro, short_turns
from datasets.longmem_code import (
    Document,
    javascript_module,
    log_excerpt,
    python_module,
    sql_script,
)
from datasets.longmem_needles import Needle, NeedleKind, load_kinds, make_needle
from datasets.longmem_prose import article, email_thread, meeting_notes, weekly_report
from datasets.tables import load_tables

DATA_FILE = Path(__file__).resolve().parent / "data" / "longmem" / "longmem.json.gz"
SEED = 20241203
FORMAT = 1
LANGUAGES = ("en", "zh")
USERS_PER_LANGUAGE = 3
NEEDLES_PER_LONG_TURN = (4, 6)  # one user's two long turns, shorter first
SHORT_NEEDLES_PER_USER = 3
SESSIONS_PER_USER = 6
MIN_LONG_CHARS, MAX_LONG_CHARS = 5_000, 60_000
MAX_ATTEMPTS = 20  # draws of a user's needles and filler before giving up
POSITIONS = {"start": (0.0, 0.06), "middle": (0.3, 0.7), "end": (0.93, 1.0)}
POSITION_ORDER = {
    4: ("start", "middle", "middle", "end"),
    6: ("start", "middle", "middle", "middle", "middle", "end"),
}

# The documents of each long turn, longest turn first: one entry per long turn of a language
# (6 = 3 users x 2). Chinese prose costs the model about one token a character, code and logs
# two to three, so the longest Chinese pastes are mostly code and logs (as they often are).
COMPOSITIONS: dict[str, list[tuple[str, ...]]] = {
    "en": [("log", "python"), ("email", "notes"), ("report",), ("sql", "javascript")],
    "zh": [("python", "log"), ("javascript", "sql"), ("log",), ("email", "notes")],
}
COMPOSITIONS["en"] += [("article",), ("chat",)]
COMPOSITIONS["zh"] += [("article",), ("report", "chat")]
# how a needle is written into a block of each kind, and the leads of a short needle turn
TABLES = load_tables("longmem_data")
WRAPS = TABLES["WRAPS"]
SHORT_LEADS = TABLES["SHORT_LEADS"]


@dataclass(frozen=True)
class Turn:
    turn_id: str
    session_id: str
    occurred_at: datetime
    content: str
    long: bool = False
    documents: tuple[str, ...] = ()  # the kinds of document pasted in a long turn


@dataclass(frozen=True)
class Question:
    question_id: str
    user_id: str
    language: str
    text: str
    turn_id: str  # the turn holding the needle
    needle: str
    answer: str
    position: str  # start / middle / end of a long turn, or "short"
    offset: int  # of the needle in the turn's content
    key: str  # the needle kind


@dataclass
class History:
    user_id: str
    language: str
    turns: list[Turn] = field(default_factory=list)


@dataclass
class Dataset:
    seed: int
    users: list[History]
    questions: list[Question]

    def turn(self, turn_id: str) -> Turn:
        return next(t for u in self.users for t in u.turns if t.turn_id == turn_id)


# --- long turns ----------------------------------------------------------------------------

Maker = Callable[[random.Random, str, int, datetime], Document]


def _makers(dialogues: list[list[str]]) -> dict[str, Maker]:
    return {
        "python": lambda r, lang, n, _: python_module(r, lang, n),
        "javascript": lambda r, lang, n, _: javascript_module(r, lang, n),
        "sql": lambda r, lang, n, _: sql_script(r, lang, n),
        "log": log_excerpt,
        "email": email_thread,
        "notes": meeting_notes,
        "report": weekly_report,
        "article": article,
        "chat": lambda r, lang, n, when: chat_export(r, lang, n, when, dialogues),
    }


@dataclass
class _Piece:
    separator: str  # what goes before it
    text: str
    context: str  # how a needle put right after it is written (prose, python, log, ...)


def _pieces(docs: list[Document]) -> list[_Piece]:
    pieces: list[_Piece] = []
    for doc in docs:
        context = doc.fence or ("log" if doc.kind.startswith("log") else "prose")
        for number, block in enumerate(doc.blocks):
            if doc.fence and number == 0:
                block = f"```{doc.fence}\n{block}"
            last = number == len(doc.blocks) - 1
            if doc.fence and last:
                block = f"{block}\n```"
            separator = doc.joiner if number else ("\n\n" if pieces else "")
            pieces.append(_Piece(separator, block, "prose" if last else context))
    return pieces


def _offsets(pieces: list[_Piece]) -> list[int]:
    """Where each gap is: gap i is before piece i (gap len(pieces) is the end)."""
    offsets, position = [], 0
    for piece in pieces:
        position += len(piece.separator)
        offsets.append(position if offsets else 0)
        position += len(piece.text)
    return [*offsets, position]


def _choose_gaps(rng: random.Random, offsets: list[int], labels: tuple[str, ...]) -> list[int]:
    total, taken, gaps = offsets[-1], set(), []
    for label in labels:
        low, high = POSITIONS[label]
        inside = [i for i, o in enumerate(offsets) if low <= o / total <= high and i not in taken]
        if not inside:  # the nearest free gap to the range's middle
            target = (low + high) / 2 * total
            inside = [min((i for i in range(len(offsets)) if i not in taken),
                          key=lambda i: abs(offsets[i] - target))]  # fmt: skip
        gap = rng.choice(inside)
        taken.add(gap)
        gaps.append(gap)
    return gaps


def _insert_needles(
    rng: random.Random, language: str, pieces: list[_Piece], needles: list[Needle]
) -> str:
    labels = POSITION_ORDER[len(needles)]
    gaps = _choose_gaps(rng, _offsets(pieces), labels)
    for gap, needle in sorted(zip(gaps, needles, strict=True), key=lambda p: -p[0]):
        context = pieces[gap - 1].context if gap else "prose"
        text = rng.choice(WRAPS[language][context]).format(needle.text)
        if gap == 0:
            pieces[0].separator = "\n\n"
            pieces.insert(0, _Piece("", text, "prose"))
        elif gap == len(pieces):
            pieces.append(_Piece("\n\n", text, "prose"))
        else:
            pieces.insert(gap, _Piece(pieces[gap].separator, text, context))
    return "".join(p.separator + p.text for p in pieces)


def long_content(
    rng: random.Random,
    language: str,
    chars: int,
    documents: tuple[str, ...],
    needles: list[Needle],
    when: datetime,
    makers: dict[str, Maker],
) -> str:
    """An opening line, the documents (``chars`` in all), a closing line; needles inside."""
    budget = chars - 150 - sum(len(n.text) + 20 for n in needles)
    shares = [rng.uniform(0.35, 0.65)] if len(documents) == 2 else []
    shares = [*shares, 1.0 - sum(shares)]
    docs = [Document("prose", [intro(rng, language, documents[0])])]
    for kind, share in zip(documents, shares, strict=True):
        docs.append(makers[kind](rng, language, int(budget * share), when))
    docs.append(Document("prose", [outro(rng, language)]))
    return _insert_needles(rng, language, _pieces(docs), needles)


# --- histories -----------------------------------------------------------------------------


def _long_turns(rng: random.Random, language: str) -> list[list[tuple[int, tuple[str, ...]]]]:
    """(chars, documents) of each user's long turns, shorter first: a geometric ladder of
    lengths from MIN_LONG_CHARS to MAX_LONG_CHARS (jittered), longest first, paired with
    COMPOSITIONS; user i of the shuffled users gets rungs i and -1 - i (one short, one long)."""
    mixes = COMPOSITIONS[language]
    ratio = (MAX_LONG_CHARS / MIN_LONG_CHARS) ** (1 / (len(mixes) - 1))
    ladder = [int(MIN_LONG_CHARS * ratio**i * rng.uniform(0.93, 0.97)) for i in range(len(mixes))]
    ladder[0] = int(MIN_LONG_CHARS * rng.uniform(1.03, 1.07))
    pairs = list(zip(sorted(ladder, reverse=True), mixes, strict=True))
    users = [sorted([pairs[i], pairs[-1 - i]]) for i in range(len(pairs) // 2)]
    rng.shuffle(users)
    return users


@dataclass
class _Plan:
    """What one user's history holds before it is laid out in sessions."""

    long: list[tuple[int, tuple[str, ...], list[Needle]]]  # (chars, documents, needles)
    short_needles: list[Needle]
    distractors: list[str]
    chat: list[str]


def _plan_user(
    rng: random.Random,
    language: str,
    kinds: tuple[NeedleKind, ...],
    long_turns: list[tuple[int, tuple[str, ...]]],
    dialogues: list[list[str]],
) -> _Plan:
    counts = NEEDLES_PER_LONG_TURN
    chosen = rng.sample(kinds, sum(counts) + SHORT_NEEDLES_PER_USER)
    needles = [make_needle(kind, language, rng) for kind in chosen]
    long, start = [], 0
    for (chars, documents), count in zip(long_turns, counts, strict=True):
        long.append((chars, documents, needles[start : start + count]))
        start += count
    distractors = [n.distractor for n in needles if n.distractor and rng.random() < 0.6]
    chat = short_turns(rng, language, rng.randrange(45, 61), dialogues)
    return _Plan(long, needles[start:], distractors, chat)


def _build_user(
    rng: random.Random, user_id: str, language: str, plan: _Plan, makers: dict[str, Maker]
) -> tuple[History, list[Question]]:
    # (kind, payload) items spread over the sessions; long turns in distinct sessions
    sessions: list[list[tuple[str, object]]] = [[] for _ in range(SESSIONS_PER_USER)]
    for session, item in zip(
        rng.sample(range(SESSIONS_PER_USER), len(plan.long)), plan.long, strict=True
    ):
        sessions[session].append(("long", item))
    for needle in plan.short_needles:
        sessions[rng.randrange(SESSIONS_PER_USER)].append(("needle", needle))
    for text in plan.distractors + plan.chat:
        sessions[rng.randrange(SESSIONS_PER_USER)].append(("chat", text))
    history, questions = History(user_id, language), []
    when = datetime(2024, 3, 4, tzinfo=UTC) + timedelta(days=rng.randrange(0, 20))
    for number, items in enumerate(sessions):
        rng.shuffle(items)
        when += timedelta(days=rng.randrange(3, 7), hours=rng.randrange(0, 10))
        for kind, payload in items:
            when += timedelta(minutes=rng.randrange(1, 7))
            turn_id = f"{user_id}-t{len(history.turns):03d}"
            turn, found = _turn(rng, language, turn_id, f"{user_id}-s{number}", when, kind, payload,
                                makers)  # fmt: skip
            history.turns.append(turn)
            questions += [
                Question(
                    question_id=f"{user_id}-q{len(questions) + i:02d}",
                    user_id=user_id,
                    language=language,
                    text=needle.question,
                    turn_id=turn_id,
                    needle=needle.text,
                    answer=needle.answer,
                    position=position,
                    offset=turn.content.index(needle.text),
                    key=needle.key,
                )
                for i, (needle, position) in enumerate(found)
            ]
    return history, questions


def _turn(
    rng: random.Random,
    language: str,
    turn_id: str,
    session_id: str,
    when: datetime,
    kind: str,
    payload: object,
    makers: dict[str, Maker],
) -> tuple[Turn, list[tuple[Needle, str]]]:
    if kind == "long":
        chars, documents, needles = payload  # type: ignore[misc]
        content = long_content(rng, language, chars, documents, needles, when, makers)
        labels = POSITION_ORDER[len(needles)]
        found = [(n, _position(content, n.text)) for n in needles]
        assert [p for _, p in found] == list(labels), (turn_id, found)
        return Turn(turn_id, session_id, when, content, True, documents), found
    if kind == "needle":
        needle: Needle = payload  # type: ignore[assignment]
        content = rng.choice(SHORT_LEADS[language]).format(needle.text)
        return Turn(turn_id, session_id, when, content), [(needle, "short")]
    return Turn(turn_id, session_id, when, str(payload)), []


def _position(content: str, needle: str) -> str:
    fraction = content.index(needle) / len(content)
    for label, (low, high) in POSITIONS.items():
        if low - 0.03 <= fraction <= high + 0.03:
            return label
    return f"unplaced ({fraction:.2f})"


def answer_count(history: History, answer: str) -> int:
    """How often ``answer`` occurs in the history as a whole word or number (not inside
    a longer one: "1" is not in "13")."""
    pattern = re.compile(rf"(?<![0-9A-Za-z]){re.escape(answer)}(?![0-9A-Za-z])")
    return sum(len(pattern.findall(turn.content)) for turn in history.turns)


def build_dataset(dialogues: list[list[str]] | None = None) -> Dataset:
    """The whole dataset from ``SEED`` (MSC dialogues loaded unless given)."""
    rng = random.Random(SEED)
    dialogues = load_msc_dialogues() if dialogues is None else dialogues
    makers = _makers(dialogues)
    kinds = load_kinds()
    users: list[History] = []
    questions: list[Question] = []
    for language in LANGUAGES:
        long_turns = _long_turns(rng, language)
        for number in range(USERS_PER_LANGUAGE):
            user_id = f"{language}-user-{number + 1}"
            for _ in range(MAX_ATTEMPTS):  # until every answer is stated once in the history
                plan = _plan_user(rng, language, kinds[language], long_turns[number], dialogues)
                history, asked = _build_user(rng, user_id, language, plan, makers)
                if all(answer_count(history, q.answer) == 1 for q in asked):
                    break
            else:
                raise RuntimeError(f"{user_id}: no history with unambiguous answers")
            users.append(history)
            questions += asked
    return Dataset(SEED, users, questions)


# --- file ----------------------------------------------------------------------------------


def to_json(dataset: Dataset) -> bytes:
    data = {
        "format": FORMAT,
        "seed": dataset.seed,
        "made_by": "bench/longmem_data.py (see its docstring)",
        "users": [
            {
                "user_id": u.user_id,
                "language": u.language,
                "turns": [{**asdict(t), "occurred_at": t.occurred_at.isoformat()} for t in u.turns],
            }
            for u in dataset.users
        ],
        "questions": [asdict(q) for q in dataset.questions],
    }
    text = json.dumps(data, ensure_ascii=False, indent=0, separators=(",", ":"))
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def load_dataset(path: Path = DATA_FILE) -> Dataset:
    """The committed dataset (or another file written by ``to_json``)."""
    data = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: format {data.get('format')}, expected {FORMAT}; rebuild it")
    users = [
        History(u["user_id"], u["language"], [_turn_from(t) for t in u["turns"]])
        for u in data["users"]
    ]
    return Dataset(data["seed"], users, [Question(**q) for q in data["questions"]])


def _turn_from(data: dict[str, Any]) -> Turn:
    """A turn as ``to_json`` wrote it."""
    when = datetime.fromisoformat(data["occurred_at"])
    return Turn(**data | {"occurred_at": when, "documents": tuple(data["documents"])})


def summary(dataset: Dataset) -> dict[str, object]:
    long = [t for u in dataset.users for t in u.turns if t.long]
    return {
        "users": len(dataset.users),
        "turns": sum(len(u.turns) for u in dataset.users),
        "long_turns": len(long),
        "long_chars": sum(len(t.content) for t in long),
        "long_min_max": (min(len(t.content) for t in long), max(len(t.content) for t in long)),
        "questions": len(dataset.questions),
        "by_language": dict(Counter(q.language for q in dataset.questions)),
        "by_position": dict(Counter(q.position for q in dataset.questions)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the long-memory benchmark's dataset.")
    parser.add_argument("--out", type=Path, default=DATA_FILE)
    parser.add_argument("--check", action="store_true", help="compare with --out, write nothing")
    args = parser.parse_args(argv)
    payload = to_json(build_dataset())
    if args.check:
        same = args.out.exists() and args.out.read_bytes() == payload
        print(f"{args.out}: {'up to date' if same else 'DIFFERS from a rebuild'}")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(payload)
    print(f"wrote {args.out} ({len(payload):,} bytes): {summary(load_dataset(args.out))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
