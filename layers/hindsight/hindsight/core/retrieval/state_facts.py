"""Facts read as states, for reflection's merge (``core/fact_merge.py``): which attribute a
reflected fact names (it reads an update from the facts' source episodes,
``states.updated_attributes``, and supersedes only a fact that names the attribute that
changed), the cosine two statements' stored vectors give, and whether a fact of a state
topic says the older one's state again (then it supersedes nothing)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from hindsight.core.models import StoredVector
from hindsight.core.retrieval.state_attributes import ATTRIBUTES
from hindsight.core.retrieval.state_lexicon import CHANGE_CUES, ENDED_CUES, NOW_CUES, PAST_CUES
from hindsight.core.retrieval.state_values import listed_values, named_kinds, names_value

_CJK = re.compile(r"[\u3400-\u9fff]")
_NEGATION = (re.compile(r"\b(?:not|no|never|none)\b|n't", re.IGNORECASE), re.compile(r"[不没]"))


def attributes_named(text: str, attributes: Iterable[str]) -> frozenset[str]:
    """Those of ``attributes`` that ``text`` (a fact) names ("The user's phone is ...",
    "用户住在...") or gives a value of from the attribute's word list ("a Xperia 5"); a
    name alone ("Berlin") could be of any attribute and does not count. The attributes'
    patterns read what people say, so the fact is read in the first person too ("The user
    supports Celtic": "I support Celtic")."""
    zh = 1 if _CJK.search(text) else 0
    spoken = first_person(text)
    return frozenset(
        a
        for a in attributes
        if ATTRIBUTES[a][zh].search(text)
        or ATTRIBUTES[a][zh].search(spoken)
        or listed_values(text, a)
    )


_USER_VERB = re.compile(
    r"\bthe user (?P<adverb>(?:now|still|also|just|recently|currently|finally) )?(?P<verb>\w+)",
    re.IGNORECASE,
)
_BE_HAVE = {"is": "am", "was": "was", "has": "have", "does": "do"}
_THEIR = ((re.compile(r"\btheir\b", re.IGNORECASE), "my"), (re.compile(r"\bthem\b"), "me"))


def first_person(fact: str) -> str:
    """A fact about the user ("The user lives in Leeds", "用户住在杭州") as the user would
    say it ("I live in Leeds", "我住在杭州")."""
    if _CJK.search(fact):
        return fact.replace("用户的", "我的").replace("用户", "我")
    text = re.sub(r"\bthe user's\b", "my", fact, flags=re.IGNORECASE)

    def verb(found: re.Match[str]) -> str:
        word = found.group("verb")
        lowered = word.casefold()
        if lowered in _BE_HAVE:
            word = _BE_HAVE[lowered]
        elif lowered.endswith("ies") and len(lowered) > 4:
            word = word[:-3] + "y"
        elif lowered.endswith(("ches", "shes", "sses", "xes", "oes")):
            word = word[:-2]
        elif lowered.endswith("s") and not lowered.endswith("ss"):
            word = word[:-1]
        return f"I {found.group('adverb') or ''}{word}"

    text = _USER_VERB.sub(verb, text)
    for pattern, mine in _THEIR:
        text = pattern.sub(mine, text)
    return text


def statement_cosine(older: StoredVector | None, newer: StoredVector | None) -> float | None:
    """The cosine of two memories' single vectors; None when either is missing, chunked or
    of another model than the other (then no update is read from them)."""
    if older is None or newer is None or older.chunked or newer.chunked:
        return None
    if older.model != newer.model or older.dim != newer.dim:
        return None
    return float(np.dot(older.values, newer.values))


def restates(older: str, newer: str) -> bool:
    """Whether fact ``newer`` gives the same state as fact ``older`` of one state topic: it
    names every value ``older`` names and no other of their kinds, and does not say the
    state ended or was long ago ("The user loves their job at Stark Logistics" after "The
    user works at Stark Logistics"; "用户现在在华为上班，快五年了" after "用户在华为上班").
    Then the newer does not supersede the older; "moved from Beijing to Shanghai" names
    another place, "no longer vegetarian" says it ended, so they do."""
    old, new = named_kinds(older), named_kinds(newer)
    if not old or not all(names_value(value, newer) for value in old):
        return False
    zh, spoken = (1 if _CJK.search(newer) else 0), first_person(newer)
    if any(cues[zh].search(spoken) for cues in (ENDED_CUES, PAST_CUES, _NEGATION)):
        return False  # "no longer", "used to", "不吃素了": the state may have ended
    kinds = set(old.values())
    return not any(kind in kinds for value, kind in new.items() if value not in old)


# "Caroline said: ..." / "用户说：...": whose words a fact quotes, not a value of its state
_SAID = re.compile(r"^\s*(?:[A-Z][\w'’-]*(?: [A-Z][\w'’-]*)? said:|用户说[：:])\s*")


def changes_value(older: str, newer: str) -> bool:
    """Whether fact ``newer`` of ``older``'s state topic says the state changed: it names a
    value ``older`` names and says it ended, was long ago or is not ("The user is no longer
    vegetarian"), or it says something changed or holds now and names a value of a kind
    ``older`` names that ``older`` does not ("The user is seeing Sofia now" after "The
    user's girlfriend is Olivia"). A fact that names no value, or a new value without such
    a word, is no evidence: a fact may name a place or a person beside the state."""
    older, newer = _SAID.sub("", older), _SAID.sub("", newer)
    old = named_kinds(older)
    if not old:
        return False
    zh, spoken = (1 if _CJK.search(newer) else 0), first_person(newer)
    if any(cues[zh].search(spoken) for cues in (ENDED_CUES, PAST_CUES, _NEGATION)):
        return any(names_value(value, newer) for value in old)
    if not any(cues[zh].search(spoken) for cues in (CHANGE_CUES, NOW_CUES)):
        return False
    kinds = set(old.values())
    return any(
        kind in kinds and not names_value(v, older) for v, kind in named_kinds(newer).items()
    )
