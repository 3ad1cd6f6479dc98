"""One extractor per kind of fact; each reads one clause and returns what it states."""

from __future__ import annotations

from hindsight.adapters.reflectors.rule_based.candidates import Candidate, Context, Extractor
from hindsight.adapters.reflectors.rule_based.clauses import (
    clauses,
    hedged,
    is_zh,
    question,
    temporary,
)
from hindsight.adapters.reflectors.rule_based.extractors.allergies import find_allergies
from hindsight.adapters.reflectors.rule_based.extractors.diet import find_diet
from hindsight.adapters.reflectors.rule_based.extractors.family import find_family
from hindsight.adapters.reflectors.rule_based.extractors.habits import find_habits
from hindsight.adapters.reflectors.rule_based.extractors.names import find_names
from hindsight.adapters.reflectors.rule_based.extractors.plans import find_plans
from hindsight.adapters.reflectors.rule_based.extractors.preferences import find_preferences
from hindsight.adapters.reflectors.rule_based.speakers import Subject, Turn

# the order matters: the first kind that finds something in a clause wins
EXTRACTORS: tuple[Extractor, ...] = (
    find_names,
    find_allergies,
    find_diet,
    find_family,
    find_preferences,
    find_habits,
    find_plans,
)


def extract(turn: Turn, user_id: str) -> list[Candidate]:
    """Candidate facts in each clause of a turn, about its speaker (or the user)."""
    subject = Subject.of(turn.speaker, user_id)
    found: list[Candidate] = []
    for clause in clauses(turn.text):
        ctx = Context(
            clause=clause,
            subject=subject,
            memory_id=turn.memory_id,
            occurred_at=turn.occurred_at,
            hedged=hedged(clause),
            temporary=temporary(clause),
            question=question(clause),
            zh=is_zh(clause),
        )
        for extractor in EXTRACTORS:
            extracted = extractor(ctx)
            if extracted:
                found.extend(extracted)
                break
    return found
