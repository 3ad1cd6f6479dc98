"""What an extractor sees (a clause in context) and what it finds (a candidate fact)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from hindsight.adapters.reflectors.rule_based.speakers import Subject
from hindsight.core.models import Confidence, FactCategory

# the subject of a first-person statement, and adverbs that may follow it, in patterns
I_EN = r"(?P<subj>I|the user|user)"
ADVERBS_EN = (
    r"(?:(?:really|absolutely|totally|truly|just|also|still|do|genuinely|very|so|quite|"
    r"kind of|sort of|actually|definitely|honestly|simply)\s+)*"
)


@dataclass
class Candidate:
    """A fact found in one clause of one episode, before the merge."""

    content: str
    category: FactCategory
    confidence: Confidence
    topic: str
    stance: str
    memory_id: str
    occurred_at: datetime
    repeatable: bool = True


@dataclass
class Context:
    """One clause, who it is about, where it comes from, and what kind of clause it is."""

    clause: str
    subject: Subject
    memory_id: str
    occurred_at: datetime
    hedged: bool = False
    temporary: bool = False
    question: bool = False
    zh: bool = False

    def make(
        self, content: str, category: FactCategory, confidence: Confidence, topic: str, stance: str
    ) -> Candidate:
        """A candidate from this clause; a hedged one gets low confidence and says so."""
        if self.hedged:
            confidence = Confidence.LOW
            content = (
                content.rstrip("。") + "（用户语气不确定）。"
                if self.zh
                else content.rstrip(".") + " (stated with uncertainty)."
            )
        return Candidate(
            content=content[:1000],
            category=category,
            confidence=confidence,
            topic=f"{self.subject.topic_prefix}{topic}",
            stance=stance,
            memory_id=self.memory_id,
            occurred_at=self.occurred_at,
        )


Extractor = Callable[[Context], list[Candidate]]


def en_subject(ctx: Context) -> str:
    """Who the clause is about, in English ("The user", "Caroline")."""
    return ctx.subject.en
