"""Allergies: "I'm allergic to peanuts", "我对花生过敏"."""

from __future__ import annotations

import re

from hindsight.adapters.reflectors.rule_based.candidates import I_EN, Candidate, Context, en_subject
from hindsight.adapters.reflectors.rule_based.grammar import split_items
from hindsight.adapters.reflectors.rule_based.topics import topic_key
from hindsight.core.models import Confidence, FactCategory

_ALLERGY_EN = [
    re.compile(
        rf"\b{I_EN}\s+(?:am|is)\s+(?:(?:also|very|severely|highly|mildly|deathly|extremely|"
        r"slightly|really|seriously|quite)\s+)*allergic\s+to\s+(?P<obj>[^.;!?]+)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b{I_EN}\s+(?:have|has|have got)\s+(?:an?\s+)?(?:(?:severe|mild|serious|bad|"
        r"strong|life-threatening)\s+)?allerg(?:y|ies)\s+to\s+(?P<obj>[^.;!?]+)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b{I_EN}\s+(?:have|has|have got)\s+(?:an?\s+)?(?:(?:severe|mild|serious|bad|"
        r"strong|life-threatening)\s+)?(?P<obj>[a-z][a-z -]{1,30}?)\s+allerg(?:y|ies)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?P<subj>my)\s+(?P<obj>[a-z][a-z -]{1,30}?)\s+allergy\b", re.IGNORECASE),
]
_ALLERGY_ZH = [
    re.compile(
        r"(?P<subj>我|用户|本人)(?:[^，。！？对]{0,4})对(?:于)?(?P<obj>[^，。！？；]{1,15}?)"
        r"(?:严重|有点|非常|特别|比较|很|会|都)*过敏"
    ),
    re.compile(r"(?P<subj>我|用户|本人)(?:有)?(?P<obj>[\u3400-\u9fffA-Za-z]{1,8}?)过敏"),
]
_ZH_ALLERGY_NOT_OBJECT = re.compile(
    r"了|今天|昨天|好像|可能|也许|有点|又|都|总是|经常|容易|不|没|很|对"
)


def find_allergies(ctx: Context) -> list[Candidate]:
    """Each allergen named, one fact each (topic "allergy:<allergen>").

    The patterns are tried in order; the first that finds an allergen is all there is."""
    if ctx.zh:
        patterns, allergens = _ALLERGY_ZH, _allergens_zh
    elif ctx.question:
        return []
    else:
        patterns, allergens = _ALLERGY_EN, _allergens_en
    for pattern in patterns:
        found = [
            candidate
            for match in pattern.finditer(ctx.clause)
            for candidate in allergens(ctx, match)
        ]
        if found:
            return found
    return []


def _allergy(ctx: Context, content: str, item: str) -> Candidate:
    return ctx.make(
        content, FactCategory.CONSTRAINT, Confidence.HIGH, f"allergy:{topic_key(item)}", "allergic"
    )


def _allergens_zh(ctx: Context, match: re.Match[str]) -> list[Candidate]:
    """The allergens of one "对……过敏", unless asked ("吗") or denied ("不会")."""
    tail = ctx.clause[match.end() : match.end() + 1]
    if tail == "吗" or re.search(r"(?:不|没有?|不会)$", match.group("obj")):
        return []
    obj = re.sub(r"^有", "", match.group("obj"))
    return [
        _allergy(ctx, f"{ctx.subject.zh}对{item}过敏。", item)
        for item in split_items(obj)
        if not _ZH_ALLERGY_NOT_OBJECT.search(item)
    ]


def _allergens_en(ctx: Context, match: re.Match[str]) -> list[Candidate]:
    """The allergens of one "allergic to ..."."""
    return [
        _allergy(ctx, f"{en_subject(ctx)} is allergic to {item}.", item)
        for item in split_items(match.group("obj"))
    ]
