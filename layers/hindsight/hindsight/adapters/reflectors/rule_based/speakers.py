"""Who says what: turns of an episode, agent turns told apart, whom a statement is about."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from hindsight.adapters.reflectors.rule_based.clauses import is_zh
from hindsight.adapters.reflectors.rule_based.lexicon import words
from hindsight.adapters.reflectors.rule_based.topics import slug_words
from hindsight.core.models import EpisodicMemory
from hindsight.core.retrieval.speakers import is_assistant

_SPEAKER_PREFIX = re.compile(r"^\s*(?P<name>[^:：\n]{1,40}?)\s*[:：]\s*(?P<text>\S.*)$")


def _is_speaker_label(name: str) -> bool:
    """Whether "X: ..." names who speaks rather than being, say, "10:30" or "I'm allergic to"."""
    name = name.strip()
    if is_zh(name):
        return len(name) <= 6 and "我" not in name and not re.search(r"[对过喜欢要是]", name)
    parts = name.split()
    if not parts or len(parts) > 3 or not re.fullmatch(r"[A-Za-z][\w .'-]*", name):
        return False
    lowered = name.lower()
    if lowered in words("user_words") or is_assistant(name):
        return True
    return all(w[:1].isupper() for w in parts) and parts[0] not in {"I", "I'm", "My"}


@dataclass(frozen=True)
class Turn:
    """One line of an episode and who said it."""

    memory_id: str
    occurred_at: datetime
    speaker: str | None
    text: str
    emotion: str | None


def turns(episode: EpisodicMemory) -> list[Turn]:
    """Lines of an episode, each with its speaker ("Name: text" sets the speaker)."""
    speaker = episode.speaker
    found: list[Turn] = []
    for line in episode.content.splitlines() or [episode.content]:
        if not line.strip():
            continue
        text = line.strip()
        match = _SPEAKER_PREFIX.match(line)
        if match and _is_speaker_label(match.group("name")):
            speaker = match.group("name").strip()
            text = match.group("text").strip()
        found.append(Turn(episode.memory_id, episode.occurred_at, speaker, text, episode.emotion))
    return found


def user_turns(episode: EpisodicMemory) -> list[Turn]:
    """The turns of an episode the agent did not say."""
    return [t for t in turns(episode) if not is_assistant(t.speaker)]


@dataclass(frozen=True)
class Subject:
    """Who a first-person statement is about, in both languages."""

    en: str = "The user"
    zh: str = "用户"
    topic_prefix: str = ""

    @classmethod
    def of(cls, speaker: str | None, user_id: str) -> Subject:
        """The user, unless the speaker is someone named."""
        if not speaker:
            return cls()
        name = speaker.strip()
        lowered = name.lower()
        if (
            lowered in words("user_words")
            or lowered == user_id.lower()
            or lowered in words("not_speaker_names")
        ):
            return cls()
        slug = slug_words(re.findall(r"[a-z0-9]+|[\u3400-\u9fff]+", lowered))
        return cls(en=name, zh=name, topic_prefix=f"person:{slug}:" if slug else "")

    def possessive(self) -> str:
        """The name as owner: "Caroline's", "James'"."""
        return f"{self.en}'" if self.en.endswith("s") else f"{self.en}'s"
