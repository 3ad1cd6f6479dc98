"""Plans and tasks: "remind me to call mom", "I'm flying to Paris on Friday", "我下周去北京"."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from hindsight.adapters.reflectors.rule_based.candidates import I_EN, Candidate, Context, en_subject
from hindsight.adapters.reflectors.rule_based.grammar import (
    clean_object,
    third_person_en,
    third_person_zh,
)
from hindsight.adapters.reflectors.rule_based.lexicon import mapping, words
from hindsight.adapters.reflectors.rule_based.topics import topic_key
from hindsight.core.models import Confidence, FactCategory, TimeRange
from hindsight.core.temporal import resolve_time_expressions

_REMIND_EN = re.compile(
    r"\b(?:remind me|do not let me forget|make sure I)\s+(?:to\s+)?(?P<act>[^.;!?]+)",
    re.IGNORECASE,
)
_PLAN_EN = re.compile(
    rf"\b{I_EN}\s+(?:(?:also|still|really|definitely|probably|maybe|then)\s+)*"
    r"(?P<modal>am going to|is going to|am planning to|is planning to|plan to|plans to|"
    r"will|need to|needs to|have to|has to|must|have got to|am about to|is about to|"
    r"intend to|intends to|am supposed to|is supposed to|should)\s+(?P<act>[^.;!?]+)",
    re.IGNORECASE,
)
_PROGRESSIVE_EN = re.compile(
    rf"\b{I_EN}\s+(?:am|is)\s+(?P<act>(?:flying|traveling|travelling|leaving|heading|moving|"
    r"visiting|meeting|seeing|attending|starting|taking|having|going|driving|returning|"
    r"coming)\b[^.;!?]*)",
    re.IGNORECASE,
)
_REMIND_ZH = re.compile(
    r"(?:提醒我|记得提醒我|别让我忘了|帮我记着|帮我记一下)(?P<act>[^，。！？；]+)"
)
_PLAN_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?P<pre>[^，。！？；]{0,8}?)"
    r"(?P<modal>打算|准备|计划|需要|必须|得|要|将要|将|会|想要)(?P<act>[^，。！？；]+)"
)
_GO_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?P<pre>[^，。！？；]{1,10}?)"
    r"(?P<act>(?:去|回|飞|出发|出差|开会|见|参加|搬家|考试|面试|到|看病|体检|上班|加班)[^，。！？；]*)"
)
_PRE_FILLERS_ZH = re.compile(
    r"还|也|就|都|可能|也许|大概|下午|上午|晚上|早上|中午|之后|以后|然后|[\d点半:：]+"
)


def _without_time(text: str, reference: datetime) -> str:
    for found in resolve_time_expressions(text, reference):
        text = text.replace(found.expression, " ")
    return re.sub(r"\s+", " ", text).strip()


def _describe_ranges(ranges: Sequence[TimeRange], zh: bool) -> str:
    parts = []
    for time_range in ranges:
        first = time_range.start.date().isoformat()
        last = (time_range.end - timedelta(days=1)).date().isoformat()
        dates = first if first == last else (f"{first}至{last}" if zh else f"{first} to {last}")
        parts.append(
            f"{time_range.expression}：{dates}" if zh else f"{time_range.expression}: {dates}"
        )
    if not parts:
        return ""
    return f"（{'；'.join(parts)}）" if zh else f" ({'; '.join(parts)})"


def _pre_is_time(pre: str, reference: datetime) -> bool:
    rest = _without_time(pre, reference)
    return not _PRE_FILLERS_ZH.sub("", rest).strip()


def _plan_topic(act: str, reference: datetime) -> str:
    key = topic_key(_without_time(act, reference), use_glossary=False)
    return f"plan:{key}" if key else "plan"


def _plan(ctx: Context, content: str, act: str) -> Candidate:
    return ctx.make(
        content, FactCategory.TASK, Confidence.MEDIUM, _plan_topic(act, ctx.occurred_at), "plan"
    )


def find_plans(ctx: Context) -> list[Candidate]:
    """Plans, to-dos and reminders, with the dates their time words resolve to.

    Reminders first (all of them); failing those, and unless the clause is a question,
    the first stated plan."""
    ranges = resolve_time_expressions(ctx.clause, ctx.occurred_at)
    when = _describe_ranges(ranges, ctx.zh)
    reminders = _reminders_zh(ctx, when) if ctx.zh else _reminders_en(ctx, when)
    if reminders or ctx.question:
        return reminders
    if ctx.zh:
        plan = _modal_plan_zh(ctx, ranges, when) or _going_zh(ctx, ranges, when)
    else:
        plan = _modal_plan_en(ctx, when) or (_progressive_en(ctx, when) if ranges else None)
    return [plan] if plan is not None else []


# --- Chinese ---------------------------------------------------------------------------
def _reminders_zh(ctx: Context, when: str) -> list[Candidate]:
    """ "提醒我……": every reminder asked for."""
    found = []
    for match in _REMIND_ZH.finditer(ctx.clause):
        act = clean_object(match.group("act"))
        if act:
            found.append(
                _plan(ctx, f"{ctx.subject.zh}请求提醒：{third_person_zh(act)}{when}。", act)
            )
    return found


def _modal_plan_zh(ctx: Context, ranges: Sequence[TimeRange], when: str) -> Candidate | None:
    """ "我下周打算……": a plan modal after nothing but time words; a weak modal ("要",
    "会") only with a time."""
    for match in _PLAN_ZH.finditer(ctx.clause):
        pre, modal = match.group("pre"), match.group("modal")
        act = clean_object(match.group("act"))
        if not act or not _pre_is_time(pre, ctx.occurred_at):
            continue
        if modal not in words("strong_plan_modals", "zh") and not ranges:
            continue
        return _plan(ctx, f"{ctx.subject.zh}{pre}{modal}{third_person_zh(act)}{when}。", act)
    return None


def _going_zh(ctx: Context, ranges: Sequence[TimeRange], when: str) -> Candidate | None:
    """ "我下周三去北京": a movement verb after a time word that resolves."""
    if not ranges:
        return None
    for match in _GO_ZH.finditer(ctx.clause):
        pre = match.group("pre")
        act = clean_object(match.group("act"))
        if (
            act
            and _pre_is_time(pre, ctx.occurred_at)
            and _without_time(pre, ctx.occurred_at) != pre
        ):
            return _plan(ctx, f"{ctx.subject.zh}{pre}{third_person_zh(act)}{when}。", act)
    return None


# --- English ---------------------------------------------------------------------------
def _reminders_en(ctx: Context, when: str) -> list[Candidate]:
    """ "remind me to ...": every reminder asked for."""
    found = []
    for match in _REMIND_EN.finditer(ctx.clause):
        act = clean_object(match.group("act"))
        if act:
            content = f"{en_subject(ctx)} asked to be reminded to {third_person_en(act)}{when}."
            found.append(_plan(ctx, content, act))
    return found


def _modal_plan_en(ctx: Context, when: str) -> Candidate | None:
    """ "I'm going to / I need to ...", not negated; the modal in the third person."""
    for match in _PLAN_EN.finditer(ctx.clause):
        act = clean_object(match.group("act"))
        if not act or re.match(r"(?:not|never)\b", act, re.IGNORECASE):
            continue
        modal = " ".join(match.group("modal").lower().split())
        third = match.group("subj").lower() != "i"
        modal_text = modal if third else mapping("plan_modals", "en").get(modal, modal)
        return _plan(ctx, f"{en_subject(ctx)} {modal_text} {third_person_en(act)}{when}.", act)
    return None


def _progressive_en(ctx: Context, when: str) -> Candidate | None:
    """ "I'm flying to Paris on Friday": a progressive with a time word in it."""
    for match in _PROGRESSIVE_EN.finditer(ctx.clause):
        act = clean_object(match.group("act"))
        if act and _without_time(act, ctx.occurred_at) != act:
            return _plan(ctx, f"{en_subject(ctx)} is {third_person_en(act)}{when}.", act)
    return None
