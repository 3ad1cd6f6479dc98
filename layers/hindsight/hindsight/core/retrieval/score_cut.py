"""``min_score`` keeps states of one thing together.

Results less probable than ``min_score`` are left out (``core/retrieval/ranking.py``), but a cut
must not split a group of states: "I moved last month, I live in Shanghai now" may score
under the cut while "I live in Beijing" passes it, and the older state alone would then
read as the current one. So a row left out by the cut comes back when it is one of a
group with a result near the top (the top ``STATE_WINDOW``, the rows whose order the
states decide):

* a state of the same attribute of the user (``core/retrieval/states.py``: an earlier or a later
  statement of it), or
* a reflected fact that supersedes the result or that the result supersedes (issue #20's
  groups: the superseded fact and its current replacement).

What comes back then follows the usual rules: the newest state first, an older one marked
``updated_later``; a superseded fact is among the candidates only when the request asks
for superseded facts (``current_only`` false, an ``as_of``, or its statuses).
Candidates the cut never read (even their most favourable probability is under it) are
not considered.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from hindsight.core.models import SemanticMemory, StoredVector
from hindsight.core.retrieval.ranking import Row, order_key
from hindsight.core.retrieval.states import MAX_STATEMENT_CHARS, STATE_WINDOW, order_states


def with_state_groups(
    ranked: list[Row],
    held: list[Row],
    vectors_of: Callable[[list[str]], dict[str, StoredVector]],
    reference: datetime,
    query: str,
) -> list[Row]:
    """``ranked`` and the ``held`` rows (read, under the cut) that are of one group of
    states with a row of the window, in ranking order."""
    window = ranked[:STATE_WINDOW]
    if not held or not window:
        return ranked
    near = sorted(held, key=order_key)[:STATE_WINDOW]
    shown = {row.memory.memory_id for row in window}
    back = _fact_links(window, near) | _state_links(window, near, vectors_of, reference, query)
    if not back:
        return ranked
    returned = [row for row in near if row.memory.memory_id in back - shown]
    return sorted([*ranked, *returned], key=order_key)


def _fact_links(window: list[Row], near: list[Row]) -> set[str]:
    """The held facts that supersede a fact of the window or that one supersedes."""
    linked: set[str] = set()
    for row in window:
        memory = row.memory
        if isinstance(memory, SemanticMemory):
            linked.update(memory.supersedes)
            if memory.superseded_by:
                linked.add(memory.superseded_by)
    for row in near:
        memory = row.memory
        if isinstance(memory, SemanticMemory):
            shown = {r.memory.memory_id for r in window}
            if memory.superseded_by in shown or shown.intersection(memory.supersedes):
                linked.add(memory.memory_id)
    return {row.memory.memory_id for row in near} & linked


def _state_links(
    window: list[Row],
    near: list[Row],
    vectors_of: Callable[[list[str]], dict[str, StoredVector]],
    reference: datetime,
    query: str,
) -> set[str]:
    """The held statements that are an earlier or a later state of one in the window."""
    memories = [row.memory for row in [*window, *near]]
    short = [m.memory_id for m in memories if len(m.content) <= MAX_STATEMENT_CHARS]
    held = {row.memory.memory_id for row in near}
    if len(short) < 2 or not held.intersection(short):
        return set()
    states = order_states(memories, vectors_of(short), reference, False, query)
    linked: set[str] = set()
    for older, newer in states.updated_by.items():
        if (older in held) != (newer in held):  # one shown, one held: keep them together
            linked.update({older, newer} & held)
    return linked
