"""The ``hindsight`` CLI end to end, in process, on the in-memory backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_memory_service, configure
from hindsight.cli import app
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder


@pytest.fixture
def service() -> Iterator[MemoryService]:
    settings = Settings(backend="memory")
    built = build_memory_service(
        settings, embedder=HashingEmbedder(), reflector=RuleBasedReflector()
    )
    configure(settings, built)
    yield built
    configure()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def run(runner: CliRunner, *args: str, input: str | None = None) -> Result:
    return runner.invoke(app, list(args), input=input)


def run_json(runner: CliRunner, *args: str) -> Any:
    result = run(runner, "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def store(runner: CliRunner, user: str, content: str, *extra: str) -> str:
    return run_json(runner, "store", user, content, *extra)["memory_id"]


# --- store / retrieve -------------------------------------------------------------------------


def test_store_then_retrieve_shows_it_in_a_table(service: MemoryService, runner: CliRunner) -> None:
    stored = run(runner, "store", "alice", "Alice is allergic to peanuts", "--category", "health")
    assert stored.exit_code == 0, stored.output
    assert "stored mem_" in stored.stdout
    memory_id = stored.stdout.split("stored ")[1].split()[0]

    found = run(runner, "retrieve", "alice", "peanuts allergic", "--why")

    assert found.exit_code == 0, found.output
    assert memory_id in found.stdout
    assert "Alice is allergic to peanuts" in found.stdout
    assert "health" in found.stdout
    assert "score=" in found.stdout  # the --why column


def test_retrieve_json_returns_the_stored_memory(service: MemoryService, runner: CliRunner) -> None:
    memory_id = store(runner, "alice", "Alice moved to Lisbon in May", "--scope", "travel")
    store(runner, "bob", "Bob moved to Lisbon in May")

    body = run_json(runner, "retrieve", "alice", "Lisbon", "--top-k", "5")

    assert body["status"] == "success"
    assert [r["memory_id"] for r in body["results"]] == [memory_id]
    assert body["results"][0]["scope"] == "travel"
    assert "why" in body["results"][0]


def test_store_accepts_time_ttl_and_metadata(service: MemoryService, runner: CliRunner) -> None:
    memory_id = store(
        runner,
        "alice",
        "Flight to Tokyo booked",
        "--occurred-at",
        "2026-01-02T10:00:00Z",
        "--ttl-seconds",
        "86400000",
        "--metadata",
        '{"source": "email"}',
        "--speaker",
        "alice",
    )

    memory = run_json(runner, "show", memory_id)["memory"]

    assert memory["occurred_at"].startswith("2026-01-02T10:00:00")
    assert memory["expires_at"] is not None
    assert memory["metadata"] == {"source": "email"}
    assert memory["speaker"] == "alice"


def test_same_content_twice_is_skipped_as_duplicate(
    service: MemoryService, runner: CliRunner
) -> None:
    first = store(runner, "alice", "I like green tea")

    again = run(runner, "store", "alice", "I like green tea")
    again_json = run_json(runner, "store", "alice", "I like green tea")

    assert again.exit_code == 0
    assert "skipped" in again.stdout and first in again.stdout
    assert again_json["status"] == "skipped"
    assert (again_json["memory_id"], again_json["reason"]) == (first, "duplicate")


def test_tenants_do_not_see_each_other(service: MemoryService, runner: CliRunner) -> None:
    memory_id = store(runner, "alice", "The door code is 4711")

    other = run_json(runner, "--tenant", "globex", "retrieve", "alice", "door code")
    shown = run(runner, "--tenant", "globex", "show", memory_id)

    assert other["results"] == []
    assert shown.exit_code == 1
    assert "not found" in shown.stderr


# --- import -----------------------------------------------------------------------------------


def test_import_json_array_reports_a_bad_item_by_position(
    service: MemoryService, runner: CliRunner, tmp_path: Path
) -> None:
    items = [
        {"content": "We talked about the Berlin trip", "speaker": "user"},
        {"content": "   ", "speaker": "user"},
        {"content": "The user wants a quiet hotel", "category": "travel", "session_id": "s9"},
    ]
    path = tmp_path / "talk.json"
    path.write_text("[\n" + ",\n".join(json.dumps(item) for item in items) + "\n]\n")

    result = run(runner, "--json", "import", str(path), "--user-id", "carol", "--session-id", "s1")

    assert result.exit_code == 1  # one turn failed: the import says so
    body = json.loads(result.stdout)
    assert (body["stored"], body["skipped"], body["refused"]) == (2, 0, 1)
    refused = body["refused_items"]
    assert [(r["where"], r["session_id"]) for r in refused] == [("item 2", "s1")]
    assert "content" in refused[0]["reason"]
    listed = run_json(runner, "list", "carol")["results"]
    assert {m["session_id"] for m in listed} == {"s1", "s9"}


def test_import_jsonl_reports_bad_line_and_stores_the_rest(
    service: MemoryService, runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "talk.jsonl"
    path.write_text(
        '{"content": "first turn", "speaker": "user"}\n'
        "\n"
        "{not json\n"
        '{"content": "third turn", "occurred_at": "2026-03-01T08:00:00Z"}\n'
        '{"content": "wrong user", "user_id": "mallory"}\n'
    )

    result = run(runner, "import", str(path), "--user-id", "dave")

    assert result.exit_code == 1
    assert "stored 2" in result.stdout and "refused 2" in result.stdout
    assert "not valid JSON" in result.stdout
    assert "mallory" in result.stdout
    rows = [row for row in result.stdout.splitlines() if "not valid JSON" in row]
    assert len(rows) == 1 and "line 3 " in rows[0]
    contents = {m["content"] for m in run_json(runner, "list", "dave")["results"]}
    assert contents == {"first turn", "third turn"}


def test_import_text_transcript_keeps_speakers_and_order(
    service: MemoryService, runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "chat.txt"
    path.write_text(
        "this line has no speaker\n"
        "User: I am planning a trip to Kyoto\n"
        "Assistant: When would you like to go?\n"
        "A line without a speaker continues the turn above.\n"
        "\n"
        "用户：下个月吧\n"
    )

    result = run(runner, "--json", "import", str(path), "--user-id", "erin", "--session-id", "trip")

    body = json.loads(result.stdout)
    assert result.exit_code == 1
    assert body["format"] == "text"
    assert (body["stored"], body["refused"]) == (3, 1)
    assert [i["where"] for i in body["refused_items"]] == ["line 1"]
    listed = run_json(runner, "list", "erin")["results"]  # newest first
    assert [(m["speaker"], m["content"]) for m in reversed(listed)] == [
        ("User", "I am planning a trip to Kyoto"),
        (
            "Assistant",
            "When would you like to go?\nA line without a speaker continues the turn above.",
        ),
        ("用户", "下个月吧"),
    ]
    assert {m["session_id"] for m in listed} == {"trip"}


def test_import_twice_skips_duplicates_in_small_batches(
    service: MemoryService, runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps({"content": f"turn number {n}"}) + "\n" for n in range(5)))

    first = run_json(runner, "import", str(path), "--user-id", "finn", "--batch-size", "2")
    second = run_json(runner, "import", str(path), "--user-id", "finn", "--batch-size", "2")

    assert (first["stored"], first["skipped"], first["refused"]) == (5, 0, 0)
    assert (second["stored"], second["skipped"], second["refused"]) == (0, 5, 0)
    assert len(run_json(runner, "list", "finn")["results"]) == 5


def test_import_of_broken_json_array_imports_nothing(
    service: MemoryService, runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n{"content": "fine"},\n{"content": oops}\n]\n')

    result = run(runner, "import", str(path), "--user-id", "gina")

    assert result.exit_code == 2
    assert "line 3" in result.stderr
    assert run_json(runner, "list", "gina")["results"] == []


def test_import_reads_stdin_with_an_explicit_format(
    service: MemoryService, runner: CliRunner
) -> None:
    transcript = "Guide: The museum opens at nine\nVisitor: Great, see you then\n"

    result = runner.invoke(
        app, ["--json", "import", "-", "--user-id", "ola", "--format", "text"], input=transcript
    )

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["stored"] == 2


# --- serve ------------------------------------------------------------------------------------


def test_serve_refuses_keyless_on_a_public_interface(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["serve", "--host", "0.0.0.0", "--port", "18080", "--data-dir", str(tmp_path)],
        env={"HINDSIGHT_API_KEYS": None, "HINDSIGHT_API_KEYS_FILE": None},
    )

    assert result.exit_code == 1
    assert "refusing" in result.stderr
    assert "Traceback" not in result.output


# --- list -------------------------------------------------------------------------------------


def test_list_all_follows_every_page(service: MemoryService, runner: CliRunner) -> None:
    ids = {store(runner, "hana", f"note {word}") for word in "abcdefg"}

    first_page = run_json(runner, "list", "hana", "--limit", "3")
    everything = run_json(runner, "list", "hana", "--limit", "3", "--all")
    table = run(runner, "list", "hana", "--limit", "3")

    assert len(first_page["results"]) == 3 and first_page["has_more"]
    assert [m["memory_id"] for m in everything["results"]].__len__() == 7
    assert {m["memory_id"] for m in everything["results"]} == ids
    assert everything["has_more"] is False and everything["next_cursor"] is None
    assert "more: --cursor" in table.stdout


# --- reflect / review -------------------------------------------------------------------------


def test_reflect_then_approve_and_reject(service: MemoryService, runner: CliRunner) -> None:
    store(runner, "ivan", "I am allergic to peanuts.")
    store(runner, "ivan", "I prefer window seats on long flights.")

    dry = run_json(runner, "reflect", "ivan", "--dry-run")
    reflected = run_json(runner, "reflect", "ivan")
    table = run(runner, "reflect", "ivan")

    assert dry["dry_run"] is True and dry["created"]
    assert run_json(runner, "list", "ivan", "--kind", "semantic")["results"] != []
    pending = [fact["memory_id"] for fact in reflected["pending"]]
    assert len(pending) >= 2
    assert table.exit_code == 0 and "no new facts" in table.stdout  # nothing new since

    approved = run(runner, "approve", pending[0])
    rejected = run(runner, "reject", pending[1])

    assert approved.exit_code == 0 and "approved" in approved.stdout
    assert rejected.exit_code == 0 and "rejected" in rejected.stdout
    assert run_json(runner, "show", pending[0])["memory"]["status"] == "approved"
    assert run_json(runner, "show", pending[1])["memory"]["status"] == "rejected"
    still_pending = run_json(runner, "list", "ivan", "--status", "pending")["results"]
    assert {m["memory_id"] for m in still_pending}.isdisjoint(pending[:2])


def test_approving_an_episode_is_refused(service: MemoryService, runner: CliRunner) -> None:
    memory_id = store(runner, "ivan", "Just an episode")

    result = run(runner, "approve", memory_id)

    assert result.exit_code == 1
    assert "episodic" in result.stderr
    assert "Traceback" not in result.output


# --- context ----------------------------------------------------------------------------------


def test_context_prints_the_prompt_block(service: MemoryService, runner: CliRunner) -> None:
    store(runner, "jack", "Let us book the museum tickets", "--session-id", "s1")

    result = run(runner, "context", "jack", "s1", "--budget-tokens", "500")

    assert result.exit_code == 0, result.output
    assert "museum tickets" in result.stdout
    assert "tokens" in result.stderr


# --- forget / erase ---------------------------------------------------------------------------


def test_forget_removes_the_memory(service: MemoryService, runner: CliRunner) -> None:
    memory_id = store(runner, "kim", "Temporary note")

    forgotten = run(runner, "forget", memory_id)
    shown = run(runner, "show", memory_id)

    assert forgotten.exit_code == 0 and "forgot" in forgotten.stdout
    assert shown.exit_code == 1
    assert "not found" in shown.stderr


def test_erase_user_asks_for_confirmation(service: MemoryService, runner: CliRunner) -> None:
    store(runner, "lena", "Something to erase")
    store(runner, "lena", "Something else")

    declined = run(runner, "erase-user", "lena", input="n\n")
    kept = run_json(runner, "list", "lena")["results"]
    erased = run_json(runner, "erase-user", "lena", "--yes")

    assert declined.exit_code == 1
    assert len(kept) == 2
    assert erased["deleted"] == 2
    assert run_json(runner, "list", "lena")["results"] == []


def test_erase_user_proceeds_when_confirmed(service: MemoryService, runner: CliRunner) -> None:
    store(runner, "lena", "Something to erase")

    confirmed = run(runner, "erase-user", "lena", input="y\n")

    assert confirmed.exit_code == 0, confirmed.output
    assert "erased" in confirmed.stdout
    assert run_json(runner, "list", "lena")["results"] == []


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["retrieve", "alice", "tea", "--top-k", "500"], "--top-k"),
        (["retrieve", "alice", "tea", "--kind", "dream"], "--kind"),
        (["store", "bad id!", "hello"], "USER_ID"),
        (["store", "alice", "hello", "--metadata", "[1, 2]"], "JSON object"),
        (["store", "alice", "hello", "--occurred-at", "yesterday-ish"], "--occurred-at"),
        (["list", "alice", "--limit", "0"], "--limit"),
    ],
)
def test_invalid_input_exits_2_with_a_readable_message(
    service: MemoryService, runner: CliRunner, args: list[str], expected: str
) -> None:
    result = run(runner, *args)

    assert result.exit_code == 2
    assert expected in result.stderr
    assert "Traceback" not in result.output


def test_unknown_id_exits_1_with_not_found(service: MemoryService, runner: CliRunner) -> None:
    human = run(runner, "show", "mem_does_not_exist")
    machine = run(runner, "--json", "forget", "mem_does_not_exist")

    assert human.exit_code == 1
    assert human.stderr.count("\n") == 1 and "not found" in human.stderr
    assert human.stdout == ""
    assert machine.exit_code == 1
    assert json.loads(machine.stdout)["status"] == "error"
    assert "not found" in json.loads(machine.stdout)["message"]


def test_help_lists_every_command(runner: CliRunner) -> None:
    result = run(runner, "--help")

    assert result.exit_code == 0
    for name in (
        "serve",
        "store",
        "retrieve",
        "reflect",
        "list",
        "show",
        "approve",
        "reject",
        "forget",
        "erase-user",
        "context",
        "import",
    ):
        assert name in result.stdout


def test_reindex_rebuilds_the_index_and_reports_counts(
    runner: CliRunner, service: MemoryService
) -> None:
    from hindsight.adapters.memory import InMemorySearchIndex

    store(runner, "u1", "I am allergic to peanuts")
    from hindsight.bootstrap import get_settings, rewire

    configure(get_settings(), rewire(service, index=InMemorySearchIndex()))  # the index was lost
    assert run_json(runner, "retrieve", "u1", "peanuts")["results"] == []
    assert run_json(runner, "reindex")["indexed"] == 1
    found = run_json(runner, "retrieve", "u1", "peanuts")["results"]
    assert [r["content"] for r in found] == ["I am allergic to peanuts"]
