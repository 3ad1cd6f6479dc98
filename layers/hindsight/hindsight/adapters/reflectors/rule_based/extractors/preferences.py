"""Preferences: "I love hiking", "I can't stand cilantro", "my favorite tea is oolong"."""

from __future__ import annotations

import re
from collections.abc import Mapping

from hindsight.adapters.reflectors.rule_based.candidates import (
    ADVERBS_EN,
    I_EN,
    Candidate,
    Context,
    Extractor,
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
    """Likes, dislikes and favourites that last; never what is (not) wanted just today.

    Favourites first, then dislikes, then likes: the first kind found is all there is."""
    if ctx.temporary or ctx.question:
        return []  # "I don't feel like Sichuan food today" is no lasting preference
    for stage in _STAGES_ZH if ctx.zh else _STAGES_EN:
        found = stage(ctx)
        if found:
            return found
    return []


def _preference(ctx: Context, content: str, topic: str, stance: str) -> Candidate:
    return ctx.make(content, FactCategory.PREFERENCE, Confidence.MEDIUM, topic, stance)


# --- Chinese ---------------------------------------------------------------------------
def _favorites_zh(ctx: Context) -> list[Candidate]:
    """ "我最喜欢的水果是芒果"."""
    found = []
    for match in _FAVORITE_ZH.finditer(ctx.clause):
        obj = clean_object(match.group("obj"))
        what = match.group("what")
        if obj:
            topic = f"preference:favorite:{topic_key(what, False)}"
            found.append(
                _preference(ctx, f"{ctx.subject.zh}最喜欢的{what}是{obj}。", topic, "favorite")
            )
    return found


def _stances_zh(ctx: Context, pattern: re.Pattern[str], stance: str) -> list[Candidate]:
    """ "我很喜欢火锅" / "我讨厌香菜"; not "喜欢的", "喜欢上", "喜欢过"."""
    found = []
    for match in pattern.finditer(ctx.clause):
        obj = clean_object(match.group("obj"))
        if not obj or obj.startswith(("的", "上", "过")):
            continue
        content = f"{ctx.subject.zh}{match.group('verb')}{obj}。"
        found.append(_preference(ctx, content, f"preference:{topic_key(obj)}", stance))
    return found


def _dislikes_zh(ctx: Context) -> list[Candidate]:
    return _stances_zh(ctx, _DISLIKE_ZH, "dislike")


def _likes_zh(ctx: Context) -> list[Candidate]:
    return _stances_zh(ctx, _LIKE_ZH, "like")


# --- English ---------------------------------------------------------------------------
def _favorites_en(ctx: Context) -> list[Candidate]:
    """ "my favorite tea is oolong"."""
    found = []
    for match in _FAVORITE_EN.finditer(ctx.clause):
        obj = clean_object(match.group("obj"))
        what = match.group("what").lower()
        if obj:
            owner = (
                ctx.subject.possessive() if match.group("subj").lower() == "my" else "The user's"
            )
            topic = f"preference:favorite:{topic_key(what, False)}"
            found.append(_preference(ctx, f"{owner} favorite {what} is {obj}.", topic, "favorite"))
    return found


def _stances_en(
    ctx: Context, pattern: re.Pattern[str], stance: str, verbs: Mapping[str, str]
) -> list[Candidate]:
    """ "I love hiking" / "I can't stand cilantro", the verb in the third person."""
    found = []
    for match in pattern.finditer(ctx.clause):
        raw = match.group("obj")
        if stance == "like" and re.match(r"(?:it|this|that)\b", raw.strip(), re.IGNORECASE):
            continue
        obj = clean_object(raw)
        if not obj:
            continue
        third = match.group("subj").lower() != "i"
        verb = match.group("verb") if third else _en_verb(match.group("verb"), verbs)
        content = f"{en_subject(ctx)} {verb.lower()} {third_person_en(obj)}."
        found.append(_preference(ctx, content, f"preference:{topic_key(obj)}", stance))
    return found


def _dislikes_en(ctx: Context) -> list[Candidate]:
    return _stances_en(ctx, _DISLIKE_EN, "dislike", mapping("dislike_verbs", "en"))


def _likes_en(ctx: Context) -> list[Candidate]:
    return _stances_en(ctx, _LIKE_EN, "like", mapping("like_verbs", "en"))


_STAGES_ZH: tuple[Extractor, ...] = (_favorites_zh, _dislikes_zh, _likes_zh)
_STAGES_EN: tuple[Extractor, ...] = (_favorites_en, _dislikes_en, _likes_en)
