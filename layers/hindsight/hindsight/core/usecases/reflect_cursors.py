"""How far a user's episodes have been reflected on, per scope.

The user's reflection cursor is a low-water mark: every episode created at or before it
has been reflected on. A key that reads only some scopes (a calendar agent's) reflects
only the new episodes it may read; moving the user's cursor past the others would hide
them from every later reflection (an admin's included). So such a run moves the cursor
only up to the first episode it could not read, and records how far it went in each scope
it did read (``reflection@<scope>``); later runs skip what those scope cursors cover.
A key that reads every scope moves the cursor over everything, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from hindsight.core.models import EpisodicMemory, Principal
from hindsight.core.ports import RecordStore

REFLECTION_CURSOR = "reflection"
SCOPE_CURSOR_PREFIX = "reflection@"


def scope_cursor_name(scope: str) -> str:
    return f"{SCOPE_CURSOR_PREFIX}{scope}"


@dataclass
class Progress:
    """The new episodes after the user's cursor and what the scope cursors say of them."""

    low: datetime | None
    episodes: Sequence[EpisodicMemory]  # oldest first
    scoped: dict[str, datetime] = field(default_factory=dict)

    def done(self, episode: EpisodicMemory) -> bool:
        """Reflected on already by a run that read this episode's scope only."""
        mark = self.scoped.get(episode.scope)
        return mark is not None and episode.created_at <= mark

    def to_reflect(self, principal: Principal) -> tuple[list[EpisodicMemory], bool]:
        """(the episodes this key reflects on now, whether any not done is unreadable)."""
        open_ = [e for e in self.episodes if not self.done(e)]
        readable = [e for e in open_ if principal.can_read(e.scope)]
        return readable, len(readable) < len(open_)

    def new_low(self, reflected: Sequence[EpisodicMemory]) -> datetime | None:
        """The user's cursor after ``reflected``: past every episode up to the first that
        is neither done nor reflected now (an episode created at the same moment as that
        one stays after the cursor: its scope cursor keeps it from being reflected twice)."""
        now = {e.memory_id for e in reflected}
        covered = [e.memory_id in now or self.done(e) for e in self.episodes]
        if all(covered):
            return max((e.created_at for e in self.episodes), default=self.low)
        stop = self.episodes[covered.index(False)].created_at
        before = [e.created_at for e in self.episodes if e.created_at < stop]
        return max(before, default=self.low)


def read_progress(
    records: RecordStore,
    tenant_id: str,
    user_id: str,
    low: datetime | None,
    episodes: Sequence[EpisodicMemory],
    *,
    use_scope_cursors: bool = True,
) -> Progress:
    """The scope cursors that matter for ``episodes`` (none when ``since`` overrides)."""
    progress = Progress(low=low, episodes=episodes)
    if use_scope_cursors:
        for scope in sorted({e.scope for e in episodes}):
            mark = records.get_cursor(tenant_id, user_id, scope_cursor_name(scope))
            if mark is not None:
                progress.scoped[scope] = mark
    return progress


def write_progress(
    records: RecordStore,
    tenant_id: str,
    user_id: str,
    progress: Progress,
    reflected: Sequence[EpisodicMemory],
    *,
    partial: bool,
) -> None:
    """Move the user's cursor (never backwards) and, after a run that could not read
    every scope, the cursors of the scopes it reflected on."""
    if partial:
        newest: dict[str, datetime] = {}
        for episode in reflected:
            mark = newest.get(episode.scope)
            if mark is None or episode.created_at > mark:
                newest[episode.scope] = episode.created_at
        for scope, mark in newest.items():
            records.set_cursor(tenant_id, user_id, scope_cursor_name(scope), mark)
    low = progress.new_low(reflected)
    stored = records.get_cursor(tenant_id, user_id, REFLECTION_CURSOR)
    if low is not None and (stored is None or low > stored):
        records.set_cursor(tenant_id, user_id, REFLECTION_CURSOR, low)
