"""Pets and family: "I have two dogs", "my sister is called Ana", "我养了一只猫，叫咪咪"."""

from __future__ import annotations

import re
from collections.abc import Collection

from hindsight.adapters.reflectors.rule_based.candidates import I_EN, Candidate, Context, en_subject
from hindsight.adapters.reflectors.rule_based.extractors.names import NAME_WORD, zh_name
from hindsight.adapters.reflectors.rule_based.grammar import clean_object, singular
from hindsight.adapters.reflectors.rule_based.lexicon import mapping, words
from hindsight.core.models import Confidence, FactCategory

_PETS_EN = (
    r"dogs?|cats?|puppy|puppies|kittens?|rabbits?|bunny|bunnies|hamsters?|parrots?|"
    r"birds?|fish|turtles?|tortoises?|guinea pigs?|horses?|snakes?|lizards?"
)
_HAVE_PET_EN = re.compile(
    rf"\b{I_EN}\s+(?:have|has|have got|own|owns)\s+(?P<n>a|an|one|two|three|four|\d+)\s+"
    rf"(?:(?:little|small|big|old|young|new|pet)\s+)?(?P<kind>{_PETS_EN})\b"
    rf"(?:\s*,?\s+(?:named|called)\s+(?P<name>{NAME_WORD}))?",
    re.IGNORECASE,
)
_MY_PET_EN = re.compile(
    rf"\b(?i:my)\s+(?P<kind>(?i:{_PETS_EN}))(?:'s name is|\s+is (?:called|named)|,|\s+(?i:named|"
    rf"called))\s+(?P<name>{NAME_WORD})\b"
)
_RELATIONS_EN = (
    r"wife|husband|son|daughter|mother|mom|mum|father|dad|brother|sister|partner|"
    r"girlfriend|boyfriend|fianc[eé]e?|grandmother|grandfather|grandma|grandpa"
)
_MY_RELATION_EN = re.compile(
    rf"\b(?i:my)\s+(?P<rel>(?i:{_RELATIONS_EN}))(?:'s name is|\s+is (?:called|named)|,|"
    rf"\s+(?i:named|called))\s+(?P<name>{NAME_WORD})\b"
)
_HAVE_KIDS_EN = re.compile(
    rf"\b{I_EN}\s+(?:have|has|have got)\s+(?P<n>a|an|one|two|three|four|five|\d+)\s+"
    r"(?P<kind>kids?|children|child|sons?|daughters?|brothers?|sisters?|siblings?)\b",
    re.IGNORECASE,
)
_PETS_ZH = r"小狗|小猫|狗狗|猫咪|狗|猫|兔子|仓鼠|鹦鹉|乌龟|金鱼|鱼|鸟|马"
_HAVE_PET_ZH = re.compile(
    rf"(?P<subj>我|用户)(?:家)?(?:里)?(?:有|养了|养着|养)(?P<n>[一两二三四五六\d]?)(?:只|条|个|头|匹)?"
    rf"(?P<kind>{_PETS_ZH})(?:[，,]?(?:它)?(?:叫|名叫|名字叫)(?P<name>[\u3400-\u9fffA-Za-z]{{1,4}}))?"
)
_RELATIONS_ZH = (
    r"老婆|妻子|太太|老公|丈夫|先生|儿子|女儿|妈妈|母亲|爸爸|父亲|哥哥|姐姐|弟弟|妹妹|男朋友|"
    r"女朋友|爷爷|奶奶|外公|外婆"
)
_MY_RELATION_ZH = re.compile(
    rf"(?P<subj>我|用户)的?(?P<rel>{_RELATIONS_ZH})(?:叫|名叫|的名字是|的名字叫)(?P<tail>[^，。！？；]+)"
)
_HAVE_KIDS_ZH = re.compile(
    r"(?P<subj>我|用户)有(?P<n>[一两二三四五\d])(?:个)(?P<kind>孩子|儿子|女儿|小孩|兄弟|姐妹)"
)


def find_family(ctx: Context) -> list[Candidate]:
    """Pets (with their names), relatives' names, how many children or siblings."""
    if ctx.question:
        return []
    if ctx.zh:
        return _pets_zh(ctx) + _relatives_zh(ctx) + _children_zh(ctx)
    not_names = words("not_names", "en")
    pets = _pets_en(ctx)
    pets += _named_pets_en(ctx, not_names, pets)
    return pets + _relatives_en(ctx, not_names) + _children_en(ctx)


def _family_fact(ctx: Context, content: str, topic: str) -> Candidate:
    return ctx.make(content, FactCategory.FACT, Confidence.MEDIUM, topic, "has")


# --- Chinese ---------------------------------------------------------------------------
def _pets_zh(ctx: Context) -> list[Candidate]:
    """ "我家里养了两只猫，叫咪咪"."""
    found = []
    for match in _HAVE_PET_ZH.finditer(ctx.clause):
        kind = match.group("kind")
        name = match.group("name") or ""
        key = f"pet:{mapping('pet_kinds', 'zh')[kind]}" + (f":{name.lower()}" if name else "")
        count = match.group("n") or "一"
        text = f"{ctx.subject.zh}养了{count}只{kind}" + (f"，名叫{name}" if name else "")
        found.append(_family_fact(ctx, f"{text}。", key))
    return found


def _relatives_zh(ctx: Context) -> list[Candidate]:
    """ "我的妈妈叫王芳"."""
    relations = mapping("relations")
    found = []
    for match in _MY_RELATION_ZH.finditer(ctx.clause):
        name = zh_name(match.group("tail")) or clean_object(match.group("tail"))[:6]
        rel = match.group("rel")
        if name:
            content = f"{ctx.subject.zh}的{rel}叫{name}。"
            found.append(_family_fact(ctx, content, f"family:{relations[rel]}"))
    return found


def _children_zh(ctx: Context) -> list[Candidate]:
    """ "我有两个孩子"."""
    found = []
    for match in _HAVE_KIDS_ZH.finditer(ctx.clause):
        kind = match.group("kind")
        content = f"{ctx.subject.zh}有{match.group('n')}个{kind}。"
        key = "children" if kind in ("孩子", "小孩") else kind
        found.append(_family_fact(ctx, content, f"family:{key}"))
    return found


# --- English ---------------------------------------------------------------------------
def _pets_en(ctx: Context) -> list[Candidate]:
    """ "I have two dogs", "I have a cat named Luna"."""
    found = []
    for match in _HAVE_PET_EN.finditer(ctx.clause):
        kind = match.group("kind").lower()
        name = match.group("name")
        key = f"pet:{singular(kind.replace(' ', '-'))}" + (f":{name.lower()}" if name else "")
        text = f"{en_subject(ctx)} has {match.group('n').lower()} {kind}"
        found.append(_family_fact(ctx, text + (f" named {name}." if name else "."), key))
    return found


def _named_pets_en(
    ctx: Context, not_names: Collection[str], known: list[Candidate]
) -> list[Candidate]:
    """ "my dog's name is Rex", unless that pet is among the ``known`` ones already."""
    found: list[Candidate] = []
    for match in _MY_PET_EN.finditer(ctx.clause):
        kind = match.group("kind").lower()
        name = match.group("name")
        if name.lower() in not_names or any(
            f.topic.endswith(f":{name.lower()}") for f in (*known, *found)
        ):
            continue
        content = f"{en_subject(ctx)} has a {kind} named {name}."
        found.append(_family_fact(ctx, content, f"pet:{singular(kind)}:{name.lower()}"))
    return found


def _relatives_en(ctx: Context, not_names: Collection[str]) -> list[Candidate]:
    """ "my sister is called Ana"."""
    relations = mapping("relations")
    found = []
    for match in _MY_RELATION_EN.finditer(ctx.clause):
        rel = match.group("rel").lower()
        name = match.group("name")
        if name.lower() not in not_names:
            content = f"{ctx.subject.possessive()} {rel} is called {name}."
            found.append(_family_fact(ctx, content, f"family:{relations.get(rel, rel)}"))
    return found


def _children_en(ctx: Context) -> list[Candidate]:
    """ "I have two kids", "I have a brother"."""
    found = []
    for match in _HAVE_KIDS_EN.finditer(ctx.clause):
        kind = match.group("kind").lower()
        key = "children" if kind.startswith(("kid", "child")) else singular(kind)
        content = f"{en_subject(ctx)} has {match.group('n').lower()} {kind}."
        found.append(_family_fact(ctx, content, f"family:{key}"))
    return found
