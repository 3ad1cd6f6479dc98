"""Moods: a feeling that recurs across episodes becomes a fact; one episode is not enough.

Only statements of feelings count ("I'm so stressed", "I feel drained", "压力好大"). An
episode's ``emotion`` label (set by the caller, often by a classifier) counts only when
the user's words in it state a feeling: a label on "I am allergic to peanuts" says
nothing about the user's moods.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hindsight.adapters.reflectors.rule_based.candidates import Candidate
from hindsight.adapters.reflectors.rule_based.clauses import expand, is_zh
from hindsight.adapters.reflectors.rule_based.lexicon import mapping, words
from hindsight.adapters.reflectors.rule_based.speakers import Subject, user_turns
from hindsight.core.models import Confidence, EpisodicMemory, FactCategory

_MOOD_WORDS_EN = re.compile(
    r"\b(?:I am|I feel|I have been|I've been|feeling|I get|I got)\s+(?:(?:so|very|really|a bit|"
    r"quite|pretty|kind of|super|extremely|incredibly|totally)\s+)*(?P<m>stressed|anxious|tired|"
    r"exhausted|sad|depressed|happy|excited|angry|frustrated|lonely|worried|overwhelmed|bored|"
    r"upset|nervous|burned out|burnt out)\b",
    re.IGNORECASE,
)
_MOOD_WORDS_ZH = re.compile(
    r"(?<![不没别])(?:压力(?:好|很|太|特别|挺|超)?大|焦虑|好累|很累|太累|累死|疲惫|难过|伤心|开心|高兴|生气|烦躁|好烦|很烦|"
    r"郁闷|孤独|寂寞|紧张|担心|崩溃|无聊|兴奋)"
)
# a statement of a feeling without a mood word: "I feel drained", "心情很差"
_FEELING_EN = re.compile(
    r"\b(?:I (?:feel|felt|am feeling|was feeling|have been feeling)|feeling|my mood|"
    r"I am (?:not (?:so |very |too )?happy|unhappy|not ok(?:ay)?))\b"
    r"(?!\s+like\b)",
    re.IGNORECASE,
)
_FEELING_ZH = re.compile(r"心情|情绪|感觉(?:很|好|有点|特别|挺|太|非常)|心里|不开心|不高兴")
_NEGATED_EN = re.compile(r"(?:\b(?:not|never|no)\s+|n't\s+|\bun)$")
_NEGATED_ZH = ("不", "没", "别")


def canonical_mood(label: str) -> str:
    """One name per mood ("overwhelmed", "压力" -> "stressed"); "" for no mood."""
    lowered = label.strip().lower()
    if not lowered or lowered in words("neutral_moods"):
        return ""
    mood_words = mapping("mood_words")
    if lowered in mood_words:
        return mood_words[lowered]
    for key, value in mood_words.items():
        if any(not _negated(lowered, at, key) for at in _positions(lowered, key)):
            return value
    return lowered[:40]


def _positions(text: str, key: str) -> list[int]:
    """Where ``key`` stands in ``text``: as a word for English, anywhere for Chinese."""
    if key.isascii():
        return [m.start() for m in re.finditer(rf"(?<![a-z]){re.escape(key)}\b", text)]
    return [m.start() for m in re.finditer(re.escape(key), text)]


def _negated(text: str, at: int, key: str) -> bool:
    """ "not happy", "unhappy", "不开心": the mood word denied."""
    before = text[:at]
    if key.isascii():
        return bool(_NEGATED_EN.search(before))
    return before.endswith(_NEGATED_ZH)


def states_feeling(text: str) -> bool:
    """Whether the text says how its speaker feels (a mood word or a feeling phrase)."""
    expanded = expand(text)
    return bool(moods_in(text) or _FEELING_EN.search(expanded) or _FEELING_ZH.search(text))


def moods_in(text: str) -> list[str]:
    """The moods a text states ("I'm so stressed", "压力好大"), in order."""
    found = [canonical_mood(m.group("m")) for m in _MOOD_WORDS_EN.finditer(expand(text))]
    found += [canonical_mood(m.group(0)) for m in _MOOD_WORDS_ZH.finditer(text)]
    return [m for m in found if m]


def mood_patterns(
    episodes: Sequence[EpisodicMemory], user_id: str, min_episodes: int
) -> list[Candidate]:
    """A mood found in at least ``min_episodes`` episodes (labelled or said by the user)."""
    seen: dict[str, list[EpisodicMemory]] = {}
    for episode in episodes:
        labels: set[str] = set()
        said = user_turns(episode)
        if episode.emotion and any(states_feeling(turn.text) for turn in said):
            mood = canonical_mood(episode.emotion)
            if mood:
                labels.add(mood)
        for turn in said:
            labels.update(moods_in(turn.text))
        for label in sorted(labels):  # a set: sorted, so that ties order the same every run
            seen.setdefault(label, []).append(episode)
    moods: list[Candidate] = []
    for label, where in seen.items():
        if len(where) < min_episodes:
            continue
        zh = sum(is_zh(e.content) for e in where) * 2 > len(where)
        subject = Subject.of(where[-1].speaker, user_id)
        content = (
            f"{subject.zh}多次表现出{mapping('mood_text', 'zh').get(label, label)}的情绪。"
            if zh
            else f"{subject.en} has repeatedly felt {label}."
        )
        confidence = Confidence.MEDIUM if len(where) >= 3 else Confidence.LOW
        for episode in where:
            moods.append(
                Candidate(
                    content,
                    FactCategory.MOOD,
                    confidence,
                    f"{subject.topic_prefix}mood:{label}",
                    "mood",
                    episode.memory_id,
                    episode.occurred_at,
                    repeatable=False,
                )
            )
    return moods
