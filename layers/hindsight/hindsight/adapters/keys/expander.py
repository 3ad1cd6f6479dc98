"""Store-time search keys from a bilingual category lexicon and the offline extractors.

A memory's keys are the keys of every category it is about (``categories.json``), in
English and Chinese whatever the memory's language: "我不吃辣" is about diet and gets
"diet", "food", "饮食", "饮食偏好", ...; "My sister Ana lives in Porto" is about family and
home. A memory is about a category when

- a cue word of the category is among its words (English, after ``core.text.tokenize``,
  so "allergies" and "allergy" are one cue), a cue phrase is in its text, or a Chinese cue
  is anywhere in it; or
- the offline reflector's extractors (``adapters/reflectors/rule_based/extractors``) find
  a fact in it whose topic maps to the category ("I work as a nurse" → ``state:employer``
  → work); the kind of that fact adds a few keys more (a constraint: "restriction", "限制").

Only the first ``EXTRACT_CHARS`` characters go to the extractors (they read sentence by
sentence; a long pasted text is mostly not about the user) and the first ``CUE_CHARS`` to
the cue scan, so a long memory costs about what a short one does (docs/decisions.md,
"Store-time key expansion").
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from hindsight.core.text import normalize, tokenize

logger = logging.getLogger(__name__)

EXTRACT_CHARS = 500
CUE_CHARS = 4_000
MAX_CATEGORIES = 4  # a memory about more is about nothing in particular
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Category:
    """One category of the lexicon: its keys and what says a memory is about it."""

    name: str
    keys: tuple[str, ...]
    cues_en: frozenset[str]
    phrases_en: re.Pattern[str] | None
    cues_zh: re.Pattern[str] | None


@dataclass(frozen=True)
class Lexicon:
    categories: tuple[Category, ...]
    fact_topics: dict[str, tuple[str, ...]]
    fact_kinds: dict[str, tuple[str, ...]]

    def category(self, name: str) -> Category:
        return next(c for c in self.categories if c.name == name)


def _alternation(words: list[str], english: bool) -> re.Pattern[str] | None:
    """One pattern matching any of ``words`` (English ones on word boundaries)."""
    if not words:
        return None
    ordered = sorted({normalize(w) for w in words}, key=len, reverse=True)
    body = "|".join(re.escape(w) for w in ordered)
    return re.compile(rf"\b(?:{body})\b" if english else f"(?:{body})")


def _category(name: str, entry: dict[str, Any]) -> Category:
    cues = {term for word in entry["cues_en"] for term in tokenize(word)}
    return Category(
        name=name,
        keys=tuple(entry["keys"]),
        cues_en=frozenset(cues),
        phrases_en=_alternation(entry["phrases_en"], english=True),
        cues_zh=_alternation(entry["cues_zh"], english=False),
    )


@cache
def load_lexicon() -> Lexicon:
    """The lexicon shipped with the package (``categories.json``), read once."""
    text = resources.files(__package__).joinpath("categories.json").read_text("utf-8")
    data = json.loads(text)
    categories = tuple(_category(name, entry) for name, entry in data["categories"].items())
    names = {c.name for c in categories}
    topics = {topic: tuple(found) for topic, found in data["fact_topics"].items()}
    unknown = {n for found in topics.values() for n in found} - names
    if unknown:
        raise ValueError(f"categories.json: fact_topics name unknown categories {unknown}")
    kinds = {kind: tuple(keys) for kind, keys in data["fact_kinds"].items()}
    return Lexicon(categories, topics, kinds)


class LexiconKeyExpander:
    """``KeyExpander`` from the bilingual category lexicon and the offline extractors."""

    def __init__(
        self, lexicon: Lexicon | None = None, use_extractors: bool = True, use_cues: bool = True
    ) -> None:
        self.lexicon = lexicon or load_lexicon()
        self.use_extractors = use_extractors
        self.use_cues = use_cues

    def keys(self, text: str) -> list[str]:
        if not text.strip():
            return []
        fact_categories, fact_keys = self._facts(text[:EXTRACT_CHARS])
        named = list(dict.fromkeys([*fact_categories, *self._cued(text[:CUE_CHARS])]))
        keys = [key for name in named[:MAX_CATEGORIES] for key in self.lexicon.category(name).keys]
        return list(dict.fromkeys([*keys, *fact_keys]))

    def categories(self, text: str) -> list[str]:
        """The categories a text is about (for debugging and tests), facts' first."""
        fact_categories, _ = self._facts(text[:EXTRACT_CHARS])
        named = dict.fromkeys([*fact_categories, *self._cued(text[:CUE_CHARS])])
        return list(named)[:MAX_CATEGORIES]

    def _cued(self, text: str) -> list[str]:
        """Categories whose cues the text holds, the most cued first."""
        if not self.use_cues:
            return []
        folded = normalize(text)
        words = set(tokenize(text))
        counts: dict[str, int] = {}
        for category in self.lexicon.categories:
            hits = len(words & category.cues_en)
            if category.phrases_en is not None:
                hits += len(category.phrases_en.findall(folded))
            if category.cues_zh is not None:
                hits += len(category.cues_zh.findall(folded))
            if hits:
                counts[category.name] = hits
        return sorted(counts, key=lambda name: -counts[name])

    def _facts(self, text: str) -> tuple[list[str], list[str]]:
        """(categories, extra keys) of the facts the offline extractors find in the text."""
        if not self.use_extractors:
            return [], []
        from hindsight.adapters.reflectors.rule_based.extractors import extract
        from hindsight.adapters.reflectors.rule_based.speakers import Turn

        turn = Turn(memory_id="", occurred_at=_EPOCH, speaker=None, text=text, emotion=None)
        try:
            candidates = extract(turn, "")
        except Exception:  # an extractor's bug must never fail a store: keys are extras
            logger.exception("key extraction failed; the memory keeps its cue keys")
            return [], []
        categories: list[str] = []
        keys: list[str] = []
        for candidate in candidates:
            categories += self._topic_categories(candidate.topic)
            keys += self.lexicon.fact_kinds.get(candidate.category.value, ())
        return categories, keys

    def _topic_categories(self, topic: str) -> tuple[str, ...]:
        """Categories of a fact topic ("allergy:peanut", "state:employer:..."): the longest
        prefix the lexicon maps. A topic about someone else ("sister:...") maps by its
        own part after the subject prefix as well."""
        parts = topic.split(":")
        for start in range(len(parts)):
            for end in range(len(parts), start, -1):
                found = self.lexicon.fact_topics.get(":".join(parts[start:end]))
                if found is not None:
                    return found
        return ()
