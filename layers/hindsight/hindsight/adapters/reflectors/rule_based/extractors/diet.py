"""Dietary constraints: "I'm vegetarian", "I don't eat pork", "我不吃牛肉"."""

from __future__ import annotations

import re

from hindsight.adapters.reflectors.rule_based.candidates import I_EN, Candidate, Context, en_subject
from hindsight.adapters.reflectors.rule_based.grammar import clean_object, conjugate, split_items
from hindsight.adapters.reflectors.rule_based.lexicon import mapping
from hindsight.adapters.reflectors.rule_based.topics import slug_words, topic_key
from hindsight.core.models import Confidence, FactCategory

_DIET_EN_SIMPLE = re.compile(
    rf"\b{I_EN}\s+(?P<neg>do not|does not|never|cannot|can not|should not|must not|will not)\s+"
    r"(?P<verb>eat|drink)\s+(?P<obj>[^.;!?]+)",
    re.IGNORECASE,
)
_DIET_IDENTITY_EN = re.compile(
    rf"\b{I_EN}\s+(?:am|is)\s+(?:a\s+)?(?:(?:strict|full|total)\s+)?(?P<diet>vegetarian|vegan|"
    r"pescatarian|lactose[- ]intolerant|gluten[- ]free|diabetic|teetotal|teetotaler|celiac|"
    r"coeliac|on a (?:keto|low[- ]carb|low[- ]sugar|low[- ]salt) diet)\b",
    re.IGNORECASE,
)
_DIET_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?:从来|从|一直|平时|基本|也|都|完全)*(?P<neg>不能|不可以|不敢|没法|不|忌|戒)"
    r"(?P<verb>吃|喝|碰)(?P<obj>[^，。！？；]{1,15})"
)
_DIET_IDENTITY_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?:是|一直|平时)?(?P<diet>吃素|素食主义者|素食者|吃全素|纯素食者|乳糖不耐受?|"
    r"有糖尿病|在减肥|戒酒了?)"
)


def find_diet(ctx: Context) -> list[Candidate]:
    """Diets and foods avoided for good; never what is avoided just today."""
    found: list[Candidate] = []
    if ctx.temporary or ctx.question:
        return found
    if ctx.zh:
        for match in _DIET_IDENTITY_ZH.finditer(ctx.clause):
            diet = match.group("diet")
            key = mapping("diet_keys", "zh").get(diet, topic_key(diet, False))
            found.append(
                ctx.make(
                    f"{ctx.subject.zh}{'是' if '者' in diet else ''}{diet}。",
                    FactCategory.CONSTRAINT,
                    Confidence.HIGH,
                    f"diet:{key}",
                    "diet",
                )
            )
        for match in _DIET_ZH.finditer(ctx.clause):
            obj = clean_object(match.group("obj"))
            if not obj or re.match(r"^(?:了|过|着|完|饱|下|得)", obj):
                continue
            neg = match.group("neg")
            verb = match.group("verb")
            found.append(
                ctx.make(
                    f"{ctx.subject.zh}{neg}{verb}{obj}。",
                    FactCategory.CONSTRAINT,
                    Confidence.HIGH,
                    f"diet:{topic_key(obj)}",
                    "avoid",
                )
            )
        return found
    for match in _DIET_IDENTITY_EN.finditer(ctx.clause):
        diet = match.group("diet").lower()
        found.append(
            ctx.make(
                f"{en_subject(ctx)} is {diet}.",
                FactCategory.CONSTRAINT,
                Confidence.HIGH,
                f"diet:{slug_words(re.findall(r'[a-z]+', diet))}",
                "diet",
            )
        )
    for match in _DIET_EN_SIMPLE.finditer(ctx.clause):
        neg = mapping("negations", "en")[match.group("neg").lower()]
        verb = match.group("verb").lower()
        if neg == "never":
            verb = conjugate(verb)
        for item in split_items(match.group("obj")):
            found.append(
                ctx.make(
                    f"{en_subject(ctx)} {neg} {verb} {item}.",
                    FactCategory.CONSTRAINT,
                    Confidence.HIGH,
                    f"diet:{topic_key(item)}",
                    "avoid",
                )
            )
    return found
