"""States that change: memories stating one attribute of a person, the newest state first.

A user says "I live in Beijing" in January and "I moved, I live in Shanghai now" in June;
asked in July where they live, the June memory must come first and the January one must
say it was updated later. An update needs evidence: a newer memory is taken for a new
state of an older one only when

* neither is a question, and the newer does not add to the older ("a second cat", "also
  speak French", "又养了一只猫": additive updates keep both states current);
* neither is a wish, plan or supposition (``MODAL_CUES``: "If I moved to Galway", "我想
  搬到大理") or tells only of long ago (``PAST_CUES``: "I lived in Edinburgh as a kid",
  "小时候我住在哈尔滨", unless it also says what holds now);
* they were said apart: not in one session, not within the hour (a conversation
  elaborates a state more often than it changes it: "今天正式入职新公司了" and, minutes
  later, "新公司在南山后海");
* they are not the same statement said twice (near-identical vectors or text);
* both name the same kind of attribute (``ATTRIBUTES`` in ``state_attributes.py``: word
  patterns of both languages for where they live, work, their partner, car, manager,
  diet, phone, sport and exercise days, languages, pets, studies, commute, a favourite,
  drink, dish, hobby, hair colour,
  bank, doctor, team, instrument; a habit, ``HABIT_CUES``, names the attribute of the
  value beside it: "three sessions of rowing a week") and their vectors are not unrelated
  (``RELATED``); of an attribute one has several of (``MULTI_VALUED``) only when one
  value ended, a statement says it is the only one ("my only pet"), the newer is a habit
  of a sport, language or instrument, or says "now" naming the older value too;
* both give the state of the same person (``core/retrieval/state_values.subject``: "my sister lives
  in Rome" is no update of "I live in Berlin", "my wife's manager" none of "my manager";
  "The car park was full" gives nobody's);
* and the newer names a value of that attribute the older does not ("Denver" after
  "Austin": a name near the attribute's word, or a word of its kind), while the older's
  value is gone from the newer, or the newer says it ended ("quit", "broke up", "不再":
  ``ENDED_CUES``) or, of an attribute of one value, that the new one holds now ("Tacos
  is my favourite food now, sorry pad thai"). A newer memory that names the older's value
  beside a cue that it ended needs no word of the attribute ("我把比亚迪秦卖了，现在开本田
  思域"). A newer memory that names no value ("I moved my desk closer to the window") or
  only the older's ("My Toyota needs new tyres", "杭州最近一直下雨") is no update.

When the rule is unsure it does nothing: the older memory keeps its place and its score.
Within the top ``STATE_WINDOW`` results, the members of each group of states whose
attribute the query asks about (``attributes_of``; any group when the query asks
what holds "now", "现在") take the scores of the positions the group holds, newest first
(a question about a past time: the newest state before that time first); the set of
results on the page does not change, only which of a group's scores each member carries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from hindsight.core.commands import ScoredMemory
from hindsight.core.models import EpisodicMemory, Memory, StoredVector
from hindsight.core.retrieval.state_attributes import ATTRIBUTES, MULTI_VALUED, attributes_of
from hindsight.core.retrieval.state_lexicon import (
    ADDITIVE_CUES,
    CHANGE_CUES,
    CURRENT_CUES,
    ENDED_CUES,
    EXCLUSIVE_CUES,
    HABIT_CUES,
    HABITS,
    MODAL_CUES,
    NOW_CUES,
    PAST_CUES,
)
from hindsight.core.retrieval.state_values import names_value, subject, values
from hindsight.core.text import content_hash, tokenize

# results whose order may change: the first page of the usual size
STATE_WINDOW = 10
# cosines of multilingual-e5-small passages are compressed: everyday sentences of one
# person sit at 0.80-0.90 (median 0.84 on bench/data/updates), two states of one
# attribute at 0.79-0.97, so a cosine alone cannot tell them; it only rules out the
# unrelated (RELATED)
RELATED = 0.75
DUPLICATE = 0.985  # the same statement said again: not an update
MAX_STATEMENT_CHARS = 400  # longer memories (documents, pasted text) are not statements
# statements this close in time tell one state, not a change of it
SAME_MOMENT = timedelta(hours=1)

_QUESTION = re.compile(
    r"[?？]\s*$|^\s*(?:do|does|did|can|could|would|is|are|what|how|why|when|where|who|which)\b"
    r"|[吗呢]\s*[?？]?\s*$",
    re.IGNORECASE,
)
# a question about the past or the future, or one gathering everything over time ("what
# has she practised", no time named): the newest state is not what it asks for
_PAST_QUESTION = (
    re.compile(
        r"\b(?:did|was|were|used to|previously|before|formerly|back then|at the time|"
        r"originally|first|last|ever|plan\w*|will|going to|(?:has|have)(?: \w+){0,3} "
        r"(?:\w+ed|done|been|seen|made|taken|gone|had|read|tried|won|bought|got))\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"以前|之前|曾经|当时|那时|过去|原来|最初|起初|一开始|第一|打算|计划|将来|过哪些|过什么"
    ),
)
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True, slots=True)
class Statement:
    """What state-tracking needs of one memory."""

    memory_id: str
    occurred_at: datetime
    session: str | None
    speaker: str
    attributes: frozenset[str]
    change: bool
    additive: bool
    exclusive: bool  # it says the value is the only one
    question: bool
    digest: str
    text: str
    ended: bool  # it says that an earlier state ended
    unreal: bool  # a wish, plan or supposition, or a state of long ago only
    habit: bool  # it tells what the person does every day or week
    now: bool  # it says what holds now ("now", "these days", "现在")

    @classmethod
    def of(cls, memory: Memory) -> Statement:
        text = memory.content
        zh = 1 if _CJK.search(text) else 0
        speaker = memory.speaker if isinstance(memory, EpisodicMemory) else None
        attributes = frozenset(n for n, patterns in ATTRIBUTES.items() if patterns[zh].search(text))
        habit = bool(HABIT_CUES[zh].search(text))
        if habit:
            attributes |= {a for a in HABITS if any(values(t, a) for t in _habit_spans(text, zh))}
        return cls(
            memory_id=memory.memory_id,
            occurred_at=memory.occurred_at,
            session=getattr(memory, "session_id", None),
            speaker=(speaker or "").strip().casefold(),
            attributes=attributes,
            change=bool(CHANGE_CUES[zh].search(text)),
            additive=_additive(text, zh),
            exclusive=bool(EXCLUSIVE_CUES[zh].search(text)),
            question=bool(_QUESTION.search(text)),
            digest=content_hash(text),
            text=text,
            ended=bool(ENDED_CUES[zh].search(text)),
            unreal=bool(
                MODAL_CUES[zh].search(text)
                or (PAST_CUES[zh].search(text) and not NOW_CUES[zh].search(text))
            ),
            habit=habit,
            now=bool(NOW_CUES[zh].search(text)),
        )


def _habit_spans(text: str, zh: int) -> list[str]:
    """The text around each habit cue: the words a habit is of stand near it ("rowing a
    week"; not "the water butt ran dry ... every morning")."""
    before, after = (10, 14) if zh else (30, 30)
    return [
        text[max(0, m.start() - before) : m.end() + after] for m in HABIT_CUES[zh].finditer(text)
    ]


# "也"/"too" before a change adds nothing: "专业也换了" says the major changed as well
_CHANGED_TOO = re.compile(r"\s?(?:换|改|变|搬|转|跟着|switched|changed|moved)")


def _additive(text: str, zh: int) -> bool:
    """Whether ``text`` adds a value ("a second cat", "又养了一只猫"), not inside a cue that
    says one ended ("火锅排第二了")."""
    ended = [m.span() for m in ENDED_CUES[zh].finditer(text)]
    return any(
        not any(start <= m.start() < end for start, end in ended)
        and not _CHANGED_TOO.match(text, m.end())
        for m in ADDITIVE_CUES[zh].finditer(text)
    )


def is_state_topic(topic: str) -> bool:
    """Whether a fact's topic is a state of an attribute ("state:residence", also a named
    person's, "person:caroline:state:residence"): one value at a time."""
    return topic.startswith("state:") or ":state:" in topic


def same_state(a: str, b: str) -> bool:
    """Whether two statements of one attribute give the same value: no word of one is
    missing from the other but change cues ("now", "现在"); "lives in Beijing" and "lives in
    Shanghai now" differ however close their vectors are."""
    cues = {*tokenize("now nowadays currently these days still"), *tokenize("现在 目前 如今 还是")}
    words_a, words_b = set(tokenize(a)) - cues, set(tokenize(b)) - cues
    return words_a == words_b


def asks_about_past(query: str) -> bool:
    """Whether a question asks what was ("did", "used to", "以前") rather than what is."""
    return bool(_PAST_QUESTION[1 if _CJK.search(query) else 0].search(query))


def reference_time(
    query: str, as_of: datetime, query_start: datetime | None, query_end: datetime | None
) -> tuple[datetime, bool]:
    """The moment whose state a query asks for, and whether to put that state first: the
    end of a past time the query names ("in January"), else ``as_of``; a question about
    the past without a time ("did", "以前") keeps relevance order."""
    if query_start is not None and query_end is not None and query_start < as_of:
        return min(query_end, as_of), True
    return as_of, not asks_about_past(query)


def same_attribute(older: Statement, newer: Statement, cosine: float) -> bool:
    """Whether ``newer`` states a new value of an attribute ``older`` stated, of the same
    person: the evidence the module's docstring lists, all of it, or no update."""
    return bool(updated_attributes(older, newer, cosine))


def says_a_change(text: str) -> bool:
    """Whether ``text`` has a word of change, of now, of an end or of "only": what a
    ``Statement`` reads as ``change``, ``now``, ``ended`` or ``exclusive``, without reading
    the rest of it."""
    zh = 1 if _CJK.search(text) else 0
    return any(
        cues[zh].search(text) for cues in (CHANGE_CUES, NOW_CUES, ENDED_CUES, EXCLUSIVE_CUES)
    )


def updated_attributes(older: Statement, newer: Statement, cosine: float) -> frozenset[str]:
    """The attributes of which ``newer`` states a new value of ``older``'s (``same_attribute``);
    reflection reads them to know which of ``older``'s facts ``newer`` replaces."""
    if not _comparable(older, newer, cosine):
        return frozenset()
    found = set()
    for attribute in older.attributes & newer.attributes | _ended_by(older, newer):
        if attribute in MULTI_VALUED and not (
            newer.ended
            or older.exclusive
            or newer.exclusive
            or (newer.habit and attribute in HABITS)
            or (newer.now and _names_older_value(older, newer, attribute))
        ):
            continue  # a second pet, another language: an addition unless one ended
        if attribute == "favourite" and _favourite_kind(older.text) != _favourite_kind(newer.text):
            continue  # a favourite book is no favourite film
        if _subject(older.text, attribute) != _subject(newer.text, attribute):
            continue
        if new_value(older, newer, attribute):
            found.add(attribute)
    return frozenset(found)


def _comparable(older: Statement, newer: Statement, cosine: float) -> bool:
    """Whether two statements may tell two states at all: the same speaker, neither a
    question, a wish or a state of long ago, the newer no addition, said apart, not the
    same statement and not unrelated."""
    if older.speaker != newer.speaker or older.question or newer.question or newer.additive:
        return False
    if older.unreal or newer.unreal:
        return False  # "If I moved to Galway", "小时候我住在哈尔滨": no state of now
    if older.session is not None and older.session == newer.session:
        return False  # one conversation elaborates a state more often than it changes it
    if newer.occurred_at - older.occurred_at < SAME_MOMENT:
        return False
    return not (older.digest == newer.digest or cosine >= DUPLICATE or cosine < RELATED)


def _ended_by(older: Statement, newer: Statement) -> set[str]:
    """The attributes of ``older`` whose value ``newer`` names as ended without naming the
    attribute ("我把比亚迪秦卖了，现在开本田思域", "去年我从小提琴改成了古筝")."""
    if not newer.ended:
        return set()
    zh = 1 if _CJK.search(newer.text) else 0
    near = 12 if zh else 30
    ends = [m.span() for m in ENDED_CUES[zh].finditer(newer.text)]
    return {
        attribute
        for attribute in older.attributes - newer.attributes
        for value in attribute_values(older.text, attribute)
        if any(
            abs(at - start) <= near or abs(at - end) <= near
            for at in _places(value, newer.text)
            for start, end in ends
        )
    }


def _names_older_value(older: Statement, newer: Statement, attribute: str) -> bool:
    """Whether ``newer`` names ``older``'s value of ``attribute`` ("Italian didn't stick, so
    I'm doing Japanese now"): said with "now", a contrast, not an addition."""
    return any(names_value(v, newer.text) for v in attribute_values(older.text, attribute))


def _places(value: str, text: str) -> list[int]:
    """Where ``value`` stands in ``text`` (casefolded)."""
    lowered = text.casefold()
    return [m.start() for m in re.finditer(re.escape(value), lowered)]


# "The coffee table wobbles", "The food bank needs volunteers": the attribute's word names
# a thing, not anyone's state
_THING = re.compile(r"\s*(?:the|a|an)\s+(?:[\w-]+\s+)?$", re.IGNORECASE)
_OWNED = re.compile(r"\s+(?:i|i've|i'm|we|we've|my|our)\b", re.IGNORECASE)


def _subject(text: str, attribute: str) -> str:
    """Whose state of ``attribute`` ``text`` gives (``state_values.subject``); "thing"
    when an English sentence opens with the attribute's word after an article."""
    if not _CJK.search(text):
        found = ATTRIBUTES[attribute][0].search(text)
        if (
            found
            and _THING.fullmatch(text[: found.start()])
            and not _OWNED.match(text, found.end())
        ):
            return "thing"
    return subject(text, attribute)


_FAVOURITE_KIND = (
    re.compile(r"\bfavou?rite (\w+)", re.IGNORECASE),
    re.compile(r"最(?:喜欢|爱)(?:的)?(?:是)?([\u4e00-\u9fff]{1,2})"),
)


def _favourite_kind(text: str) -> str | None:
    """What a favourite is of ("my favourite food": food), if the statement says."""
    found = _FAVOURITE_KIND[1 if _CJK.search(text) else 0].search(text)
    return found.group(1).casefold() if found else None


def attribute_values(text: str, attribute: str) -> frozenset[str]:
    """``state_values.values`` of ``text``, names near where it names ``attribute``."""
    pattern = ATTRIBUTES[attribute][1 if _CJK.search(text) else 0]
    return values(text, attribute, tuple(m.span() for m in pattern.finditer(text)))


def new_value(older: Statement, newer: Statement, attribute: str) -> bool:
    """Whether ``newer`` names a value of ``attribute`` that ``older`` does not, and
    ``older``'s value is gone from it, or it says the older state ended, or (of an
    attribute of one value) that the new one holds now ("Tacos is my favourite food now,
    sorry pad thai")."""
    olds, news = attribute_values(older.text, attribute), attribute_values(newer.text, attribute)
    if not olds or not any(not names_value(v, older.text) for v in news):
        return False
    if newer.ended or (newer.now and attribute not in MULTI_VALUED):
        return True
    return any(not names_value(v, newer.text) for v in olds)


@dataclass(frozen=True)
class StateOrder:
    """The window's new order, and for each older state the newest one that updated it."""

    order: list[str]
    updated_by: dict[str, str]


def order_states(
    memories: Sequence[Memory],
    vectors: dict[str, StoredVector],
    reference: datetime,
    reorder: bool,
    query: str = "",
) -> StateOrder:
    """Memories (in rank order) with each group of states of one attribute put in time
    order on the positions it holds (if ``reorder``): the newest state at or before
    ``reference`` first, then older ones, then states after ``reference``. A state is
    reported updated by the newest state of its group at or before ``reference``."""
    asked = attributes_of(query) if query else frozenset()
    statements = [
        Statement.of(m)
        for m in memories
        if len(m.content) <= MAX_STATEMENT_CHARS and _single(vectors.get(m.memory_id))
    ]
    parent = {s.memory_id: s.memory_id for s in statements}

    def root(memory_id: str) -> str:
        while parent[memory_id] != memory_id:
            parent[memory_id] = parent[parent[memory_id]]
            memory_id = parent[memory_id]
        return memory_id

    updated_by: dict[str, str] = {}
    grouped = False
    by_time = sorted(statements, key=lambda s: (s.occurred_at, s.memory_id))
    cosines = _cosines([vectors[s.memory_id] for s in by_time])
    for i, older in enumerate(by_time):
        for j in range(i + 1, len(by_time)):
            newer = by_time[j]
            if newer.occurred_at <= older.occurred_at:
                continue
            if same_attribute(older, newer, cosines[j][i]):
                grouped = True
                parent[root(older.memory_id)] = root(newer.memory_id)
                if newer.occurred_at <= reference:  # the newest wins (later pairs)
                    updated_by[older.memory_id] = newer.memory_id
    order = [m.memory_id for m in memories]
    if not reorder or not grouped:
        return StateOrder(order, updated_by)
    now_asked = not query or CURRENT_CUES[1 if _CJK.search(query) else 0].search(query)
    wanted = None if now_asked else asked
    return StateOrder(_reordered(order, statements, root, reference, wanted), updated_by)


def _reordered(
    order: list[str],
    statements: list[Statement],
    root: Callable[[str], str],
    reference: datetime,
    asked: frozenset[str] | None,
) -> list[str]:
    """``order`` with each group put in time order on its positions; only the groups
    whose attribute the query asks about (``asked``; None: the query asks what holds now,
    so every group)."""
    groups: dict[str, list[Statement]] = {}
    for statement in statements:
        groups.setdefault(root(statement.memory_id), []).append(statement)
    out = list(order)
    for members in groups.values():
        named = frozenset().union(*(s.attributes for s in members))
        if len(members) < 2 or (asked is not None and not named & asked):
            continue
        positions = sorted(order.index(s.memory_id) for s in members)
        ranked = sorted(
            members,
            key=lambda s: (s.occurred_at > reference, -s.occurred_at.timestamp(), s.memory_id),
        )
        for position, statement in zip(positions, ranked, strict=True):
            out[position] = statement.memory_id
    return out


def _single(vector: StoredVector | None) -> bool:
    return vector is not None and not vector.chunked


def _cosines(vectors: list[StoredVector]) -> list[list[float]]:
    """Pairwise cosines (0 between vectors of different models)."""
    if not vectors:
        return []
    model, dim = vectors[0].model, vectors[0].dim
    rows = np.stack(
        [
            v.values if v.model == model and v.dim == dim else np.zeros(dim, np.float32)
            for v in vectors
        ]
    )
    matrix: list[list[float]] = (rows @ rows.T).tolist()
    return matrix


def marked_updated(result: ScoredMemory, newer: Memory | None) -> ScoredMemory:
    """A result marked as updated by ``newer`` (a later memory stating a newer value of the
    same attribute of the user), in its fields and its ``why``."""
    if newer is None:
        return result
    why = {
        **result.why,
        "updated_later": {
            "by": newer.memory_id,
            "at": newer.occurred_at.isoformat(),
            "reason": "a later memory states a newer value of the same attribute of the user",
        },
    }
    return result.model_copy(
        update={"why": why, "updated_later": True, "superseded_by": newer.memory_id}
    )
