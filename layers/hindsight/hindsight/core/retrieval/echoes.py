"""A user's own statement outranks an assistant's echo of it, by score.

A user says "I just moved to Lisbon last month" and the assistant answers "Welcome to
Lisbon! You will love the food". Asked "where does the user live", the echo is the closer
sentence to the model (a greeting with the city's name), and the user's own turn, the one
that says it, comes second; ``Policy.assistant_weight`` does not settle it: it weighs an
assistant's turn of a session by a constant, while relevance is relative (the best
candidate is 1, the next can be far lower), and an assistant's turn stored without a
session (a transcript of flat turns, an agent writing both sides) keeps its whole weight.

So, within the top ``STATE_WINDOW`` results, an assistant's turn (``core/retrieval/speakers.py``)
is an *echo* of a turn of another speaker ranked below it when

* the query does not ask for the assistant's words ("what did you suggest", "你建议");
* the other turn is not the assistant's and came first: in the same session, or, for two
  turns without a session, at most ``ECHO_SECONDS`` before it;
* and they name a value in common (``state_values.named_values``: "Lisbon", "里斯本").

The echo and the statement then swap their scores: the statement takes the echo's score
(``why["echo"]["factor"]`` > 1) and the echo the statement's (< 1), each naming the
other. No other result's score or place changes. An assistant's turn that names nothing
the user said ("Welcome! How can I help?"), a statement in another session, or a query
about the assistant's words changes nothing.
"""

from __future__ import annotations

from typing import Any

from hindsight.core.models import EpisodicMemory, Memory
from hindsight.core.retrieval.ranking import Row, order_key
from hindsight.core.retrieval.speakers import asks_assistant_words, is_assistant
from hindsight.core.retrieval.state_values import named_values
from hindsight.core.retrieval.states import MAX_STATEMENT_CHARS

ECHO_SECONDS = 3_600.0  # turns without a session: an answer within the hour
ECHO = "an assistant's echo of a statement of the user's: it takes the statement's score"
ECHOED = "the user's own statement of what an assistant's turn echoes: it takes the echo's score"


def with_echo_factors(window: list[Row], query: str) -> list[Row]:
    """``window`` (best first) with each echo and the statement it echoes swapping scores."""
    if asks_assistant_words(query):
        return window
    rows = list(window)
    swapped: set[str] = set()
    for i, row in enumerate(rows):
        echo = row.memory
        if echo.memory_id in swapped or not _assistant_turn(echo):
            continue
        for j in range(i + 1, len(rows)):
            statement = rows[j].memory
            if statement.memory_id not in swapped and _echoes(echo, statement):
                rows[i], rows[j] = _swapped(rows[i], rows[j])
                swapped.update({echo.memory_id, statement.memory_id})
                break
    return sorted(rows, key=order_key) if swapped else window


def _assistant_turn(memory: Memory) -> bool:
    return (
        isinstance(memory, EpisodicMemory)
        and is_assistant(memory.speaker)
        and len(memory.content) <= MAX_STATEMENT_CHARS
    )


def _echoes(echo: Memory, statement: Memory) -> bool:
    """Whether ``echo`` (an assistant's turn) answers ``statement`` naming a value of it."""
    if not isinstance(echo, EpisodicMemory) or not isinstance(statement, EpisodicMemory):
        return False
    if not statement.speaker or is_assistant(statement.speaker):
        return False
    if len(statement.content) > MAX_STATEMENT_CHARS:
        return False
    gap = (echo.occurred_at - statement.occurred_at).total_seconds()
    if gap < 0.0:
        return False
    if echo.session_id or statement.session_id:
        if echo.session_id != statement.session_id:
            return False
    elif gap > ECHO_SECONDS:
        return False
    return bool(named_values(echo.content) & named_values(statement.content))


def _swapped(echo_row: Row, statement_row: Row) -> tuple[Row, Row]:
    """The statement's row with the echo's score, and the echo's with the statement's."""
    high, low = echo_row.score, statement_row.score
    echo, statement = echo_row.memory, statement_row.memory
    statement_row.parts.echo = _factor(low, high, ECHOED, echoed_by=echo.memory_id)
    echo_row.parts.echo = _factor(high, low, ECHO, echoes=statement.memory_id)
    statement_row.parts.score, echo_row.parts.score = high, low
    return Row(high, statement, statement_row.parts), Row(low, echo, echo_row.parts)


def _factor(own: float, taken: float, reason: str, **link: str) -> dict[str, Any]:
    factor = taken / own if own > 0.0 else 1.0
    return {"factor": round(factor, 6), "reason": reason, **link}
