"""Names: "my name is Ana", "call me Jo", "我叫李明", "叫我小王"."""

from __future__ import annotations

import re
from collections.abc import Collection

from hindsight.adapters.reflectors.rule_based.candidates import Candidate, Context, en_subject
from hindsight.adapters.reflectors.rule_based.clauses import is_zh
from hindsight.adapters.reflectors.rule_based.lexicon import characters, ordered_words, words
from hindsight.adapters.reflectors.rule_based.topics import posseg
from hindsight.core.models import Confidence, FactCategory

NAME_WORD = r"[A-Z][a-zA-Z'-]+"
_MY_NAME_EN = re.compile(
    rf"\b(?i:my name is|my name's|the user's name is)\s+(?P<name>[A-Za-z][a-zA-Z'-]+"
    rf"(?:\s+{NAME_WORD}){{0,2}})"
)
_CALL_ME_EN = re.compile(
    rf"\b(?i:call me|you can call me|please call me)\s+(?P<name>{NAME_WORD})\b"
)
_I_AM_NAME_EN = re.compile(
    rf"^(?:(?i:hi|hello|hey|hiya|greetings|good (?:morning|afternoon|evening))[,!.]?\s+)?"
    rf"(?:I am|I'm)\s+(?P<name>{NAME_WORD}(?:\s+{NAME_WORD})?)\s*(?:[,.!]|$|\s+(?i:and|from|by "
    r"the way|here|btw))"
)
_MY_NAME_ZH = re.compile(
    r"(?:我叫|我的名字是|我的名字叫|我名字叫|我名叫|本人叫|本人姓名)(?P<tail>[^，。！？；]+)"
)
_CALL_ME_ZH = re.compile(r"(?:你可以|请|以后|就)?叫我(?P<tail>[^，。！？；]+)")


def zh_name(tail: str) -> str:
    """The name at the start of ``tail`` if it clearly is one, else ""."""
    tail = tail.strip()
    latin = re.match(r"[A-Z][a-zA-Z'-]+(?:\s+[A-Z][a-zA-Z'-]+)?", tail)
    if latin:
        return latin.group(0)
    if not is_zh(tail[:1]) or tail[:1] in "了过着你他她它什":
        return ""
    tokens = posseg(tail[:8])
    if not tokens:
        return ""
    word, flag = tokens[0]
    if word in words("not_names", "zh"):
        return ""
    compound_surnames = ordered_words("compound_surnames", "zh")
    surnames = characters("surnames", "zh")
    if word.startswith(compound_surnames) or word[:2] in compound_surnames:
        name = word + (tokens[1][0] if len(word) == 2 and len(tokens) > 1 else "")
        return name[:4]
    if (
        len(word) == 1
        and word in surnames
        and len(tokens) > 1
        and len(tokens[1][0]) <= 2
        and is_zh(tokens[1][0])
    ):
        return word + tokens[1][0]
    if 2 <= len(word) <= 4 and (
        flag.startswith("nr") or word[0] in surnames or word[0] in "小老阿"
    ):
        return word
    return ""


def find_names(ctx: Context) -> list[Candidate]:
    """The user's name, and what they want to be called."""
    if ctx.question:
        return []
    if ctx.zh:
        return _names_zh(ctx) or _called_zh(ctx)
    not_names = words("not_names", "en")
    return (_names_en(ctx, not_names) or _introduction_en(ctx, not_names)) + _called_en(
        ctx, not_names
    )


def _name(ctx: Context, content: str) -> Candidate:
    return ctx.make(content, FactCategory.FACT, Confidence.HIGH, "name", "name")


def _called(ctx: Context, content: str) -> Candidate:
    return ctx.make(content, FactCategory.PREFERENCE, Confidence.HIGH, "name:preferred", "name")


def _names_zh(ctx: Context) -> list[Candidate]:
    """ "我叫李明"."""
    found = []
    for match in _MY_NAME_ZH.finditer(ctx.clause):
        name = zh_name(match.group("tail"))
        if name:
            found.append(_name(ctx, f"{ctx.subject.zh}的名字是{name}。"))
    return found


def _called_zh(ctx: Context) -> list[Candidate]:
    """ "叫我小王就行"."""
    found = []
    for match in _CALL_ME_ZH.finditer(ctx.clause):
        name = zh_name(match.group("tail"))
        if name:
            found.append(_called(ctx, f"{ctx.subject.zh}希望被称呼为{name}。"))
    return found


def _names_en(ctx: Context, not_names: Collection[str]) -> list[Candidate]:
    """ "my name is ana" (capitalised)."""
    found = []
    for match in _MY_NAME_EN.finditer(ctx.clause):
        parts = match.group("name").split()
        if parts[0].lower() in not_names:
            continue
        name = " ".join(w[:1].upper() + w[1:] for w in parts)
        found.append(_name(ctx, f"{ctx.subject.possessive()} name is {name}."))
    return found


def _introduction_en(ctx: Context, not_names: Collection[str]) -> list[Candidate]:
    """ "Hi, I'm Ana from Lisbon", at the start of the clause."""
    intro = _I_AM_NAME_EN.search(ctx.clause)
    if intro is None or any(w.lower() in not_names for w in intro.group("name").split()):
        return []
    return [_name(ctx, f"{ctx.subject.possessive()} name is {intro.group('name')}.")]


def _called_en(ctx: Context, not_names: Collection[str]) -> list[Candidate]:
    """ "call me Jo"."""
    found = []
    for match in _CALL_ME_EN.finditer(ctx.clause):
        name = match.group("name")
        if name.lower() not in not_names:
            found.append(_called(ctx, f"{en_subject(ctx)} wants to be called {name}."))
    return found
