"""Store an import's batches once: what is already stored is skipped before it is embedded.

A turn is already stored when an episode of the same user and scope has the same content
(``content_hash``, the dedup key) at exactly its time; turn times are stable across
re-runs (see ``importing``), so this is what makes a re-run store nothing twice. Finding
them costs one list call per batch and cluster of nearby times (a batch that spans two
sessions weeks apart lists two short spans, not the weeks between).

The store's dedup window is mirrored too: a turn whose content this import met less than
the window before or after its time (stored, or found stored) is a duplicate, as the
store would have called it the first time. The store's own marker cannot be relied on
for that on a re-run: it remembers only the newest memory of a content, so an "ok" that
was skipped in May (an "ok" an hour before) would be stored once the "ok" of June was.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from hindsight.core.commands import (
    MAX_LIST_ITEMS,
    BatchItem,
    ListMemoriesCommand,
    StoreBatchCommand,
)
from hindsight.core.errors import (
    ConflictError,
    ForbiddenError,
    HindsightError,
    InvalidRequestError,
    MalformedRequestError,
    PayloadTooLargeError,
)
from hindsight.core.models import MemoryKind, Principal
from hindsight.core.text import content_hash
from hindsight.server.served import MemoryApi

Status = Literal["stored", "skipped", "refused", "ignored"]
Outcome = tuple[Status, str | None]
CLUSTER_GAP = timedelta(hours=1)  # times further apart than this are listed separately
RECENT_CONTENTS = 20_000  # contents remembered for the dedup window (bounded memory)
_ONE_MICROSECOND = timedelta(microseconds=1)
# errors that are the turn's fault: it is refused and the import goes on; any other error
# (store or index unavailable, misconfiguration) stops the import, to be resumed later
_TURN_ERRORS = (
    InvalidRequestError,
    MalformedRequestError,
    PayloadTooLargeError,
    ForbiddenError,
    ConflictError,
)


class ImportStoppedError(Exception):
    """The import could not go on (nothing wrong with the turn); a re-run resumes it."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


@dataclass(frozen=True)
class PreparedTurn:
    """A turn ready to store (``item``), or refused (``error``), or no turn (``ignored``)."""

    where: str
    session_id: str | None
    item: BatchItem | None = None
    error: str | None = None
    ignored: str | None = None

    @property
    def ready(self) -> BatchItem:
        """The item of a turn ready to store (the importer has dated it)."""
        assert self.item is not None and self.item.occurred_at is not None
        return self.item

    @property
    def occurred_at(self) -> datetime:
        assert self.item is not None and self.item.occurred_at is not None
        return self.item.occurred_at


class _RecentContents:
    """Content hashes this import met, with their times; the oldest met are forgotten first."""

    def __init__(self, window: timedelta, capacity: int = RECENT_CONTENTS) -> None:
        self.window = window
        self.capacity = capacity
        self.times: OrderedDict[tuple[str, str], list[datetime]] = OrderedDict()

    def near(self, key: tuple[str, str], moment: datetime) -> bool:
        return any(abs(moment - met) < self.window for met in self.times.get(key, ()))

    def add(self, key: tuple[str, str], moment: datetime) -> None:
        if self.window <= timedelta(0):
            return
        self.times.setdefault(key, []).append(moment)
        self.times.move_to_end(key)
        while len(self.times) > self.capacity:
            self.times.popitem(last=False)


class TurnWriter:
    """Store batches of turns for one user, skipping what is already stored."""

    def __init__(
        self,
        service: MemoryApi,
        principal: Principal,
        user_id: str,
        dedup_window_seconds: float,
    ) -> None:
        self.service = service
        self.principal = principal
        self.user_id = user_id
        self.recent = _RecentContents(timedelta(seconds=dedup_window_seconds))

    def write(self, batch: list[PreparedTurn]) -> list[Outcome]:
        """One (status, reason) per turn, in order."""
        keys = [self._key(turn) for turn in batch]
        duplicates = self.already_stored(batch)
        for position in duplicates:  # stored: in the window of what follows, in any batch
            self.recent.add(keys[position], batch[position].occurred_at)
        duplicates.update(
            position
            for position, turn in enumerate(batch)
            if self.recent.near(keys[position], turn.occurred_at)
        )
        fresh = [turn for position, turn in enumerate(batch) if position not in duplicates]
        results = iter(self._store(fresh) if fresh else [])
        outcomes: list[Outcome] = []
        for position, turn in enumerate(batch):
            if position in duplicates:
                outcomes.append(("skipped", "duplicate"))
                continue
            outcome = next(results)
            if outcome[0] != "refused":
                self.recent.add(keys[position], turn.occurred_at)
            outcomes.append(outcome)
        return outcomes

    def _key(self, turn: PreparedTurn) -> tuple[str, str]:
        return (turn.ready.scope or self.principal.default_scope, content_hash(turn.ready.content))

    # --- what is stored already --------------------------------------------------------
    def already_stored(self, batch: list[PreparedTurn]) -> set[int]:
        """Positions of the turns whose content is stored at exactly their time."""
        wanted: dict[tuple[str, str, datetime], list[int]] = defaultdict(list)
        for position, turn in enumerate(batch):
            scope, digest = self._key(turn)
            wanted[(scope, digest, turn.occurred_at)].append(position)
        found: set[int] = set()
        for scope, since, until in _spans(wanted):
            for digest, occurred_at in self._stored_between(scope, since, until):
                found.update(wanted.get((scope, digest, occurred_at), ()))
        return found

    def _stored_between(
        self, scope: str, since: datetime, until: datetime
    ) -> list[tuple[str, datetime]]:
        """(content hash, occurred_at) of the scope's episodes that occurred in [since, until]."""
        stored: list[tuple[str, datetime]] = []
        cursor: str | None = None
        while True:
            page = self.service.list_memories(
                self.principal,
                ListMemoriesCommand(
                    user_id=self.user_id,
                    kind=MemoryKind.EPISODIC,
                    scope=scope,
                    since=since,
                    until=until + _ONE_MICROSECOND,
                    limit=MAX_LIST_ITEMS,
                    cursor=cursor,
                ),
            )
            stored.extend(
                (content_hash(memory["content"]), datetime.fromisoformat(memory["occurred_at"]))
                for memory in page.results
            )
            if not page.has_more or not page.next_cursor:
                return stored
            cursor = page.next_cursor

    # --- storing -----------------------------------------------------------------------
    def _store(self, turns: list[PreparedTurn]) -> list[Outcome]:
        """Store the batch; if it fails as a whole, store its turns one by one."""
        items = [turn.ready for turn in turns]
        try:
            outcomes = self.service.store_batch(
                self.principal, StoreBatchCommand(user_id=self.user_id, items=items)
            )
        except HindsightError as exc:
            if not isinstance(exc, _TURN_ERRORS):
                raise ImportStoppedError(turns[0].where, exc.message) from exc
            if len(turns) == 1:
                return [("refused", exc.message)]
            return [result for turn in turns for result in self._store([turn])]
        return [
            ("stored", None) if outcome.status == "success" else ("skipped", outcome.reason)
            for outcome in outcomes
        ]


def _spans(
    wanted: dict[tuple[str, str, datetime], list[int]],
) -> list[tuple[str, datetime, datetime]]:
    """(scope, first, last) of each cluster of times no more than CLUSTER_GAP apart."""
    times: dict[str, set[datetime]] = defaultdict(set)
    for scope, _, occurred_at in wanted:
        times[scope].add(occurred_at.astimezone(UTC))
    spans: list[tuple[str, datetime, datetime]] = []
    for scope, moments in times.items():
        ordered = sorted(moments)
        first = previous = ordered[0]
        for moment in ordered[1:]:
            if moment - previous > CLUSTER_GAP:
                spans.append((scope, first, previous))
                first = moment
            previous = moment
        spans.append((scope, first, previous))
    return spans
