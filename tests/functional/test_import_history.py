"""``hindsight import`` of real chat histories, end to end on the in-memory backend.

Export shapes (OpenAI-style chats, ChatGPT's conversations.json, dated sessions), long and
over-limit turns in one import, resuming an interrupted import, re-runs of old histories,
streaming (never more than one batch read ahead of the store) and the summary by session.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_memory_service, configure, get_settings
from hindsight.cli import app, importing
from hindsight.cli.store import content_limit
from hindsight.core.commands import StoreBatchCommand
from hindsight.core.errors import HindsightError, UnavailableError
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def build(**settings: Any) -> MemoryService:
    chosen = Settings(backend="memory", **settings)
    service = build_memory_service(
        chosen, embedder=HashingEmbedder(), reflector=RuleBasedReflector()
    )
    configure(chosen, service)
    return service


@pytest.fixture
def service() -> Iterator[MemoryService]:
    yield build()
    configure()


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=input)


def run_json(*args: str, code: int = 0) -> Any:
    result = run("--json", *args)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def memories(user: str) -> list[dict[str, Any]]:
    """Every episode of the user, oldest first."""
    found: list[dict[str, Any]] = []
    cursor: list[str] = []
    while True:
        page = run_json("list", user, "--kind", "episodic", "--limit", "50", *cursor)
        found.extend(page["results"])
        if not page["has_more"]:
            return sorted(found, key=lambda m: (m["occurred_at"], m["memory_id"]))
        cursor = ["--cursor", page["next_cursor"]]


def history(sessions: int = 3, turns: int = 20) -> list[dict[str, Any]]:
    """Dated sessions a month apart; every session has an "ok" (a content repeated weeks apart)."""
    out = []
    for s in range(sessions):
        said = [
            {
                "speaker": "Ana" if t % 2 else "Ben",
                "text": f"session {s} turn {t}: plans for day {t}",
            }
            for t in range(turns)
        ]
        if turns > 5:
            said[5] = {"speaker": "Ana", "text": "ok"}
        start = MAY_8 + timedelta(days=30 * s)
        out.append({"session_id": f"s{s}", "date": start.isoformat(), "turns": said})
    return out


class FlakyService:
    """The real service, except that one store_batch call fails (after storing some items)."""

    def __init__(self, inner: MemoryService, fail_on_call: int, error: BaseException, keep: int):
        self.inner, self.fail_on_call, self.error, self.keep = inner, fail_on_call, error, keep
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def store_batch(self, principal: Principal, command: StoreBatchCommand) -> Any:
        self.calls += 1
        if self.calls == self.fail_on_call:
            if self.keep:
                kept = StoreBatchCommand(user_id=command.user_id, items=command.items[: self.keep])
                self.inner.store_batch(principal, kept)
            raise self.error
        return self.inner.store_batch(principal, command)


# --- export shapes ------------------------------------------------------------------------


def test_dated_sessions_keep_time_speaker_and_session(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps(history(sessions=2, turns=3)))

    body = run_json("import", str(path), "--user-id", "ana")

    assert (body["format"], body["stored"], body["refused"]) == ("sessions", 6, 0)
    assert [(s["session_id"], s["stored"]) for s in body["sessions"]] == [("s0", 3), ("s1", 3)]
    listed = memories("ana")
    assert [(m["session_id"], m["speaker"], m["occurred_at"]) for m in listed[:3]] == [
        ("s0", "Ben", "2023-05-08T13:56:00Z"),
        ("s0", "Ana", "2023-05-08T13:56:01Z"),
        ("s0", "Ben", "2023-05-08T13:56:02Z"),
    ]
    assert listed[3]["occurred_at"] == "2023-06-07T13:56:00Z"


def test_openai_chats_one_per_line_are_sessions(service: MemoryService, tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    chats = [
        {
            "id": f"chat-{n}",
            "created_at": f"2024-01-0{n + 1}T09:00:00Z",
            "messages": [
                {"role": "system", "content": "You are a travel agent"},
                {"role": "user", "content": f"Book trip {n} to Kyoto"},
                {"role": "assistant", "content": f"Trip {n} is booked"},
            ],
        }
        for n in range(2)
    ]
    path.write_text("".join(json.dumps(chat) + "\n" for chat in chats))

    body = run_json("import", str(path), "--user-id", "kai")

    assert (body["format"], body["stored"], body["ignored"]) == ("openai", 4, 2)
    assert body["ignored_reasons"] == {"system message": 2}
    listed = memories("kai")
    assert [(m["session_id"], m["speaker"], m["content"]) for m in listed[:2]] == [
        ("chat-0", "user", "Book trip 0 to Kyoto"),
        ("chat-0", "assistant", "Trip 0 is booked"),
    ]
    assert listed[0]["occurred_at"] == "2024-01-01T09:00:01Z"  # after the system message


def test_a_chatgpt_export_from_stdin(service: MemoryService) -> None:
    def node(key: str, parent: str | None, role: str, text: str, at: float) -> dict[str, Any]:
        message = {
            "id": key,
            "author": {"role": role},
            "create_time": at,
            "content": {"content_type": "text", "parts": [text]},
        }
        return {"id": key, "message": message, "parent": parent, "children": []}

    mapping = {
        "m1": node("m1", None, "user", "My sister lives in Porto", 1_700_000_000),
        "m2": node("m2", "m1", "assistant", "Noted: your sister is in Porto", 1_700_000_010),
    }
    export = [{"conversation_id": "c-porto", "mapping": mapping, "current_node": "m2"}]

    result = run(
        "--json", "import", "-", "--user-id", "liv", "--format", "chatgpt", input=json.dumps(export)
    )

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["format"] == "chatgpt"
    listed = memories("liv")
    assert [(m["session_id"], m["occurred_at"]) for m in listed] == [
        ("c-porto", "2023-11-14T22:13:20Z"),
        ("c-porto", "2023-11-14T22:13:30Z"),
    ]


def test_an_imported_chat_finds_the_users_own_turn_before_the_assistants_echo(
    service: MemoryService,
) -> None:
    """The export's roles become speakers, so the assistant's answer, which repeats the
    user's words, weighs less than the user's statement (Policy.assistant_weight) unless
    the question asks for the assistant's words."""
    turns = [
        ("user", "My shins ache: the doctor says shin splints"),
        ("assistant", "Shin splints need rest; ease back slowly once shins stop aching"),
    ]
    said = [{"speaker": role, "text": text} for role, text in turns]
    sessions = [{"session_id": "run-1", "date": MAY_8.isoformat(), "turns": said}]
    imported = run("--json", "import", "-", "--user-id", "kai", input=json.dumps(sessions))
    assert imported.exit_code == 0, imported.output

    about_me = run_json("retrieve", "kai", "shin splints")["results"]
    assert [r["speaker"] for r in about_me] == ["user", "assistant"]
    assert about_me[1]["why"]["assistant_weight"] == 0.8
    asked_of_it = run_json("retrieve", "kai", "what did you say about shin splints")["results"]
    assert asked_of_it[0]["speaker"] == "assistant"
    assert "assistant_weight" not in asked_of_it[0]["why"]


def test_a_file_in_no_known_format_names_the_formats(
    service: MemoryService, tmp_path: Path
) -> None:
    prose = tmp_path / "notes.md"
    prose.write_text("Just some notes\nwithout any speakers\n")
    odd = tmp_path / "odd.json"
    odd.write_text('{"foo": [1, 2]}')

    for path in (prose, odd):
        result = run("import", str(path), "--user-id", "ned")

        assert result.exit_code == 2
        for name in ("jsonl", "openai", "chatgpt", "sessions", "text", "--format"):
            assert name in result.stderr
    assert memories("ned") == []


def test_an_unknown_format_option_lists_the_formats(service: MemoryService, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"content": "hi"}\n')

    result = run("import", str(path), "--user-id", "ned", "--format", "csv")

    assert result.exit_code == 2
    assert "chatgpt" in result.output and "sessions" in result.output


# --- long turns ---------------------------------------------------------------------------


def test_long_turns_are_stored_whole_and_over_limit_ones_refused(
    service: MemoryService, tmp_path: Path
) -> None:
    limit = content_limit(get_settings())
    longest = ("A pasted contract clause. " * (limit // 26 + 1))[:limit]
    too_long = "x" * (limit + 1)
    path = tmp_path / "long.jsonl"
    path.write_text(
        "".join(
            json.dumps({"content": text, "session_id": "paste"}) + "\n"
            for text in ("Here is the contract", longest, too_long, "Did you read it?")
        )
    )

    result = run("--json", "import", str(path), "--user-id", "lea", "--batch-size", "2")

    assert result.exit_code == 1  # one turn refused: the import says so, after going on
    body = json.loads(result.stdout)
    assert (body["stored"], body["skipped"], body["refused"]) == (3, 0, 1)
    [refused] = body["refused_items"]
    assert refused["where"] == "line 3" and refused["session_id"] == "paste"
    assert f"{limit + 1:,} characters" in refused["reason"]
    assert f"the limit is {limit:,}" in refused["reason"]
    assert "HINDSIGHT_MAX_CONTENT_CHARS" in refused["reason"]
    assert body["sessions"] == [
        {"session_id": "paste", "stored": 3, "skipped": 0, "refused": 1, "ignored": 0}
    ]
    contents = [m["content"] for m in memories("lea")]
    assert contents[1] == longest and contents[2] == "Did you read it?"


def test_the_text_summary_lists_sessions_and_refusals(
    service: MemoryService, tmp_path: Path
) -> None:
    limit = content_limit(get_settings())
    path = tmp_path / "chat.txt"
    path.write_text(f"User: first\nBot: {'y' * (limit + 10)}\nUser: third\n")

    result = run("import", str(path), "--user-id", "max", "--session-id", "t1")

    assert result.exit_code == 1
    assert "stored 2" in result.stdout and "refused 1" in result.stdout
    assert "line 2" in result.stdout and "HINDSIGHT_MAX_CONTENT_CHARS" in result.stdout


# --- resuming -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "message", "code"),
    [
        (KeyboardInterrupt(), "interrupted", 130),
        (UnavailableError("the index is unavailable"), "the index is unavailable", 1),
    ],
)
def test_an_interrupted_import_resumed_stores_each_turn_once(
    tmp_path: Path, error: BaseException, message: str, code: int
) -> None:
    service = build()
    path = tmp_path / "history.json"
    path.write_text(json.dumps(history(sessions=3, turns=20)))
    configure(get_settings(), FlakyService(service, fail_on_call=4, error=error, keep=3))  # type: ignore[arg-type]
    try:
        interrupted = run("import", str(path), "--user-id", "ida", "--batch-size", "7")
        configure(get_settings(), service)
        resumed = run_json("import", str(path), "--user-id", "ida", "--batch-size", "7")
        again = run_json("import", str(path), "--user-id", "ida", "--batch-size", "7")
        listed = memories("ida")
    finally:
        configure()

    assert interrupted.exit_code == code
    assert message in interrupted.stdout and "run the same command again" in interrupted.stdout
    assert "stored 21" in interrupted.stdout  # 3 batches of 7 before the fourth broke off
    stored_first = 21 + 3
    assert (resumed["stored"], resumed["skipped"]) == (60 - stored_first, stored_first)
    assert (again["stored"], again["skipped"]) == (0, 60)
    assert len(listed) == 60
    keys = Counter((m["content"], m["occurred_at"]) for m in listed)
    assert max(keys.values()) == 1
    assert sum(m["content"] == "ok" for m in listed) == 3  # one a session, weeks apart


def test_a_rerun_skips_what_the_dedup_window_skipped_the_first_time(
    service: MemoryService, tmp_path: Path
) -> None:
    """ "ok" twice in a minute in May (the second a duplicate) and again in June."""
    sessions = [
        {"session_id": "may", "date": "2023-05-08T10:00:00Z", "turns": ["ok", "lunch?", "ok"]},
        {"session_id": "june", "date": "2023-06-08T10:00:00Z", "turns": ["ok"]},
    ]
    for session in sessions:
        session["turns"] = [{"speaker": "Ana", "text": text} for text in session["turns"]]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(sessions))

    first = run_json("import", str(path), "--user-id", "ana")
    second = run_json("import", str(path), "--user-id", "ana")

    assert (first["stored"], first["skipped"]) == (3, 1)
    assert (second["stored"], second["skipped"]) == (0, 4)
    assert [(m["session_id"], m["content"]) for m in memories("ana")] == [
        ("may", "ok"),
        ("may", "lunch?"),
        ("june", "ok"),
    ]


def test_untimed_turns_get_the_same_times_on_a_rerun(tmp_path: Path) -> None:
    build(dedup_window_seconds=0)  # no dedup window: only the exact same time is the same turn
    path = tmp_path / "chat.txt"
    path.write_text("User: I like tea\nBot: Noted\nUser: I like tea\n")
    try:
        first = run_json("import", str(path), "--user-id", "tom")
        second = run_json("import", str(path), "--user-id", "tom")
        pinned = run_json(
            "import", str(path), "--user-id", "pia", "--occurred-at", "2023-05-08T14:00:00Z"
        )
        listed_tom, listed_pia = memories("tom"), memories("pia")
    finally:
        configure()

    assert (first["stored"], second["stored"], second["skipped"]) == (3, 0, 3)
    assert len(listed_tom) == 3  # the repeated "I like tea" is a turn of its own, once
    modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    assert datetime.fromisoformat(listed_tom[-1]["occurred_at"]) == modified
    assert pinned["stored"] == 3
    assert [m["occurred_at"] for m in listed_pia] == [
        "2023-05-08T13:59:58Z",
        "2023-05-08T13:59:59Z",
        "2023-05-08T14:00:00Z",
    ]


# --- streaming ----------------------------------------------------------------------------


def test_the_import_reads_at_most_one_batch_ahead_of_the_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The file is read lazily: a source that is drained before storing fails the test."""
    service = build()
    batch = 10
    path = tmp_path / "long_history.jsonl"
    path.write_text("".join(json.dumps({"content": f"turn {n}"}) + "\n" for n in range(500)))
    reads = {"passes": 0, "pulled": 0}
    real_read = importing.read_elements

    def counting_read(*args: Any, **kwargs: Any) -> Iterator[Any]:
        reads["passes"] += 1
        reads["pulled"] = 0
        for element in real_read(*args, **kwargs):
            reads["pulled"] += 1
            yield element

    class WatchingService(FlakyService):
        def store_batch(self, principal: Principal, command: StoreBatchCommand) -> Any:
            self.calls += 1
            assert reads["passes"] == 2  # the first read only checks and counts
            assert reads["pulled"] <= self.calls * batch, "read ahead of the store"
            return self.inner.store_batch(principal, command)

    monkeypatch.setattr(importing, "read_elements", counting_read)
    watching = WatchingService(service, fail_on_call=0, error=HindsightError("-"), keep=0)
    configure(get_settings(), watching)  # type: ignore[arg-type]
    try:
        body = run_json("import", str(path), "--user-id", "sam", "--batch-size", str(batch))
    finally:
        configure()

    assert body["stored"] == 500
    assert watching.calls == 50
