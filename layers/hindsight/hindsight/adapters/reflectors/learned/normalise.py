"""A first-person statement turned into a third-person fact in the speaker's own words.

"I love hiking" -> "The user loves hiking."; "My dog is named Max" -> "The user's dog is
named Max."; "我喜欢爬山" -> "用户喜欢爬山。". Openers that carry nothing ("yeah,", "oh",
"但是") are dropped; a statement that does not start with its speaker keeps its wording
with pronouns in the third person ("Being a nurse is hard, my feet hurt" -> "Being a
nurse is hard, their feet hurt."). Named speakers get their name ("Alice loves hiking.").
"""

from __future__ import annotations

import re

from hindsight.adapters.reflectors.rule_based.clauses import expand, is_zh
from hindsight.adapters.reflectors.rule_based.grammar import (
    conjugate,
    third_person_en,
    third_person_zh,
)
from hindsight.adapters.reflectors.rule_based.speakers import Subject

_OPENER_EN = re.compile(
    r"^(?:(?:yes|yeah|yep|no|nope|oh|ohh|well|haha|hahaha|lol|wow|ok|okay|so|and|but|"
    r"actually|honestly|sure|hmm|ah|aw|awesome|great|cool|nice|also|um|uh|true|right)"
    r"\b[\s,!.]*)+",
    re.IGNORECASE,
)
_OPENER_ZH = re.compile(
    r"^(?:(?:但是|不过|可是|而且|所以|因为|其实|是的|对啊|对|嗯|哦|啊|哈哈|哈|好吧)[，,！!\s]*)+"
)
# "I am" -> "is"; verbs that need no -s (past tense, modals) stay as they are
_BE_HAVE = {"am": "is", "was": "was", "have": "has", "had": "had", "do": "does", "did": "did"}
_PAST = re.compile(
    r"^(?:\w+ed|went|got|grew|made|took|saw|came|began|became|left|met|"
    r"bought|found|lost|won|ran|fell|felt|knew|thought|told|said|spent|sold|"
    r"taught|wrote|kept|used)$",
    re.IGNORECASE,
)
_FIRST_PERSON_START = re.compile(r"^I\s+(?P<rest>.+)$")
_MY_START = re.compile(r"^(?:My|my)\s+(?P<rest>.+)$")
_END = re.compile(r"[\s.!?。！？,，;；:：~]+$")


def _verb_phrase(rest: str) -> str:
    """The verb phrase after "I", in the third person singular."""
    first, _, tail = rest.partition(" ")
    lowered = first.lower()
    if lowered in _BE_HAVE:
        return " ".join(p for p in (_BE_HAVE[lowered], tail) if p)
    if _PAST.match(first):
        return rest
    return conjugate(rest)


def without_opener(sentence: str) -> str:
    """The sentence less the openers that carry nothing ("Yeah, ", "Oh wow ", "哈哈，")."""
    opener = _OPENER_ZH if is_zh(sentence) else _OPENER_EN
    return opener.sub("", sentence.strip()).strip() or sentence.strip()


def to_fact(statement: str, subject: Subject | None = None) -> str:
    """The statement as a fact about ``subject`` (the user by default), one sentence."""
    subject = subject or Subject()
    if is_zh(statement):
        return _to_fact_zh(statement, subject)
    text = _OPENER_EN.sub("", expand(statement)).strip()
    text = _END.sub("", text)
    if not text:
        return ""
    if match := _FIRST_PERSON_START.match(text):
        text = f"{subject.en} {third_person_en(_verb_phrase(match.group('rest')))}"
    elif match := _MY_START.match(text):
        text = f"{subject.possessive()} {third_person_en(match.group('rest'))}"
    else:
        text = third_person_en(text)
        text = text[:1].upper() + text[1:]
    return f"{text}."


def _to_fact_zh(statement: str, subject: Subject) -> str:
    text = _END.sub("", _OPENER_ZH.sub("", statement.strip()))
    if not text:
        return ""
    if text.startswith("我的"):
        text = f"{subject.zh}的{third_person_zh(text[2:])}"
    elif text.startswith("我们"):
        text = f"{subject.zh}和家人{third_person_zh(text[2:])}"
    elif text.startswith("我"):
        text = f"{subject.zh}{third_person_zh(text[1:])}"
    else:
        text = third_person_zh(text)
    return f"{text}。"
