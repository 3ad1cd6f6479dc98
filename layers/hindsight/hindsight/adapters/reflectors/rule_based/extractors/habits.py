"""Habits: "I usually run", "every morning I ...", "I swim twice a week", "我每天跑步"."""

from __future__ import annotations

import re

from hindsight.adapters.reflectors.rule_based.candidates import I_EN, Candidate, Context, en_subject
from hindsight.adapters.reflectors.rule_based.grammar import (
    clean_object,
    conjugate,
    third_person_en,
    third_person_zh,
)
from hindsight.adapters.reflectors.rule_based.topics import topic_key
from hindsight.core.models import Confidence, FactCategory

_WHEN_EN = (
    r"every (?:single )?(?:morning|day|night|evening|afternoon|week|weekend|weekday|"
    r"month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|each (?:morning|day|"
    r"night|evening|week)|on weekdays|on weekends|daily|nightly|weekly|"
    r"(?:once|twice|\w+ times) a (?:day|week|month)"
)
_HABIT_ADVERB_EN = re.compile(
    rf"\b{I_EN}\s+(?P<adv>usually|always|often|normally|typically|generally|regularly|"
    r"frequently|tend to|tends to|habitually|never)\s+(?P<act>[^.;!?]+)",
    re.IGNORECASE,
)
_HABIT_LEADING_WHEN_EN = re.compile(
    rf"^(?P<when>{_WHEN_EN}),?\s+{I_EN}\s+(?P<act>[^.;!?]+)", re.IGNORECASE
)
_HABIT_TRAILING_WHEN_EN = re.compile(
    rf"\b{I_EN}\s+(?P<act>(?!(?:am|will|need|have to|want|would|plan)\b)[a-z][^.;!?]*?)\s+"
    rf"(?P<when>{_WHEN_EN})\b(?P<rest>[^.;!?]*)",
    re.IGNORECASE,
)
_HABIT_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?P<adv>(?:每天|每晚|每早|每周[一二三四五六日天末]?|每个?(?:星期|礼拜)[一二三四五六日天]?|"
    r"每个?周末|每个?月|每年|通常|一般|平时|平常|经常|总是|常常|往往|习惯(?:于)?|一直都|从不)"
    r"(?:早上|晚上|中午|下午|上午|早晨|睡前|饭后|都|会|要)*)(?P<act>[^，。！？；]+)"
)


def find_habits(ctx: Context) -> list[Candidate]:
    """What the user does regularly: "I usually ...", "every morning I ...", "我每天...".

    In English the first form found is all there is: adverb, leading time, trailing time."""
    if ctx.question:
        return []
    if ctx.zh:
        return _habits_zh(ctx)
    return _adverb_en(ctx) or _leading_when_en(ctx) or _trailing_when_en(ctx)


def _habit(ctx: Context, content: str, act: str) -> Candidate:
    return ctx.make(
        content, FactCategory.FACT, Confidence.MEDIUM, f"habit:{topic_key(act)}", "habit"
    )


def _act_en(match: re.Match[str], act: str) -> str:
    """The act as said of the user: "I run" -> "runs"; "Ana runs" stays."""
    third = match.group("subj").lower() != "i"
    return act if third else conjugate(third_person_en(act))


def _habits_zh(ctx: Context) -> list[Candidate]:
    """ "我每天早上跑步"."""
    found = []
    for match in _HABIT_ZH.finditer(ctx.clause):
        act = clean_object(match.group("act"))
        if act and len(act) >= 2:
            content = f"{ctx.subject.zh}{match.group('adv')}{third_person_zh(act)}。"
            found.append(_habit(ctx, content, act))
    return found


def _adverb_en(ctx: Context) -> list[Candidate]:
    """ "I usually run", "I tend to walk"."""
    found = []
    for match in _HABIT_ADVERB_EN.finditer(ctx.clause):
        act = clean_object(match.group("act"))
        if not act:
            continue
        adv = match.group("adv").lower()
        adv = "tends to" if adv == "tend to" else adv
        act_text = third_person_en(act) if adv.startswith("tend") else _act_en(match, act)
        found.append(_habit(ctx, f"{en_subject(ctx)} {adv} {act_text}.", act))
    return found


def _leading_when_en(ctx: Context) -> list[Candidate]:
    """ "Every morning I run"."""
    found = []
    for match in _HABIT_LEADING_WHEN_EN.finditer(ctx.clause):
        act = clean_object(match.group("act"))
        if act:
            content = f"{en_subject(ctx)} {_act_en(match, act)} {match.group('when').lower()}."
            found.append(_habit(ctx, content, act))
    return found


def _trailing_when_en(ctx: Context) -> list[Candidate]:
    """ "I swim twice a week with my team"."""
    found = []
    for match in _HABIT_TRAILING_WHEN_EN.finditer(ctx.clause):
        act = match.group("act").strip()
        rest = clean_object(match.group("rest")) if match.group("rest").strip() else ""
        tail = f" {third_person_en(rest)}" if rest else ""
        content = f"{en_subject(ctx)} {_act_en(match, act)} {match.group('when').lower()}{tail}."
        found.append(_habit(ctx, content, act))
    return found
