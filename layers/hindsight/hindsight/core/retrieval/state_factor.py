"""States of one attribute as a score factor: the newest state takes its group's best score.

``core/retrieval/states.py`` finds, among the top ``STATE_WINDOW`` results, the groups of memories
stating one attribute of the user (where they live, their car, ...) and the order the
query wants them in: the newest state (at the time the query asks about) first, older
ones after it. The group keeps the scores it holds, and its members take them in that
order: the newest state takes the best score of the group, an older state a lower one.
Each member whose score changes gets

    state = the score it takes / its own fused score

in ``why["state"]`` with the reason, so the order stays the score: nothing moves a result
but its score. The group's scores are the ones its members already had, so no member
rises above, or falls below, a result outside the group that it was not already above
or below; the window's lowest score stays the lowest, and pages after it continue it.
"""

from __future__ import annotations

from typing import Any

from hindsight.core.models import Memory
from hindsight.core.retrieval.ranking import Row, order_key

NEWEST = "the state of its attribute at the time asked: it takes the best score its group holds"
UPDATED = (
    "updated later by a newer state of the same attribute: it takes a lower score of its group"
)
LATER = "a state after the time asked: it takes a lower score of its group"


def with_state_factors(
    window: list[Row], order: list[str], updated_by: dict[str, Memory]
) -> list[Row]:
    """``window`` (best first) rescored so that ``order`` (a reordering of its memories
    within their groups) is the order of the scores, best first; each member that takes
    another member's score says so in ``why["state"]``."""
    rows = {row.memory.memory_id: row for row in window}
    rescored: list[Row] = []
    for position, memory_id in enumerate(order):
        row = rows[memory_id]
        taken = window[position].score
        if taken != row.score:
            row.parts.state = _state(row.score, taken, updated_by.get(memory_id))
            row.parts.score = taken
        rescored.append(Row(row.parts.score, row.memory, row.parts))
    return sorted(rescored, key=order_key)


def _state(own: float, taken: float, newer: Memory | None) -> dict[str, Any]:
    factor = taken / own if own > 0.0 else 1.0
    state: dict[str, Any] = {"factor": round(factor, 6)}
    if taken > own:
        state["reason"] = NEWEST
    elif newer is not None:
        state.update(reason=UPDATED, updated_by=newer.memory_id)
    else:
        state["reason"] = LATER
    return state
