"""Read a conversation file for ``hindsight import`` as a stream of elements, in bounded memory.

Three containers:

- JSON Lines: one JSON value a line, read line by line; a line longer than
  ``MAX_LINE_CHARS`` is refused without being held in memory.
- A JSON document, parsed incrementally with ijson: a top-level array yields its items one
  by one; a top-level object yields the items of its conversation list (``messages``,
  ``turns``, ``sessions`` or ``conversations``) one by one and keeps its other keys as the
  document's ``fields``. Memory is bounded by the largest single item, never the file.
- A transcript of ``Speaker: text`` lines. A line that does not start with a speaker
  (``Name: `` at its very start) continues the turn above, and so does every line of a
  fenced code block: pasted documents, logs and code span many lines. A turn is held only
  up to ``max_chars`` + 1 characters, its full length still counted.

What an element means (a turn, a conversation, a session) is decided in ``chat_exports``.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

import ijson

Container = Literal["json", "jsonl", "text"]

MAX_LINE_CHARS = 64 * 1024 * 1024  # one JSON Lines line (a whole conversation may be one line)
HEAD_BYTES = 64 * 1024  # read to tell the container
LOCATE_MAX_BYTES = 32 * 1024 * 1024  # a broken JSON document up to this size gets a line number
CONVERSATION_LISTS = ("messages", "turns", "sessions", "conversations")

# "Name: text" at the start of a line: a name of up to 32 letters (any language), digits,
# spaces and . ' - starting with a letter, then an ASCII colon and a space (so "12:30",
# "key:value" and "https://" are no speakers) or a full-width colon, then the text
_TURN = re.compile(
    r"^(?P<speaker>[^\W\d_][\w .'\-]{0,31}?)[ \t]*(?::[ \t]+|：[ \t]*)(?P<content>\S.*)$"
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_SUFFIX_CONTAINERS: dict[str, Container] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".txt": "text"}
_BOM = b"\xef\xbb\xbf"


class TranscriptFormatError(ValueError):
    """The file as a whole cannot be read in the chosen format (nothing is imported)."""


@dataclass(frozen=True)
class Unreadable:
    """An element that could not be decoded, and why."""

    reason: str


@dataclass(frozen=True)
class Element:
    """One top-level value of the file, where it is, and (for a cut text turn) its length."""

    where: str
    value: Any
    length: int | None = None  # the full content length when only part of it was kept


@dataclass
class Document:
    """What reading found besides the elements: how the file is laid out."""

    container: Container
    kind: Literal["array", "object", "lines"] = "lines"
    fields: dict[str, Any] = field(default_factory=dict)  # a top-level object's other keys
    list_key: str | None = None  # the top-level object's list whose items are streamed


def detect_container(head: bytes, suffix: str = "", single_line: bool = False) -> Container:
    """The container named by the suffix, else told from the first bytes.

    ``[`` starts a JSON document. ``{`` starts a JSON document when the file is one line
    (a minified document is then streamed, not read as one huge line) or when its first
    line is not a whole JSON value (a pretty-printed document), else JSON Lines. Anything
    else is a transcript.
    """
    by_suffix = _SUFFIX_CONTAINERS.get(suffix.lower())
    if by_suffix is not None:
        return by_suffix
    text = head.removeprefix(_BOM).decode("utf-8", errors="ignore").lstrip()
    if text.startswith("["):
        return "json"
    if not text.startswith("{"):
        return "text"
    first_line, newline, _ = text.partition("\n")
    if single_line or not newline:
        return "json" if single_line else "jsonl"
    try:
        json.loads(first_line)
    except json.JSONDecodeError:
        return "json"
    return "jsonl"


def container_of(path: Path, suffix: str = "") -> Container:
    """The file's container (see detect_container), reading its head and, if need be, on."""
    with path.open("rb") as stream:
        head = stream.read(HEAD_BYTES)
        single_line = False
        if b"\n" not in head.strip():  # one line so far: is there a second one?
            single_line = _rest_is_one_line(stream, broken=b"\n" in head)
    return detect_container(head, suffix, single_line)


def _rest_is_one_line(stream: IO[bytes], broken: bool) -> bool:
    """Whether nothing but white space follows the first line break (``broken``: seen)."""
    while chunk := stream.read(1024 * 1024):
        if broken and chunk.strip():
            return False
        if b"\n" in chunk:
            after = chunk.split(b"\n", 1)[1]
            if after.strip():
                return False
            broken = True
    return True


@dataclass(frozen=True)
class ImportSource:
    """The file to import, readable twice: a path, or standard input spooled to disk."""

    path: Path
    name: str  # as the user named it, for messages
    modified_at: datetime | None  # None for standard input


def unreadable_file(file: Path) -> str | None:
    """Why the named file cannot be imported at all, or None (``-`` is standard input)."""
    if str(file) == "-":
        return None
    if not file.exists():
        return f"{file} does not exist"
    if not file.is_file():
        return f"{file} is not a file"
    return None


@contextmanager
def open_source(file: Path) -> Iterator[ImportSource]:
    """The file as an ImportSource; ``-`` copies standard input to a temporary file."""
    if str(file) == "-":
        with tempfile.TemporaryDirectory(prefix="hindsight-import-") as folder:
            spooled = Path(folder) / "stdin"
            stdin: IO[Any] = getattr(sys.stdin, "buffer", sys.stdin)
            with spooled.open("wb") as out:
                while chunk := stdin.read(1024 * 1024):
                    out.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
            yield ImportSource(spooled, "stdin", None)
        return
    modified = datetime.fromtimestamp(file.stat().st_mtime, UTC)
    yield ImportSource(file, str(file), modified)


def read_elements(path: Path, document: Document, max_chars: int) -> Iterator[Element]:
    """Every element of the file in order; fills ``document`` as it goes."""
    try:
        with path.open("rb") as raw:
            if document.container == "json":
                yield from _JsonDocumentReader(document).read(raw)
                return
            text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline=None)
            if document.container == "jsonl":
                yield from _json_lines(text)
            else:
                yield from _transcript(text, max_chars)
    except UnicodeDecodeError as exc:
        raise TranscriptFormatError(
            f"not UTF-8 text (byte {exc.start} of a read block); save the file as UTF-8"
        ) from exc


# --- JSON Lines ---------------------------------------------------------------------------
def _bounded_lines(text: IO[str]) -> Iterator[tuple[int, str | None]]:
    """(line number, line) pairs; a line over MAX_LINE_CHARS is skipped whole and given as None."""
    number = 0
    while line := text.readline(MAX_LINE_CHARS + 1):
        number += 1
        if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
            while (rest := text.readline(MAX_LINE_CHARS)) and not rest.endswith("\n"):
                pass
            yield number, None
            continue
        yield number, line


def _json_lines(text: IO[str]) -> Iterator[Element]:
    for number, line in _bounded_lines(text):
        where = f"line {number}"
        if line is None:
            reason = f"line longer than {MAX_LINE_CHARS:,} characters; split it"
            yield Element(where, Unreadable(reason))
        elif line.strip():
            try:
                yield Element(where, json.loads(line))
            except json.JSONDecodeError as exc:
                reason = f"not valid JSON: {exc.msg} (column {exc.colno})"
                yield Element(where, Unreadable(reason))


# --- a JSON document ----------------------------------------------------------------------
class _JsonDocumentReader:
    """Stream a JSON document's items with ijson, building one item at a time."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.items_read = 0

    def read(self, raw: IO[bytes]) -> Iterator[Element]:
        if raw.read(len(_BOM)) != _BOM:
            raw.seek(0)
        events = ijson.parse(raw, use_float=True)
        try:
            yield from self._top_level(events)
            for _ in events:  # nothing may follow the document (ijson raises on trailing text)
                pass
        except ijson.JSONError as exc:
            raise TranscriptFormatError(_json_problem(raw, exc, self.items_read)) from exc

    def _top_level(self, events: Iterator[tuple[str, str, Any]]) -> Iterator[Element]:
        first = next(events, None)
        if first is None:
            return
        _, event, _ = first
        if event == "start_array":
            self.document.kind = "array"
            yield from self._items(events, "item")
        elif event == "start_map":
            self.document.kind = "object"
            yield from self._object(events)
        else:
            raise TranscriptFormatError(
                "a JSON conversation must be an array [...] or an object {...}"
            )

    def _object(self, events: Iterator[tuple[str, str, Any]]) -> Iterator[Element]:
        for _, event, key in events:
            if event == "end_map":
                return
            _, event, value = next(events)
            if key in CONVERSATION_LISTS and event == "start_array" and not self.document.list_key:
                self.document.list_key = key
                yield from self._items(events, key.removesuffix("s"))
            else:
                self.document.fields[key] = _build(events, event, value)

    def _items(self, events: Iterator[tuple[str, str, Any]], label: str) -> Iterator[Element]:
        for _, event, value in events:
            if event == "end_array":
                return
            item = _build(events, event, value)
            self.items_read += 1
            yield Element(f"{label} {self.items_read}", item)


def _json_problem(raw: IO[bytes], error: Exception, items_read: int) -> str:
    """Where a JSON document breaks, as a line and column when it can be told cheaply.

    The fast parser (yajl) names no position; the pure-Python one names the character
    offset, so a file of moderate size is parsed again with it to tell the line.
    """
    detail = " ".join(str(error).split())
    place = f" after item {items_read}" if items_read else ""
    raw.seek(0, io.SEEK_END)
    if raw.tell() > LOCATE_MAX_BYTES:
        return f"invalid JSON{place}: {detail}"
    raw.seek(0)
    if raw.read(len(_BOM)) != _BOM:
        raw.seek(0)
    try:
        for _ in ijson.get_backend("python").basic_parse(raw):
            pass
    except ijson.JSONError as exc:
        message = str(exc)
        offset = re.search(r" at (\d+)$", message)
        if offset is None:
            return f"invalid JSON{place}: {message}"
        raw.seek(0)
        before = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace").read(int(offset[1]))
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        return f"invalid JSON at line {line}, column {column}: {message[: offset.start()]}"
    return f"invalid JSON{place}: {detail}"


def _build(events: Iterator[tuple[str, str, Any]], event: str, value: Any) -> Any:
    """The whole value that starts with this event (a scalar, or a map or array built up)."""
    if event not in ("start_map", "start_array"):
        return value
    builder = ijson.ObjectBuilder()
    builder.event(event, value)
    depth = 1
    for _, inner, inner_value in events:
        builder.event(inner, inner_value)
        if inner in ("start_map", "start_array"):
            depth += 1
        elif inner in ("end_map", "end_array"):
            depth -= 1
            if depth == 0:
                break
    return builder.value


# --- a 'Speaker: text' transcript ---------------------------------------------------------
@dataclass
class _OpenTurn:
    """A transcript turn being read: kept up to ``cap`` + 1 characters, its length counted."""

    line: int
    speaker: str
    cap: int
    chunks: list[str] = field(default_factory=list)
    kept: int = 0
    length: int = 0
    blank_lines: int = 0  # blank lines seen since the last text: kept only if text follows

    def add(self, text: str) -> None:
        if not text.strip():
            self.blank_lines += 1
            return
        for _ in range(self.blank_lines):
            self._append("")
        self.blank_lines = 0
        self._append(text)

    def _append(self, text: str) -> None:
        piece = "\n" + text if self.length else text
        self.length += len(piece)
        room = self.cap + 1 - self.kept
        if room > 0:
            self.chunks.append(piece[:room])
            self.kept += min(room, len(piece))

    def element(self) -> Element:
        content = "".join(self.chunks)
        cut = self.length if self.length > self.kept else None
        return Element(f"line {self.line}", {"speaker": self.speaker, "content": content}, cut)


def _transcript(text: IO[str], max_chars: int) -> Iterator[Element]:
    """Turns of ``Speaker: text`` lines; blank and ``#`` lines before the first turn are skipped.

    Inside a fenced code block (``` or ~~~) every line continues the turn.
    """
    turn: _OpenTurn | None = None
    fenced = False
    for number, line in _bounded_lines(text):
        if line is None:  # longer than any turn may be: the turn it belongs to is refused
            if turn is None:
                yield Element(f"line {number}", Unreadable("expected 'Speaker: text'"))
            else:
                turn.length += MAX_LINE_CHARS
            continue
        body = line.rstrip("\r\n")
        match = None if fenced else _TURN.match(body)
        if match is not None:
            if turn is not None:
                yield turn.element()
            turn = _OpenTurn(number, match["speaker"].strip(), max_chars)
            turn.add(match["content"].strip())
        elif turn is not None:
            turn.add(body)
            fenced ^= _FENCE.match(body) is not None
        elif body.strip() and not body.lstrip().startswith("#"):
            yield Element(f"line {number}", Unreadable("expected 'Speaker: text'"))
    if turn is not None:
        yield turn.element()
