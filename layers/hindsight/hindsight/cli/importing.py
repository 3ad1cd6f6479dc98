"""Import a conversation file: check and count it, then store its turns in batches, once.

**Two reads, bounded memory.** The first read stores nothing: it refuses a file that
cannot be read in its format before anything is written, counts the turns (the progress
bar's total) and the conversations, and finds a JSON document's top-level keys wherever
they stand. The second read stores. Both stream (see ``transcript``); at most one batch of
turns (``batch_size`` turns, ``BATCH_CHARS`` characters) is held at a time.

**Resumable.** Turn times are stable across runs: a turn's own time, its conversation's
date plus one second per turn before it, or, for a turn with neither, counted back one
second apart from the file's modification time (or ``--occurred-at``), never from the
run's clock. Before a batch is embedded, the turns already stored at exactly their time
are found and skipped, and so are those the store's dedup window makes duplicates (see
``import_writer``). So re-running an interrupted import stores nothing twice and embeds
only what is missing; what was stored is told by the store itself, so no checkpoint file
can go stale or be lost. The store's dedup marker alone would not do: it remembers only
the newest memory of a content, so a re-run would store an early "ok" again once the same
"ok" was stored weeks later; and with a dedup window of 0 it skips nothing.

**Long turns.** A turn up to the content limit is stored whole; a longer one is refused
with the limit and its setting, and the import goes on.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hindsight.cli.chat_exports import (
    FORMAT_HELP,
    TURN_STEP,
    Format,
    SessionNaming,
    ShapeReader,
    SourceTurn,
    identifier,
)
from hindsight.cli.import_writer import (
    ImportStoppedError,
    PreparedTurn,
    Status,
    TurnWriter,
)
from hindsight.cli.output import validation_messages
from hindsight.cli.transcript import (
    Container,
    Document,
    TranscriptFormatError,
    container_of,
    read_elements,
)
from hindsight.core.commands import MAX_BATCH_ITEMS, BatchItem

BATCH_CHARS = 1_000_000  # content characters per store call, so long turns batch smaller
MAX_REPORTED = 1_000  # refused turns listed one by one; all are counted
LIMIT_SETTING = "HINDSIGHT_MAX_CONTENT_CHARS"
_CONTAINERS: dict[str, Container] = {"json": "json", "jsonl": "jsonl", "text": "text"}


@dataclass(frozen=True)
class ImportOptions:
    user_id: str
    session_id: str | None
    fmt: Format
    content_limit: int
    dedup_window_seconds: float
    base_time: datetime  # the time of the last turn that carries no time of its own
    batch_size: int = MAX_BATCH_ITEMS
    batch_chars: int = BATCH_CHARS


@dataclass(frozen=True)
class ImportPlan:
    """What the first read found."""

    container: Container
    label: str  # the format as reported: json, jsonl, text, openai, sessions or chatgpt
    fields: dict[str, Any]  # a JSON document's top-level keys besides its list
    turns: int
    untimed: int
    conversations: int
    session_base: str


@dataclass
class Tally:
    stored: int = 0
    skipped: int = 0
    refused: int = 0
    ignored: int = 0

    def add(self, status: Status) -> None:
        setattr(self, status, getattr(self, status) + 1)


@dataclass(frozen=True)
class Refusal:
    where: str
    session_id: str | None
    reason: str


@dataclass
class ImportSummary:
    """What an import did, by session; filled as it goes, so an interrupted one has it too."""

    format: str
    turns: int
    totals: Tally = field(default_factory=Tally)
    sessions: dict[str | None, Tally] = field(default_factory=lambda: defaultdict(Tally))
    refusals: list[Refusal] = field(default_factory=list)
    ignored_reasons: Counter[str] = field(default_factory=Counter)
    stopped: str | None = None

    def count(
        self, status: Status, where: str, session_id: str | None, reason: str | None = None
    ) -> None:
        self.totals.add(status)
        self.sessions[session_id].add(status)
        if status == "refused" and len(self.refusals) < MAX_REPORTED:
            self.refusals.append(Refusal(where, session_id, reason or "refused"))
        if status == "ignored":
            self.ignored_reasons[reason or "not a turn"] += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "status": "stopped" if self.stopped else "success",
            "format": self.format,
            "turns": self.turns,
            "stored": self.totals.stored,
            "skipped": self.totals.skipped,
            "refused": self.totals.refused,
            "ignored": self.totals.ignored,
            "sessions": [
                {"session_id": session_id, **vars(tally)}
                for session_id, tally in self.sessions.items()
            ],
            "refused_items": [vars(refusal) for refusal in self.refusals],
            "ignored_reasons": dict(self.ignored_reasons),
            **({"stopped": self.stopped} if self.stopped else {}),
        }


def over_limit_reason(length: int, limit: int) -> str:
    return (
        f"content is {length:,} characters; the limit is {limit:,} ({LIMIT_SETTING}): "
        "split the turn into several, or raise the limit"
    )


# --- the first read: check and count -------------------------------------------------------
def plan_import(path: Path, name: str, options: ImportOptions) -> ImportPlan:
    """Read the whole file once without storing; TranscriptFormatError if it is unusable."""
    container = _CONTAINERS.get(options.fmt) or container_of(path, Path(name).suffix)
    document = Document(container)
    base = _session_base(options.session_id, name)
    reader = ShapeReader(options.fmt, SessionNaming(options.session_id, base))
    turns = untimed = 0
    for turn in reader.turns(read_elements(path, document, options.content_limit), document):
        turns += 1
        untimed += turn.fields is not None and turn.fields.get("occurred_at") is None
    if turns and not reader.recognised:
        raise TranscriptFormatError(
            f"{reader.first_problem}; nothing in the file is a conversation turn: {FORMAT_HELP}"
        )
    label: str = container
    if container != "text" and len(reader.labels) == 1 and reader.labels != {"turns"}:
        label = next(iter(reader.labels))
    return ImportPlan(container, label, document.fields, turns, untimed, reader.conversations, base)


def _session_base(session_id: str | None, name: str) -> str:
    """What conversations without an id are named after: --session-id, else the file name."""
    stem = Path(name).stem if name != "stdin" else "import"
    return (identifier(session_id) or identifier(re.sub(r"\s+", "-", stem)) or "import")[:100]


# --- the second read: store ----------------------------------------------------------------
class _Dating:
    """Times for turns that carry none: counted back from the base, one second apart."""

    def __init__(self, base: datetime, count: int) -> None:
        self.base = base
        self.count = count
        self.index = 0

    def next(self) -> datetime:
        moment = self.base - (self.count - 1 - self.index) * TURN_STEP
        self.index += 1
        return moment


def prepare(turn: SourceTurn, options: ImportOptions, dating: _Dating) -> PreparedTurn:
    """Date, check and validate one turn (the limit first: a long turn is refused whole)."""
    if turn.ignored is not None:
        return PreparedTurn(turn.where, turn.session_id, ignored=turn.ignored)
    if turn.fields is None:
        return PreparedTurn(turn.where, turn.session_id, error=turn.error or "not a turn")
    fields = dict(turn.fields)
    if fields.get("occurred_at") is None:
        fields["occurred_at"] = dating.next()
    content = fields.get("content")
    length = turn.length or (len(content) if isinstance(content, str) else 0)
    if length > options.content_limit:
        reason = over_limit_reason(length, options.content_limit)
        return PreparedTurn(turn.where, turn.session_id, error=reason)
    owner = fields.get("user_id")
    if owner is not None and owner != options.user_id:
        reason = f"user_id {owner!r} differs from --user-id {options.user_id!r}"
        return PreparedTurn(turn.where, turn.session_id, error=reason)
    try:
        item = BatchItem.model_validate(fields)
    except ValidationError as exc:
        reason = "; ".join(validation_messages(exc))
        return PreparedTurn(turn.where, turn.session_id, error=reason)
    return PreparedTurn(turn.where, item.session_id, item=item)


def run_import(
    path: Path,
    plan: ImportPlan,
    options: ImportOptions,
    writer: TurnWriter,
    summary: ImportSummary,
    advance: Callable[[int], None] = lambda _: None,
) -> None:
    """Store every turn of the file in batches, counting each into ``summary``.

    ImportStoppedError if the store fails for a reason that is not the turn's; what was
    counted so far stays in ``summary``.
    """
    for batch in _batches(path, plan, options, summary, advance):
        for turn, (status, reason) in zip(batch, writer.write(batch), strict=True):
            summary.count(status, turn.where, turn.session_id, reason)
        advance(len(batch))


def _batches(
    path: Path,
    plan: ImportPlan,
    options: ImportOptions,
    summary: ImportSummary,
    advance: Callable[[int], None],
) -> Iterator[list[PreparedTurn]]:
    """Batches of valid turns; refused and ignored ones are counted on the way."""
    naming = SessionNaming(options.session_id, plan.session_base, single=plan.conversations == 1)
    reader = ShapeReader(options.fmt, naming)
    document = Document(plan.container)
    elements = read_elements(path, document, options.content_limit)
    dating = _Dating(options.base_time, plan.untimed)
    batch: list[PreparedTurn] = []
    chars = 0
    try:
        for source in reader.turns(elements, document, plan.fields):
            turn = prepare(source, options, dating)
            if turn.item is None:
                status: Status = "ignored" if turn.ignored else "refused"
                summary.count(status, turn.where, turn.session_id, turn.ignored or turn.error)
                advance(1)
                continue
            if batch and chars + len(turn.item.content) > options.batch_chars:
                yield batch
                batch, chars = [], 0
            batch.append(turn)
            chars += len(turn.item.content)
            if len(batch) >= options.batch_size:
                yield batch
                batch, chars = [], 0
    except TranscriptFormatError as exc:  # the file changed since it was checked
        raise ImportStoppedError(path.name, str(exc)) from exc
    if batch:
        yield batch


def default_base_time(modified_at: datetime | None, now: datetime) -> datetime:
    """The file's modification time (stable across re-runs), never later than now."""
    if modified_at is None:
        return now
    return min(modified_at.astimezone(UTC), now)
