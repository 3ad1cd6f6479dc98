"""Known security fixes (issue 15, part 6) over real HTTP, on both local servers.

- ``POST /mcp`` refuses a rebound ``Host`` and a foreign ``Origin`` (403, before the key),
  and answers loopback names out of the box;
- ``GET /v1/health`` without a key says only that the service is up.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import E2E_KEY, SERVERS, Server, own_server

TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Authorization": f"Bearer {E2E_KEY}",
}


@pytest.fixture(scope="module", params=SERVERS)
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    kind = str(request.param)
    with own_server(kind, tmp_path_factory.mktemp(f"hindsight-security-{kind}")) as server:
        yield server


def test_mcp_refuses_a_rebound_host(running: Server) -> None:
    reply = httpx.post(
        f"{running.url}/mcp",
        json=TOOLS_LIST,
        headers={**MCP_HEADERS, "Host": "attacker.example:8080"},
        timeout=60,
    )
    assert reply.status_code == 403, reply.text
    assert "HINDSIGHT_MCP_ALLOWED_HOSTS" in reply.json()["message"]


def test_mcp_refuses_a_foreign_origin(running: Server) -> None:
    reply = httpx.post(
        f"{running.url}/mcp",
        json=TOOLS_LIST,
        headers={**MCP_HEADERS, "Origin": "https://attacker.example"},
        timeout=60,
    )
    assert reply.status_code == 403, reply.text
    assert "HINDSIGHT_MCP_ALLOWED_ORIGINS" in reply.json()["message"]


def test_mcp_answers_loopback_out_of_the_box(running: Server) -> None:
    port = running.url.rsplit(":", 1)[1]
    for host, origin in ((None, None), (f"localhost:{port}", f"http://localhost:{port}")):
        extra = {"Host": host, "Origin": origin} if host and origin else {}
        reply = httpx.post(
            f"{running.url}/mcp", json=TOOLS_LIST, headers={**MCP_HEADERS, **extra}, timeout=60
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["result"]["tools"]


def test_health_without_a_key_is_the_status_only(running: Server) -> None:
    keyless = httpx.get(f"{running.url}/v1/health", timeout=60)
    assert keyless.status_code == 200 and keyless.json() == {"status": "success"}
    keyed = httpx.get(
        f"{running.url}/v1/health", headers={"Authorization": f"Bearer {E2E_KEY}"}, timeout=60
    )
    assert keyed.status_code == 200 and keyed.json()["indexed_documents"] == 0
