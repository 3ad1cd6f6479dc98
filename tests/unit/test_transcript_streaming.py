"""Reading a conversation file holds one element at a time, never the file."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from hindsight.cli.chat_exports import SessionNaming, ShapeReader
from hindsight.cli.transcript import Document, container_of, read_elements

TURNS = 6_000
FILLER = "a pasted paragraph of an ordinary length, " * 20  # ~860 characters a turn
BOUND = 1_500_000  # bytes of Python objects alive at once; every file below is over 5 MB


def message(n: int) -> dict[str, str]:
    return {"role": "user" if n % 2 else "assistant", "content": f"{n} {FILLER}"}


def one_minified_chat(path: Path) -> None:
    path.write_text(json.dumps({"id": "c1", "messages": [message(n) for n in range(TURNS)]}))


def many_chats(path: Path) -> None:
    chats = [{"messages": [message(n) for n in range(c, c + 20)]} for c in range(0, TURNS, 20)]
    path.write_text(json.dumps(chats, indent=1))


def json_lines(path: Path) -> None:
    path.write_text("".join(json.dumps(message(n)) + "\n" for n in range(TURNS)))


def transcript(path: Path) -> None:
    path.write_text("".join(f"User: {n}\n{FILLER}\n{FILLER}\n" for n in range(TURNS // 2)))


@pytest.mark.parametrize(
    ("name", "write", "container"),
    [
        ("chat.json", one_minified_chat, "json"),
        ("chats.json", many_chats, "json"),
        ("turns.jsonl", json_lines, "jsonl"),
        ("chat.txt", transcript, "text"),
    ],
)
def test_reading_holds_one_element_at_a_time(
    tmp_path: Path, name: str, write: Callable[[Path], None], container: str
) -> None:
    path = tmp_path / name
    write(path)
    assert path.stat().st_size > 5_000_000
    document = Document(container_of(path, path.suffix))
    reader = ShapeReader("auto", SessionNaming(default=None, base="x"))

    tracemalloc.start()
    try:
        count = sum(1 for _ in reader.turns(read_elements(path, document, 100_000), document))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert document.container == container
    assert count == (TURNS if container != "text" else TURNS // 2)
    assert peak < BOUND, f"{peak:,} bytes held while reading a {path.stat().st_size:,}-byte file"


def test_a_json_line_longer_than_the_cap_is_refused_without_being_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight.cli import transcript as module

    monkeypatch.setattr(module, "MAX_LINE_CHARS", 1_000)
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps({"content": "x" * 5_000}) + "\n" + json.dumps({"content": "short"}) + "\n"
    )

    elements = list(read_elements(path, Document("jsonl"), 100_000))

    assert [e.where for e in elements] == ["line 1", "line 2"]
    assert "line longer than 1,000 characters" in elements[0].value.reason
    assert elements[1].value == {"content": "short"}
