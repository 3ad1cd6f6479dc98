"""Preferences: "I love hiking", "I can't stand cilantro", "my favorite tea is oolong"."""

from __future__ import annotations

import re
from collections.abc import Mapping

from hindsight.adapters.reflectors.rule_based.candidates import (
    ADVERBS_EN,
    I_EN,
    Candidate,
    Context,
    en_subject,
)
from hindsight.adapters.reflectors.rule_based.grammar import clean_object, third_person_en
from hindsight.adapters.reflectors.rule_based.lexicon import mapping
from hindsight.adapters.reflectors.rule_based.topics import topic_key
from hindsight.core.models import Confidence, FactCategory

_LIKE_EN = re.compile(
    rf"\b{I_EN}\s+{ADVERBS_EN}(?P<verb>love|loves|like|likes|enjoy|enjoys|prefer|prefers|adore|"
    r"adores|am a (?:big |huge )?fan of|is a (?:big |huge )?fan of|am into|is into|"
    r"am fond of|is fond of)\s+(?P<obj>[^.;!?]+)",
    re.IGNORECASE,
)
_DISLIKE_EN = re.compile(
    rf"\b{I_EN}\s+{ADVERBS_EN}(?P<verb>hate|hates|dislike|dislikes|detest|detests|loathe|loathes|"
    r"cannot stand|can not stand|do not like|does not like|do not enjoy|does not enjoy|"
    r"do not love|does not love|no longer like|no longer likes|no longer enjoy|"
    r"no longer enjoys|do not care for|does not care for|am not a fan of|is not a fan of|"
    r"am not into|is not into|am no longer into|never liked|have never liked)\s+"
    r"(?P<obj>[^.;!?]+)",
    re.IGNORECASE,
)
_FAVORITE_EN = re.compile(
    r"\b(?P<subj>my|the user's)\s+(?:all[- ]time\s+)?favou?rite\s+(?P<what>[a-z]+(?: [a-z]+)?)"
    r"\s+is\s+(?P<obj>[^.;!?]+)",
    re.IGNORECASE,
)
_LIKE_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?:也|还|一直|真的|很|非常|特别|超|超级|最|挺|比较|蛮|还是|更|都|就是|可能|"
    r"也许|好像|大概|应该|或许|挺)*(?P<verb>喜欢|热爱|喜爱|偏爱|钟爱|偏好|爱吃|爱喝|爱看|爱玩|爱)(?P<obj>[^，。！？；]+)"
)
_DISLIKE_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?:也|还|真的|很|非常|特别|超|超级|最|挺|比较|一直|都|就是|可能|也许|好像|"
    r"大概|应该|或许)*"
    r"(?P<verb>不喜欢|不太喜欢|不怎么喜欢|一点都不喜欢|一点也不喜欢|不再喜欢|再也不喜欢|已经不喜欢|"
    r"不爱吃|不爱喝|不爱|讨厌|厌恶|受不了|反感|烦)(?P<obj>[^，。！？；]+)"
)
_FAVORITE_ZH = re.compile(
    r"(?P<subj>我|用户)最?喜欢的(?P<what>[^，。是]{1,8})是(?P<obj>[^，。！？；]+)"
)


def _en_verb(verb: str, table: Mapping[str, str]) -> str:
    """The verb in the third person: "do not like" -> "does not like"."""
    lowered = " ".join(verb.lower().split())
    if lowered in table:
        return table[lowered]
    if lowered.startswith("am "):
        return "is " + lowered[3:]
    return lowered


def find_preferences(ctx: Context) -> list[Candidate]:
    """Likes, dislikes and favourites that last; never what is (not) wanted just today."""
    found: list[Candidate] = []
    if ctx.temporary or ctx.question:
        return found  # "I don't feel like Sichuan food today" is no lasting preference
    if ctx.zh:
        for match in _FAVORITE_ZH.finditer(ctx.clause):
            obj = clean_object(match.group("obj"))
            what = match.group("what")
            if obj:
                found.append(
                    ctx.make(
                        f"{ctx.subject.zh}最喜欢的{what}是{obj}。",
                        FactCategory.PREFERENCE,
                        Confidence.MEDIUM,
                        f"preference:favorite:{topic_key(what, False)}",
                        "favorite",
                    )
                )
        if found:
            return found
        for pattern, stance in ((_DISLIKE_ZH, "dislike"), (_LIKE_ZH, "like")):
            for match in pattern.finditer(ctx.clause):
                obj = clean_object(match.group("obj"))
                if not obj or obj.startswith(("的", "上", "过")):
                    continue
                verb = match.group("verb")
                found.append(
                    ctx.make(
                        f"{ctx.subject.zh}{verb}{obj}。",
                        FactCategory.PREFERENCE,
                        Confidence.MEDIUM,
                        f"preference:{topic_key(obj)}",
                        stance,
                    )
                )
            if found:
                return found
        return found
    for match in _FAVORITE_EN.finditer(ctx.clause):
        obj = clean_object(match.group("obj"))
        what = match.group("what").lower()
        if obj:
            owner = (
                ctx.subject.possessive() if match.group("subj").lower() == "my" else "The user's"
            )
            found.append(
                ctx.make(
                    f"{owner} favorite {what} is {obj}.",
                    FactCategory.PREFERENCE,
                    Confidence.MEDIUM,
                    f"preference:favorite:{topic_key(what, False)}",
                    "favorite",
                )
            )
    if found:
        return found
    for pattern, stance, table in (
        (_DISLIKE_EN, "dislike", mapping("dislike_verbs", "en")),
        (_LIKE_EN, "like", mapping("like_verbs", "en")),
    ):
        for match in pattern.finditer(ctx.clause):
            raw = match.group("obj")
            if stance == "like" and re.match(r"(?:it|this|that)\b", raw.strip(), re.IGNORECASE):
                continue
            obj = clean_object(raw)
            if not obj:
                continue
            third = match.group("subj").lower() != "i"
            verb = match.group("verb") if third else _en_verb(match.group("verb"), table)
            found.append(
                ctx.make(
                    f"{en_subject(ctx)} {verb.lower()} {third_person_en(obj)}.",
                    FactCategory.PREFERENCE,
                    Confidence.MEDIUM,
                    f"preference:{topic_key(obj)}",
                    stance,
                )
            )
        if found:
            return found
    return found
