"""What the elements of a conversation file mean: turns, conversations, ChatGPT exports.

Each element (a JSON Lines line, an item of a JSON array, a transcript turn) is one of:

- a turn: ``{"content": ..., "speaker": ..., "occurred_at": ...}`` with the store fields;
  ``text`` may stand for ``content``, ``role`` or ``name`` for ``speaker``, and
  ``timestamp``, ``time``, ``created_at``, ``create_time`` or ``date`` for ``occurred_at``;
- a conversation: an OpenAI-style chat ``{"messages": [{"role", "content"}, ...]}`` or a
  dated session ``{"session_id", "date", "turns": [{"speaker", "text"}, ...]}``;
- a ChatGPT conversation of its ``conversations.json`` export (``mapping`` of message
  nodes; the branch that ends at ``current_node`` is the conversation as last seen).

A conversation is one session: its own id (``session_id``, ``conversation_id`` or ``id``),
else ``--session-id`` when the file holds one conversation, else ``<base>-<n>``. A turn
keeps its own time; a turn without one gets its conversation's date plus one second per
turn before it (the order is kept); a turn with neither is left for the importer to date.
System, developer and tool messages, hidden messages and messages without text are not
conversation turns: they are counted as ignored.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from hindsight.cli.transcript import Document, Element, Unreadable
from hindsight.core.models import utc

Format = Literal["auto", "json", "jsonl", "text", "openai", "sessions", "chatgpt"]
FORMATS: tuple[str, ...] = ("auto", "json", "jsonl", "text", "openai", "sessions", "chatgpt")
Shape = Literal["turn", "conversation", "chatgpt"]

FORMAT_HELP = (
    "expected one of: jsonl (one turn or conversation per line), json (an array of turns), "
    'openai (an OpenAI-style chat {"messages": [...]} or a list of them), chatgpt '
    "(ChatGPT's conversations.json export), sessions (a list of dated sessions "
    '[{"session_id": ..., "date": ..., "turns": [...]}]) or text (\'Speaker: text\' lines); '
    "choose one with --format"
)
TURN_STEP = timedelta(seconds=1)
NOT_TURNS = frozenset({"system", "developer", "tool", "function"})
TURN_TIME_KEYS = ("occurred_at", "timestamp", "time", "created_at", "create_time", "date")
CONVERSATION_TIME_KEYS = (
    "date",
    "date_time",
    "session_date",
    "started_at",
    "start_time",
    "created_at",
    "create_time",
    "timestamp",
    "time",
    "occurred_at",
)
ID_KEYS = ("session_id", "conversation_id", "id")
# store fields a conversation turn may carry besides its text, speaker and time
PASSED_FIELDS = (
    "scope",
    "category",
    "emotion",
    "participants",
    "agent_action",
    "outcome",
    "expires_at",
    "ttl_seconds",
    "metadata",
)
_EXPECTED: dict[str, Shape] = {"openai": "conversation", "sessions": "conversation"}
_EXPECTED["chatgpt"] = "chatgpt"
_NOT_ID = re.compile(r"[^A-Za-z0-9_.:@\-]+")
_LOCOMO_TIME = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


@dataclass(frozen=True)
class SourceTurn:
    """One turn of the file: store fields, or why it is refused, or why it is no turn."""

    where: str
    session_id: str | None
    fields: dict[str, Any] | None = None
    length: int | None = None  # the full content length when the reader kept only part
    error: str | None = None
    ignored: str | None = None


@dataclass(frozen=True)
class SessionNaming:
    """How a conversation without an id of its own is named."""

    default: str | None  # --session-id
    base: str  # --session-id, else the file name
    single: bool = False  # the file holds one conversation

    def name(self, meta: dict[str, Any], ordinal: int) -> str:
        for key in ID_KEYS:
            own = identifier(meta.get(key))
            if own:
                return own
        if self.single and self.default:
            return self.default
        return f"{self.base}-{ordinal}"


def identifier(value: Any) -> str | None:
    """A value as a session id (letters, digits and _ . : @ -), or None if nothing is left."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = _NOT_ID.sub("-", str(value)).lstrip("_.:@-")[:128].rstrip("-")
    return text or None


def parse_time(value: Any, name: str) -> datetime:
    """ISO 8601, epoch seconds (or milliseconds), or LoCoMo's "1:56 pm on 8 May, 2023"."""
    problem = (
        f"{name} {value!r} is not a time: use ISO 8601 (2023-05-08T13:56:00Z) or epoch seconds"
    )
    if isinstance(value, datetime):
        return utc(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 100_000_000_000 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise ValueError(problem) from exc
    if isinstance(value, str):
        text = value.strip()
        for parse in (datetime.fromisoformat, _locomo_time):
            try:
                return utc(parse(text))
            except ValueError:
                continue
    raise ValueError(problem)


def _locomo_time(text: str) -> datetime:
    return datetime.strptime(text, _LOCOMO_TIME)


def _time_of(meta: dict[str, Any], keys: Iterable[str]) -> datetime | None:
    """The first of these keys that holds a time (ValueError if it is not one)."""
    for key in keys:
        if meta.get(key) is not None:
            return parse_time(meta[key], key)
    return None


def shape_of(value: Any) -> Shape | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("mapping"), dict):
        return "chatgpt"
    if isinstance(value.get("messages"), list) or isinstance(value.get("turns"), list):
        return "conversation"
    if "content" in value or "text" in value:
        return "turn"
    return None


def _text(value: Any) -> Any:
    """Message content as text: a string, or the text parts of a list joined by newlines."""
    if not isinstance(value, list):
        return value
    parts = []
    for part in value:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "\n".join(parts)


@dataclass
class ShapeReader:
    """Turn the file's elements into SourceTurns, in order, counting what it saw."""

    fmt: Format
    naming: SessionNaming
    conversations: int = 0
    recognised: int = 0  # elements that are a turn, a conversation or a ChatGPT conversation
    first_problem: str | None = None
    labels: set[str] = field(default_factory=set)  # "turns", "openai", "sessions", "chatgpt"

    def turns(
        self,
        elements: Iterable[Element],
        document: Document,
        fields: dict[str, Any] | None = None,
    ) -> Iterator[SourceTurn]:
        """Every turn in file order.

        ``document`` is filled by the reader of ``elements`` as it goes; ``fields`` are a
        top-level object's other keys if already known (from a first full read: they may
        stand after the list), else those read so far.
        """
        iterator = iter(elements)
        first = next(iterator, None)  # the layout is known once the first item is read
        meta = document.fields if fields is None else fields
        if document.kind == "object" and document.list_key in ("messages", "turns"):
            stream = itertools.chain([] if first is None else [first], iterator)
            yield from self._one_streamed_conversation(stream, document.list_key, meta)
            return
        if first is not None:
            yield from self._element(first)
        for element in iterator:
            yield from self._element(element)
        if document.kind == "object" and document.list_key is None and meta:
            yield from self._element(Element("the document", meta))

    def _one_streamed_conversation(
        self, elements: Iterable[Element], list_key: str, meta: dict[str, Any]
    ) -> Iterator[SourceTurn]:
        if _EXPECTED.get(self.fmt, "conversation") != "conversation":
            reason = self._unexpected(meta)
            for element in elements:
                self._problem(element.where, reason)
                yield SourceTurn(element.where, None, error=reason)
            return
        self.recognised += 1
        self.conversations += 1
        self.labels.add("openai" if list_key == "messages" else "sessions")
        pairs = ((element.where, element.value) for element in elements)
        yield from self._conversation(meta, pairs, "", 1)

    def _element(self, element: Element) -> Iterator[SourceTurn]:
        value = element.value
        if isinstance(value, Unreadable):
            self._problem(element.where, value.reason)
            yield SourceTurn(element.where, self.naming.default, error=value.reason)
            return
        shape = shape_of(value)
        expected = _EXPECTED.get(self.fmt)
        if shape is None or (expected is not None and shape != expected):
            reason = self._unexpected(value)
            self._problem(element.where, reason)
            yield SourceTurn(element.where, self.naming.default, error=reason)
            return
        self.recognised += 1
        if shape == "turn":
            self.labels.add("turns")
            yield self._flat_turn(element)
            return
        self.conversations += 1
        if shape == "chatgpt":
            self.labels.add("chatgpt")
            yield from self._chatgpt(value, element.where, self.conversations)
            return
        key = "messages" if isinstance(value.get("messages"), list) else "turns"
        self.labels.add("openai" if key == "messages" else "sessions")
        label = key.removesuffix("s")
        pairs = ((f"{label} {n}", turn) for n, turn in enumerate(value[key], start=1))
        yield from self._conversation(value, pairs, element.where, self.conversations)

    def _problem(self, where: str, reason: str) -> None:
        if self.first_problem is None:
            self.first_problem = f"{where}: {reason}"

    def _unexpected(self, value: Any) -> str:
        expected = _EXPECTED.get(self.fmt)
        if expected == "conversation":
            return f'expected a conversation with "messages" or "turns" (--format {self.fmt})'
        if expected == "chatgpt":
            return 'expected a ChatGPT conversation with "mapping" (--format chatgpt)'
        kind = type(value).__name__ if not isinstance(value, dict) else "an object of other keys"
        return (
            f'expected a turn {{"content": ...}}, a conversation {{"messages": [...]}} or '
            f'{{"turns": [...]}}, or a ChatGPT conversation {{"mapping": ...}}; got {kind}'
        )

    # --- a turn on its own ----------------------------------------------------------------
    def _flat_turn(self, element: Element) -> SourceTurn:
        fields = dict(element.value)
        if "content" not in fields and "text" in fields:
            fields["content"] = fields.pop("text")
        role, name = fields.pop("role", None), fields.pop("name", None)
        if isinstance(role, str) and role.lower() in NOT_TURNS:
            return SourceTurn(element.where, None, ignored=f"{role.lower()} message")
        if fields.get("content") is None and role is not None:
            return SourceTurn(element.where, None, ignored="no text")
        fields["content"] = _text(fields.get("content"))
        speaker = name if isinstance(name, str) and name.strip() else role
        if "speaker" not in fields and isinstance(speaker, str):
            fields["speaker"] = speaker
        if self.naming.default is not None:
            fields.setdefault("session_id", self.naming.default)
        session = fields.get("session_id")
        session_id = session if isinstance(session, str) else None
        try:
            self._flat_time(fields)
        except ValueError as exc:
            return SourceTurn(element.where, session_id, error=str(exc))
        return SourceTurn(element.where, session_id, fields, length=element.length)

    @staticmethod
    def _flat_time(fields: dict[str, Any]) -> None:
        """Take the first time key as ``occurred_at`` (a second one is left, and refused)."""
        for key in TURN_TIME_KEYS:
            if fields.get(key) is not None:
                fields["occurred_at"] = parse_time(fields.pop(key), key)
                return

    # --- a conversation: OpenAI-style messages or a dated session -------------------------
    def _conversation(
        self, meta: dict[str, Any], turns: Iterable[tuple[str, Any]], prefix: str, ordinal: int
    ) -> Iterator[SourceTurn]:
        session = self.naming.name(meta, ordinal)
        try:
            start, problem = _time_of(meta, CONVERSATION_TIME_KEYS), None
        except ValueError as exc:
            start, problem = None, str(exc)
        for position, (where, turn) in enumerate(turns):
            here = f"{prefix}, {where}" if prefix else where
            if problem is not None:
                yield SourceTurn(here, session, error=problem)
                continue
            default_time = start + position * TURN_STEP if start is not None else None
            yield _conversation_turn(turn, here, session, default_time)

    # --- a ChatGPT conversations.json conversation ----------------------------------------
    def _chatgpt(self, value: dict[str, Any], where: str, ordinal: int) -> Iterator[SourceTurn]:
        session = self.naming.name(value, ordinal)
        try:
            start, problem = _time_of(value, ("create_time",)), None
        except ValueError as exc:
            start, problem = None, str(exc)
        thread = chatgpt_thread(value["mapping"], value.get("current_node"))
        for position, message in enumerate(thread):
            here = f"{where}, message {position + 1}"
            if problem is not None:
                yield SourceTurn(here, session, error=problem)
                continue
            default_time = start + position * TURN_STEP if start is not None else None
            yield _chatgpt_turn(message, here, session, default_time)


def _conversation_turn(
    turn: Any, where: str, session: str, default_time: datetime | None
) -> SourceTurn:
    if not isinstance(turn, dict):
        return SourceTurn(
            where, session, error=f"expected a turn object, got {type(turn).__name__}"
        )
    role = turn.get("role")
    if isinstance(role, str) and role.lower() in NOT_TURNS:
        return SourceTurn(where, session, ignored=f"{role.lower()} message")
    content = _text(turn.get("content", turn.get("text")))
    if content is None or (isinstance(content, str) and not content.strip()):
        return SourceTurn(where, session, ignored="no text")
    fields = {key: turn[key] for key in PASSED_FIELDS if key in turn}
    fields.update(content=content, session_id=session)
    speaker = next(
        (v for v in (turn.get("speaker"), turn.get("name"), role) if isinstance(v, str) and v),
        None,
    )
    if speaker is not None:
        fields["speaker"] = speaker
    try:
        occurred_at = _time_of(turn, TURN_TIME_KEYS) or default_time
    except ValueError as exc:
        return SourceTurn(where, session, error=str(exc))
    if occurred_at is not None:
        fields["occurred_at"] = occurred_at
    return SourceTurn(where, session, fields)


def chatgpt_thread(mapping: dict[str, Any], current_node: Any) -> list[dict[str, Any]]:
    """The messages on the branch that ends at ``current_node`` (else the newest leaf)."""
    node_id = current_node if current_node in mapping else _newest_leaf(mapping)
    messages: list[dict[str, Any]] = []
    seen: set[str] = set()
    while (
        isinstance(node_id, str) and node_id not in seen and isinstance(mapping.get(node_id), dict)
    ):
        seen.add(node_id)
        node = mapping[node_id]
        if isinstance(node.get("message"), dict):
            messages.append(node["message"])
        node_id = node.get("parent")
    messages.reverse()
    return messages


def _newest_leaf(mapping: dict[str, Any]) -> str | None:
    """From the root, follow the last child (the newest branch) down to a leaf."""
    roots = [
        key for key, node in mapping.items() if isinstance(node, dict) and not node.get("parent")
    ]
    node_id = roots[0] if roots else None
    seen: set[str] = set()
    while (
        isinstance(node_id, str) and node_id not in seen and isinstance(mapping.get(node_id), dict)
    ):
        seen.add(node_id)
        children = mapping[node_id].get("children") or []
        if not children:
            break
        node_id = children[-1]
    return node_id


def _chatgpt_skip(message: dict[str, Any]) -> str | None:
    """Why a ChatGPT message is no conversation turn, or None if it is one."""
    role = (message.get("author") or {}).get("role")
    if isinstance(role, str) and role.lower() in NOT_TURNS:
        return f"{role.lower()} message"
    if (message.get("metadata") or {}).get("is_visually_hidden_from_conversation"):
        return "hidden message"
    if message.get("recipient", "all") != "all":
        return "message to a tool"
    content_type = (message.get("content") or {}).get("content_type")
    if content_type not in ("text", "multimodal_text"):
        return f"{content_type} content"
    return None


def _chatgpt_turn(
    message: dict[str, Any], where: str, session: str, default_time: datetime | None
) -> SourceTurn:
    skip = _chatgpt_skip(message)
    if skip is not None:
        return SourceTurn(where, session, ignored=skip)
    parts = (message.get("content") or {}).get("parts") or []
    content = "\n".join(part for part in parts if isinstance(part, str)).strip()
    if not content:
        return SourceTurn(where, session, ignored="no text")
    author = message.get("author") or {}
    speaker = author.get("name") or author.get("role")
    fields: dict[str, Any] = {"content": content, "session_id": session}
    if isinstance(speaker, str) and speaker:
        fields["speaker"] = speaker
    try:
        occurred_at = _time_of(message, ("create_time",)) or default_time
    except ValueError as exc:
        return SourceTurn(where, session, error=str(exc))
    if occurred_at is not None:
        fields["occurred_at"] = occurred_at
    return SourceTurn(where, session, fields)
