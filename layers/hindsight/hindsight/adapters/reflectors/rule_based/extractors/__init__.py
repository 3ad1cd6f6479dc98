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
from hindsight.adapters.reflectors.rule_based.extractors.states import (
    find_state,
    sentences,
    with_state_topic,
)
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
    """Candidate facts of a turn, about its speaker (or the user), sentence by sentence:
    the other extractors read each clause; a sentence stating a state of the speaker
    (where they live, their job, ...) of one clause gives its state topic to what they
    found in it; a longer one, or one they found nothing in, becomes one state fact
    (``extractors/states.py``)."""
    subject = Subject.of(turn.speaker, user_id)
    found: list[Candidate] = []
    for sentence in sentences(turn.text):
        context = Context(sentence, subject, turn.memory_id, turn.occurred_at, zh=is_zh(sentence))
        in_clauses = _from_clauses(sentence, subject, turn)
        state = find_state(sentence, context)
        if state is None:
            found.extend(in_clauses)
        elif not in_clauses or len(clauses(sentence)) > 1:
            found.append(state)  # what one clause yields may miss the value the rest gives
        else:
            found.extend(with_state_topic(in_clauses, state))
    return found


def _from_clauses(text: str, subject: Subject, turn: Turn) -> list[Candidate]:
    """What the extractors find in each clause of ``text``: the first kind that finds
    something in a clause wins."""
    found: list[Candidate] = []
    for clause in clauses(text):
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
