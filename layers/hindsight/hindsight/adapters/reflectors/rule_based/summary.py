"""A session summarised: what the user wants, what is mentioned, what is still to do, mood."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence

from hindsight.adapters.reflectors.rule_based.clauses import clauses, is_zh
from hindsight.adapters.reflectors.rule_based.extractors import extract
from hindsight.adapters.reflectors.rule_based.lexicon import words
from hindsight.adapters.reflectors.rule_based.moods import canonical_mood, moods_in
from hindsight.adapters.reflectors.rule_based.speakers import Turn, user_turns
from hindsight.adapters.reflectors.rule_based.topics import posseg
from hindsight.core.models import EpisodicMemory, FactCategory

_REQUEST_EN = re.compile(
    r"\?\s*$|^(?:please|can you|could you|would you|will you|help me|I want|I would like|"
    r"I need|I am looking for|find|show|tell|book|recommend|remind me|let us|what|how|where|"
    r"when|which|who|why)\b",
    re.IGNORECASE,
)
_REQUEST_ZH = re.compile(
    r"帮我|请|能不能|能否|可以.*吗|我想|我要|我需要|推荐|提醒我|[吗呢][？?]?$|[？?]$"
)


def intent(said: Sequence[Turn]) -> str:
    """The user's latest request or question, else their last words."""
    for turn in reversed(said):
        for clause in reversed(clauses(turn.text)):
            pattern = _REQUEST_ZH if is_zh(clause) else _REQUEST_EN
            if pattern.search(clause):
                return clause[:200]
    return said[-1].text[:200] if said else ""


_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z0-9&'-]*(?:\s+[A-Z][a-zA-Z0-9&'-]*)*")
_QUANTITY = re.compile(
    r"[$€£¥]\s?\d+(?:[.,]\d+)?|\d+(?:[.,]\d+)?\s?(?:%|km|kg|mg|ml|cm|mm|hours?|hrs?|minutes?|"
    r"mins?|days?|weeks?|months?|years?|usd|eur|rmb|yuan|dollars?|euros?|people|persons?|"
    r"guests?|nights?|am|pm|g|l|m|h|元|块钱?|公里|千米|米|公斤|斤|克|人|位|天|晚|小时|分钟|岁|点|楼|层|"
    r"个月|周|次|张|间)(?![a-zA-Z])",
    re.IGNORECASE,
)
_NOUN_FLAGS = ("n", "nr", "ns", "nt", "nz", "nrt", "nrfg", "vn")
_MAX_ENTITY_TEXT = 1_000


def entities(texts: Sequence[str], limit: int = 15) -> list[str]:
    """Quantities, capitalised names and Chinese nouns, first mention first, no repeats."""
    not_entities_en, not_entities_zh = words("not_entities", "en"), words("not_entities", "zh")
    found: list[str] = []
    for text in texts:
        expanded = text.replace("’", "'")
        found.extend(match.group(0).strip() for match in _QUANTITY.finditer(expanded))
        found.extend(_capitalised_names(expanded, not_entities_en))
        if is_zh(text):
            found.extend(_nouns_zh(text, not_entities_zh))
    unique: dict[str, str] = {}
    for entity in found:
        unique.setdefault(entity.lower(), entity)
    return list(unique.values())[:limit]


def _capitalised_names(text: str, not_entities: Collection[str]) -> list[str]:
    """Runs of capitalised words, leading common words dropped; one word opening a
    sentence is no name."""
    names = []
    for match in _CAPITALISED.finditer(text):
        parts = match.group(0).split()
        at_start = not text[: match.start()].strip() or re.search(
            r"[.!?:]\s*$", text[: match.start()]
        )
        if at_start and len(parts) == 1:
            continue
        while parts and parts[0].lower() in not_entities:
            parts = parts[1:]
        if parts and not all(w.lower() in not_entities for w in parts):
            names.append(" ".join(parts))
    return names


def _nouns_zh(text: str, not_entities: Collection[str]) -> list[str]:
    """Chinese nouns of two characters or more (in the first 1,000 characters)."""
    return [
        word
        for word, flag in posseg(text[:_MAX_ENTITY_TEXT], hmm=False)
        if flag in _NOUN_FLAGS and len(word) >= 2 and is_zh(word) and word not in not_entities
    ]


_DONE = re.compile(
    r"\b(?:done|finished|completed|booked|sent|bought|paid|submitted|cancelled|canceled|"
    r"already did|took care of)\b|完成|做完|搞定|办完|办好|订好|买好|已经|取消了|发了|交了",
    re.IGNORECASE,
)


def open_tasks(said: Sequence[Turn]) -> list[str]:
    """Tasks and plans the user stated and did not later say were done; the last ten."""
    tasks: dict[str, tuple[str, int]] = {}
    done_clauses: list[tuple[int, str]] = []
    for position, turn in enumerate(said):
        for candidate in extract(turn, "user"):
            if candidate.category is FactCategory.TASK:
                tasks[candidate.topic] = (candidate.content, position)
        for clause in clauses(turn.text):
            if _DONE.search(clause):
                done_clauses.append((position, clause.lower()))
    still_open = []
    for topic, (content, position) in tasks.items():
        topic_words = [w for w in topic.removeprefix("plan:").split("-") if w]
        finished = any(
            later > position and topic_words and all(w in clause for w in topic_words)
            for later, clause in done_clauses
        )
        if not finished:
            still_open.append(content)
    return still_open[-10:]


def session_mood(episodes: Sequence[EpisodicMemory]) -> str:
    """The latest mood, and the most common one if it differs ("tired (earlier mostly sad)")."""
    labels: list[str] = []
    for episode in episodes:
        episode_moods: list[str] = []
        said = user_turns(episode)
        if episode.emotion and said:
            mood = canonical_mood(episode.emotion)
            if mood:
                episode_moods.append(mood)
        for turn in said:
            episode_moods.extend(moods_in(turn.text))
        labels.extend(episode_moods)
    if not labels:
        return ""
    latest = labels[-1]
    counts = Counter(labels)
    common, count = counts.most_common(1)[0]
    if common != latest and count > 1:
        return f"{latest} (earlier mostly {common})"
    return latest
