"""Kill -9 ``hindsight serve`` while it runs accepted jobs (issue #42): nothing
acknowledged with a 202 is lost. After a restart on the same data directory the jobs
run again, succeed, and every memory is stored exactly once: a 100,000-character store
killed mid-embedding, and a batch killed before its job started.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.concurrency.crash_loop import CrashableServer
from tests.e2e.test_async_jobs import ASYNC, long_text, poll

USER = "u-crash-job"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[CrashableServer]:
    served = CrashableServer(tmp_path / "data", tmp_path / "server.log")
    yield served
    served.kill()


def listed(http: httpx.Client, user_id: str) -> list[dict[str, Any]]:
    page = http.get(f"/v1/users/{user_id}/memories", params={"limit": 50}).json()
    assert not page["has_more"]
    return list(page["results"])


def wait_until_embedding(http: httpx.Client, location: str, timeout: float = 120.0) -> int:
    """Chunks embedded when the job was first seen part-way through its embedding."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = http.get(location).json()
        assert job["state"] in {"pending", "running"}, job
        if job["state"] == "running" and 0 < job["progress"]["done"] < job["progress"]["total"]:
            return int(job["progress"]["done"])
        time.sleep(0.05)
    raise AssertionError(f"the job never got part-way in {timeout} s")


def test_jobs_killed_mid_way_resume_after_a_restart_and_store_exactly_once(
    server: CrashableServer,
) -> None:
    content = long_text("marigold", seed=11)
    items = [{"content": f"queued batch note {i} about kites"} for i in range(5)]
    server.start()
    server.wait_ready()
    with httpx.Client(base_url=server.url, timeout=60) as http:
        long_reply = http.post(
            "/v1/memories", json={"user_id": USER, "content": content}, headers=ASYNC
        )
        batch_reply = http.post(
            "/v1/memories/batch", json={"user_id": USER, "items": items}, headers=ASYNC
        )
        assert long_reply.status_code == batch_reply.status_code == 202
        embedded = wait_until_embedding(http, long_reply.headers["Location"])
    server.kill()  # SIGKILL: the long store half-embedded, the batch maybe not started

    server.start()
    server.wait_ready()
    with httpx.Client(base_url=server.url, timeout=60) as http:
        long_job = poll(http, long_reply.headers["Location"])[-1]
        batch_job = poll(http, batch_reply.headers["Location"])[-1]
        assert long_job["state"] == "succeeded", (long_job, server.log_tail())
        assert batch_job["state"] == "succeeded", (batch_job, server.log_tail())
        assert long_job["attempts"] == 2 and embedded > 0
        assert long_job["result_status"] == 201
        assert [r["status"] for r in batch_job["result"]["results"]] == ["success"] * 5

        memories = listed(http, USER)
        contents = sorted(m["content"] for m in memories)
        assert contents == sorted([content] + [item["content"] for item in items])
        long_id = long_job["result"]["memory_id"]
        assert long_id in {m["memory_id"] for m in memories}
        found = http.post("/v1/retrieve", json={"user_id": USER, "query": "marigold notes"})
        assert long_id in [r["memory_id"] for r in found.json()["results"]]
    server.stop()
