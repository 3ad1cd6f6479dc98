"""Topic keys: what a fact is about, the same whatever the language or phrasing.

"I love hiking" and "I no longer like hiking" share "hiking", so the newer fact
supersedes the older; "allergic to peanuts" and "allergic to shellfish" do not.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from functools import cache

from hindsight.adapters.reflectors.rule_based.clauses import is_zh
from hindsight.adapters.reflectors.rule_based.grammar import singular
from hindsight.adapters.reflectors.rule_based.lexicon import Language, mapping, words

_SKIP_FLAGS_ZH = ("m", "t", "r", "p", "u", "d", "c", "y", "x", "q", "f")


def slug_words(parts: Sequence[str]) -> str:
    """Words joined with "-", at most 60 characters."""
    return "-".join(w for w in parts if w)[:60]


def posseg(text: str, hmm: bool = True) -> list[tuple[str, str]]:
    """(word, part of speech) pairs from jieba, imported on first use and kept quiet."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return [(t.word, t.flag) for t in jieba.posseg.lcut(text, HMM=hmm)]


def _jieba_words(text: str) -> list[str]:
    """Content words of Chinese text (numbers, times, pronouns and particles dropped)."""
    return [
        word for word, flag in posseg(text) if word.strip() and not flag.startswith(_SKIP_FLAGS_ZH)
    ]


@cache
def _glossary_terms(language: Language) -> tuple[str, ...]:
    """Glossary terms of one language, longest first."""
    return tuple(sorted(mapping("glossary", language), key=len, reverse=True))


def topic_key(phrase: str, use_glossary: bool = True) -> str:
    """Normalised key for a phrase: glossary term, else its first content words."""
    lowered = phrase.lower().strip()
    if use_glossary:
        key = _glossary_key(lowered)
        if key is not None:
            return key
    return _zh_key(lowered) if is_zh(lowered) else _en_key(lowered)


def _glossary_key(lowered: str) -> str | None:
    """The key of the glossary term found earliest (the longest there), if any."""
    glossary = mapping("glossary")
    hits: list[tuple[int, int, str]] = []  # (position, -length, key): earliest, longest
    for term in _glossary_terms("zh"):
        position = lowered.find(term)
        if position >= 0:
            hits.append((position, -len(term), glossary[term]))
    for term in _glossary_terms("en"):
        match = re.search(rf"\b{re.escape(term)}(?:s|es)?\b", lowered)
        if match:
            hits.append((match.start(), -len(term), glossary[term]))
    return min(hits)[2] if hits else None


def _zh_key(lowered: str) -> str:
    """The first two Chinese content words that are not stop words or punctuation."""
    stop_zh = words("topic_stop_words", "zh")
    zh_words = [
        w for w in _jieba_words(lowered) if w not in stop_zh and not re.fullmatch(r"[\W_]+", w)
    ]
    return slug_words(zh_words[:2])


def _en_key(lowered: str) -> str:
    """The first two English content words, singular, up to a break word ("and", "with")."""
    stop_en, break_en = words("topic_stop_words", "en"), words("topic_break_words", "en")
    found: list[str] = []
    for token in re.findall(r"[a-z0-9]+", lowered):
        if token in break_en and found:
            break
        if token in stop_en or token in break_en:
            continue
        found.append(singular(token))
        if len(found) == 2:
            break
    return slug_words(found)
