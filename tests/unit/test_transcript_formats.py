"""Reading conversation files for ``hindsight import``: containers, export shapes, times."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight.cli.chat_exports import (
    Format,
    SessionNaming,
    ShapeReader,
    SourceTurn,
    chatgpt_thread,
    parse_time,
)
from hindsight.cli.transcript import (
    Document,
    TranscriptFormatError,
    container_of,
    detect_container,
    read_elements,
)

NAMING = SessionNaming(default=None, base="chats")


def turns_of(
    path: Path, fmt: Format = "auto", naming: SessionNaming = NAMING, limit: int = 10_000
) -> list[SourceTurn]:
    document = Document(container_of(path, path.suffix))
    reader = ShapeReader(fmt, naming)
    return list(reader.turns(read_elements(path, document, limit), document))


def write(tmp_path: Path, name: str, value: Any) -> Path:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value, indent=2))
    return path


def stored(turns: list[SourceTurn]) -> list[tuple[Any, ...]]:
    return [
        (t.session_id, t.fields.get("speaker"), t.fields["content"], t.fields.get("occurred_at"))
        for t in turns
        if t.fields is not None
    ]


# --- containers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "suffix", "expected"),
    [
        (b'[{"content": "a"}]', "", "json"),
        (b'{"content": "a"}\n{"content": "b"}\n', "", "jsonl"),
        (b'{\n  "messages": []\n}\n', "", "json"),
        (b'{"messages": [{"role": "user", "content": "hi"}]}', "", "jsonl"),
        (b"\xef\xbb\xbf[1]", "", "json"),
        (b"User: hello\n", "", "text"),
        (b'{"content": "a"}\n', ".txt", "text"),
        (b"User: hello\n", ".jsonl", "jsonl"),
    ],
)
def test_the_container_is_told_by_suffix_or_first_bytes(
    head: bytes, suffix: str, expected: str
) -> None:
    assert detect_container(head, suffix) == expected


def test_a_broken_json_document_names_the_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.json", '[\n{"content": "fine"},\n{"content": oops}\n]\n')

    with pytest.raises(TranscriptFormatError, match=r"line 3, column 13.*oops"):
        turns_of(path)


def test_text_after_a_json_document_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "extra.json", '[{"content": "fine"}] and more')

    with pytest.raises(TranscriptFormatError, match="invalid JSON"):
        turns_of(path)


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("User: caf\xe9\n".encode("latin-1"))

    with pytest.raises(TranscriptFormatError, match="UTF-8"):
        turns_of(path)


# --- turns on their own -------------------------------------------------------------------


def test_json_lines_take_openai_messages_and_aliases_as_turns(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "turns.jsonl",
        '{"role": "system", "content": "be brief"}\n'
        '{"role": "user", "content": "I moved to Lisbon", "timestamp": 1683554160}\n'
        '{"speaker": "bot", "text": "Nice!", "date": "2023-05-08T13:57:00+02:00"}\n'
        '{"role": "assistant", "content": null}\n'
        "{oops\n",
    )

    turns = turns_of(path, naming=SessionNaming(default="s1", base="s1"))

    assert stored(turns) == [
        ("s1", "user", "I moved to Lisbon", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("s1", "bot", "Nice!", datetime(2023, 5, 8, 11, 57, tzinfo=UTC)),
    ]
    assert [(t.where, t.ignored) for t in turns if t.ignored] == [
        ("line 1", "system message"),
        ("line 4", "no text"),
    ]
    assert [(t.where, t.error) for t in turns if t.error] == [
        ("line 5", "not valid JSON: Expecting property name enclosed in double quotes (column 2)")
    ]


def test_a_turn_with_an_unreadable_time_is_refused_with_what_to_send(tmp_path: Path) -> None:
    path = write(tmp_path, "t.jsonl", '{"content": "hello", "occurred_at": "last tuesday"}\n')

    [turn] = turns_of(path)

    assert turn.fields is None
    assert "'last tuesday' is not a time: use ISO 8601" in (turn.error or "")


def test_an_object_of_unknown_keys_is_named_with_the_shapes_expected(tmp_path: Path) -> None:
    path = write(tmp_path, "odd.jsonl", '{"foo": 1}\n[1, 2]\n')

    turns = turns_of(path)

    assert all(t.fields is None for t in turns)
    assert '{"messages": [...]}' in (turns[0].error or "")
    assert "got list" in (turns[1].error or "")


# --- conversations ------------------------------------------------------------------------


def test_an_openai_chat_is_one_session_streamed_turn_by_turn(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "You are helpful"},
        {"role": "user", "content": "Plan a trip to Kyoto"},
        {"role": "assistant", "content": [{"type": "text", "text": "When?"}, {"type": "x"}]},
        {"role": "user", "name": "Ana", "content": "In May"},
    ]
    # the date stands after the list: the importer passes the fields of its first read
    path = write(tmp_path, "chat.json", {"messages": messages, "date": "2023-05-08T13:56:00Z"})
    document = Document("json")
    reader = ShapeReader("auto", SessionNaming(default="trip", base="trip", single=True))

    first_read = list(reader.turns(read_elements(path, document, 1000), document))
    second = ShapeReader("auto", SessionNaming(default="trip", base="trip", single=True))
    again = Document("json")
    turns = list(second.turns(read_elements(path, again, 1000), again, document.fields))

    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert stored(turns) == [
        ("trip", "user", "Plan a trip to Kyoto", start + timedelta(seconds=1)),
        ("trip", "assistant", "When?", start + timedelta(seconds=2)),
        ("trip", "Ana", "In May", start + timedelta(seconds=3)),
    ]
    assert turns[0].where == "message 1" and turns[0].ignored == "system message"
    assert [t.where for t in first_read] == [t.where for t in turns]
    assert second.labels == {"openai"}


def test_a_list_of_chats_is_one_session_each_named_by_id_or_number(tmp_path: Path) -> None:
    chats = [
        {"id": "conv 1/a", "messages": [{"role": "user", "content": "first"}]},
        {"messages": [{"role": "user", "content": "second"}]},
    ]
    path = write(tmp_path, "chats.json", chats)

    turns = turns_of(path)

    assert [(t.session_id, t.where) for t in turns] == [
        ("conv-1-a", "item 1, message 1"),
        ("chats-2", "item 2, message 1"),
    ]


def test_dated_sessions_keep_turn_order_a_second_apart(tmp_path: Path) -> None:
    sessions = {
        "sessions": [
            {
                "session_id": "s1",
                "date": "1:56 pm on 8 May, 2023",
                "turns": [
                    {"speaker": "Caroline", "text": "I went to a support group", "dia_id": "D1:1"},
                    {"speaker": "Melanie", "content": "How was it?"},
                    {"speaker": "Caroline", "text": "Good", "time": "2023-05-08T14:30:00Z"},
                ],
            },
            {"date": "2023-06-01", "turns": [{"speaker": "Melanie", "text": "I painted"}]},
            {"date": "someday", "turns": [{"speaker": "Melanie", "text": "lost"}]},
        ]
    }
    path = write(tmp_path, "locomo.json", sessions)

    turns = turns_of(path)

    may8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert stored(turns) == [
        ("s1", "Caroline", "I went to a support group", may8),
        ("s1", "Melanie", "How was it?", may8 + timedelta(seconds=1)),
        ("s1", "Caroline", "Good", datetime(2023, 5, 8, 14, 30, tzinfo=UTC)),
        ("chats-2", "Melanie", "I painted", datetime(2023, 6, 1, tzinfo=UTC)),
    ]
    assert turns[-1].where == "session 3, turn 1"
    assert "'someday' is not a time" in (turns[-1].error or "")


def test_a_forced_format_refuses_elements_of_another_shape(tmp_path: Path) -> None:
    path = write(tmp_path, "turns.json", [{"content": "just a turn"}])

    [turn] = turns_of(path, fmt="sessions")

    assert turn.fields is None
    assert '"messages" or "turns" (--format sessions)' in (turn.error or "")


# --- ChatGPT's conversations.json ---------------------------------------------------------


def chatgpt_conversation() -> dict[str, Any]:
    def node(key: str, parent: str | None, children: list[str], **message: Any) -> dict:
        body = {"id": key, "author": {"role": message.pop("role")}, **message} if message else None
        return {"id": key, "message": body, "parent": parent, "children": children}

    def text(*parts: Any) -> dict[str, Any]:
        return {"content_type": "text", "parts": list(parts)}

    mapping = {
        "root": node("root", None, ["sys"]),
        "sys": node("sys", "root", ["u1"], role="system", content=text("")),
        "u1": node(
            "u1",
            "sys",
            ["a1", "a2"],
            role="user",
            content=text("Where is Kyoto?"),
            create_time=1.7e9,
        ),
        "a1": node("a1", "u1", [], role="assistant", content=text("old answer"), create_time=1.7e9),
        "a2": node(
            "a2", "u1", ["t1"], role="assistant", content=text("In Japan."), create_time=None
        ),
        "t1": node(
            "t1",
            "a2",
            ["c1"],
            role="assistant",
            recipient="python",
            content={"content_type": "code", "text": "print(1)"},
        ),
        "c1": node("c1", "t1", [], role="user", content=text("Thanks", {"asset": "img"})),
    }
    return {
        "title": "Kyoto",
        "create_time": 1_699_999_000.5,
        "mapping": mapping,
        "current_node": "c1",
        "conversation_id": "6f0c-kyoto",
    }


def test_chatgpt_export_follows_the_current_branch(tmp_path: Path) -> None:
    path = write(tmp_path, "conversations.json", [chatgpt_conversation()])

    turns = turns_of(path)

    start = datetime.fromtimestamp(1_699_999_000.5, UTC)
    when = datetime.fromtimestamp(1.7e9, UTC)
    assert stored(turns) == [
        ("6f0c-kyoto", "user", "Where is Kyoto?", when),
        ("6f0c-kyoto", "assistant", "In Japan.", start + timedelta(seconds=2)),
        ("6f0c-kyoto", "user", "Thanks", start + timedelta(seconds=4)),
    ]
    assert [t.ignored for t in turns if t.ignored] == ["system message", "message to a tool"]
    assert "old answer" not in str(stored(turns))


def test_chatgpt_thread_without_current_node_takes_the_newest_branch() -> None:
    conversation = chatgpt_conversation()
    del conversation["mapping"]["c1"]
    conversation["mapping"]["t1"]["children"] = []

    thread = chatgpt_thread(conversation["mapping"], None)

    assert [m["id"] for m in thread] == ["sys", "u1", "a2", "t1"]


# --- transcripts --------------------------------------------------------------------------


def test_transcript_turns_span_lines_and_long_ones_are_held_only_to_the_limit(
    tmp_path: Path,
) -> None:
    log = "\n".join(f"12:{n % 60:02d} worker:{n} ERROR: disk {n} full" for n in range(2_000))
    code = "```yaml\nretries: 3\nTimeout: 30\n```"
    yaml = "  name: api\n  port: 8080"
    path = write(
        tmp_path,
        "chat.txt",
        "# exported chat\n\nUser: here is my log\n"
        f"{log}\n\n{code}\n{yaml}\nsee https://example.org/x: it breaks\n\n"
        "Assistant: The log is long\n用户：好的\n",
    )

    turns = turns_of(path, limit=100_000)
    cut = turns_of(path, limit=1_000)

    assert [(t.where, t.fields and t.fields["speaker"]) for t in turns] == [
        ("line 3", "User"),
        ("line 2013", "Assistant"),
        ("line 2014", "用户"),
    ]
    whole = turns[0].fields["content"]  # type: ignore[index]
    assert whole.startswith("here is my log\n12:00 worker:0 ERROR")
    assert whole.endswith(f"{code}\n{yaml}\nsee https://example.org/x: it breaks")
    assert turns[0].length is None
    assert len(cut[0].fields["content"]) == 1_001  # type: ignore[index]
    assert cut[0].length == len(whole)  # the length is counted, the text is not kept
    assert cut[1].fields == {"speaker": "Assistant", "content": "The log is long"}


# --- times --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2023-05-08T13:56:00Z", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08 15:56:00+02:00", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08", datetime(2023, 5, 8, tzinfo=UTC)),
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        (1_683_554_160, datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        (1_683_554_160_000, datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
    ],
)
def test_times_in_the_shapes_exports_use(value: Any, expected: datetime) -> None:
    assert parse_time(value, "date") == expected


@pytest.mark.parametrize("value", ["tomorrow", True, [2023], 1e300])
def test_what_is_not_a_time_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="is not a time"):
        parse_time(value, "date")
