"""The README story over real HTTP: store, retrieve, dedup, batch, list, delete, reflect,
approve, context, erase, restart — against both servers (``hindsight serve`` and the
template-driven gateway; see conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from hindsight.bootstrap import configure, get_service, get_settings
from hindsight.server.runner import LocalServer
from tests.e2e.conftest import E2E_KEY, OTHER_TENANT_KEY, Server, start_server


def store(client: httpx.Client, user_id: str, content: str, **fields: Any) -> str:
    reply = client.post("/v1/memories", json={"user_id": user_id, "content": content, **fields})
    assert reply.status_code == 201, reply.text
    assert reply.json()["status"] == "success"
    return reply.json()["memory_id"]


def retrieve(client: httpx.Client, user_id: str, query: str, **fields: Any) -> dict[str, Any]:
    reply = client.post("/v1/retrieve", json={"user_id": user_id, "query": query, **fields})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "success"
    return body


def test_health(client: httpx.Client) -> None:
    reply = client.get("/v1/health")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("application/json")
    assert "e5" in reply.json()["embedding_model"]


def test_chinese_dietary_question_finds_the_peanut_allergy_first(client: httpx.Client) -> None:
    allergy = store(client, "zh-user", "用户对花生过敏", category="constraint")
    for content in ("今天天气很好", "用户喜欢看科幻电影", "下周三要去北京出差", "用户每天早上跑步"):
        store(client, "zh-user", content)
    body = retrieve(client, "zh-user", "饮食禁忌", top_k=3)
    assert body["results"][0]["memory_id"] == allergy
    assert body["results"][0]["content"] == "用户对花生过敏"
    assert body["partial"] is False


def test_english_dietary_question_finds_the_peanut_allergy_first(client: httpx.Client) -> None:
    allergy = store(client, "en-user", "The user is allergic to peanuts", category="constraint")
    for content in (
        "The weather is lovely today",
        "The user enjoys science fiction films",
        "Business trip to Berlin next Wednesday",
        "The user goes running every morning",
    ):
        store(client, "en-user", content)
    body = retrieve(client, "en-user", "what food must the user avoid?", top_k=3)
    assert body["results"][0]["memory_id"] == allergy


def test_same_content_is_skipped_as_duplicate(client: httpx.Client) -> None:
    first = store(client, "dedup-user", "用户喜欢喝乌龙茶")
    reply = client.post(
        "/v1/memories", json={"user_id": "dedup-user", "content": "用户喜欢喝乌龙茶"}
    )
    assert reply.status_code == 200
    assert reply.json()["status"] == "skipped"
    assert reply.json()["reason"] == "duplicate"
    assert reply.json()["memory_id"] == first


def test_batch_and_list_paging(client: httpx.Client) -> None:
    items = [{"content": f"会议纪要第{i}条：预算确认"} for i in range(5)]
    reply = client.post("/v1/memories/batch", json={"user_id": "batch-user", "items": items})
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["status"] for r in results] == ["success"] * 5
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        page = client.get("/v1/users/batch-user/memories", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        seen += [m["memory_id"] for m in body["results"]]
        if not body["has_more"]:
            break
        params = {"limit": 2, "cursor": body["next_cursor"]}
    assert sorted(seen) == sorted(r["memory_id"] for r in results)


def test_delete_then_get_is_404(client: httpx.Client) -> None:
    memory_id = store(client, "delete-user", "临时记忆，稍后删除")
    reply = client.delete(f"/v1/memories/{memory_id}")
    assert reply.status_code == 200, reply.text
    gone = client.get(f"/v1/memories/{memory_id}")
    assert gone.status_code == 404
    assert gone.json()["status"] == "error"


def test_reflect_approve_then_the_fact_ranks_first(client: httpx.Client) -> None:
    store(client, "reflect-user", "我对花生过敏，一吃就起疹子")
    store(client, "reflect-user", "I am allergic to peanuts")
    store(client, "reflect-user", "今天去公园散步了")
    reply = client.post("/v1/reflect", json={"user_id": "reflect-user"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "success"
    assert body["pending"], body
    fact = next(
        f for f in body["pending"] if "花生" in f["content"] or "peanut" in f["content"].lower()
    )
    approved = client.post(f"/v1/semantic/{fact['memory_id']}/approve")
    assert approved.status_code == 200, approved.text
    assert approved.json()["memory"]["status"] == "approved"
    found = retrieve(client, "reflect-user", "what food must the user avoid?")
    assert found["results"][0]["memory_id"] == fact["memory_id"]
    assert found["results"][0]["kind"] == "semantic"


def test_context_block(client: httpx.Client) -> None:
    store(client, "ctx-user", "用户对花生过敏", session_id="s1")
    store(client, "ctx-user", "帮我订周五晚上的餐厅", session_id="s1")
    reply = client.post(
        "/v1/context",
        json={"user_id": "ctx-user", "session_id": "s1", "query": "订餐厅", "budget_tokens": 600},
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "success"
    assert body["tokens"] <= 600
    assert "餐厅" in body["context"]


def test_erase_user(client: httpx.Client) -> None:
    store(client, "erase-user", "要被清除的记忆一")
    store(client, "erase-user", "要被清除的记忆二")
    reply = client.delete("/v1/users/erase-user")
    assert reply.status_code == 200, reply.text
    assert reply.json()["deleted"] == 2
    assert client.get("/v1/users/erase-user/memories").json()["results"] == []


def test_tenants_do_not_see_each_other(client: httpx.Client, server: Server) -> None:
    memory_id = store(client, "shared-name", "acme 的内部计划")
    other = httpx.get(
        f"{server.url}/v1/memories/{memory_id}",
        headers={"x-api-key": OTHER_TENANT_KEY},
        timeout=60,
    )
    assert other.status_code == 404
    listed = httpx.get(
        f"{server.url}/v1/users/shared-name/memories",
        headers={"x-api-key": OTHER_TENANT_KEY},
        timeout=60,
    )
    assert listed.json()["results"] == []


def test_errors_are_json(client: httpx.Client, server: Server) -> None:
    unknown = client.get("/v1/nothing")
    assert unknown.status_code == 404
    assert unknown.json()["status"] == "error"
    wrong_method = client.put("/v1/memories", json={})
    assert wrong_method.status_code == 405
    assert "POST" in wrong_method.json()["message"]
    assert wrong_method.headers["allow"] == "POST"
    too_big = client.post(
        "/v1/memories",
        content=b'{"user_id": "u", "content": "' + b"x" * 6_400_000 + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert too_big.status_code == 413
    assert "6.0 MiB" in too_big.json()["message"]
    malformed = client.post(
        "/v1/memories", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert malformed.status_code == 400
    invalid = client.post("/v1/memories", json={"user_id": "u", "content": "x" * 100_001})
    assert invalid.status_code == 413
    assert "HINDSIGHT_MAX_CONTENT_CHARS" in invalid.json()["message"]
    anonymous = httpx.post(f"{server.url}/v1/memories", json={"user_id": "u", "content": "x"})
    assert anonymous.status_code == 401
    assert client.get("/v1/users/u/memories").json()["results"] == []


def test_concurrent_requests_each_get_their_own_answer(client: httpx.Client) -> None:
    from concurrent.futures import ThreadPoolExecutor

    contents = [f"并发写入的第{i}条记忆" for i in range(6)]

    def store_one(content: str) -> tuple[int, str]:
        reply = client.post("/v1/memories", json={"user_id": "busy-user", "content": content})
        return reply.status_code, reply.json()["memory_id"]

    def read_health(_: int) -> int:
        return client.get("/v1/health").status_code

    with ThreadPoolExecutor(max_workers=6) as pool:
        stored = list(pool.map(store_one, contents))
        health = list(pool.map(read_health, range(6)))
    assert [status for status, _ in stored] == [201] * 6
    assert health == [200] * 6
    listed = client.get("/v1/users/busy-user/memories", params={"limit": 20}).json()["results"]
    assert sorted(m["content"] for m in listed) == sorted(contents)
    assert {m["memory_id"] for m in listed} == {memory_id for _, memory_id in stored}


def test_memories_survive_a_restart(tmp_path: Path, server: Server) -> None:
    """Runs last: it swaps the process-wide service, and puts the session's back after."""
    session = (get_settings(), get_service())
    headers = {"Authorization": f"Bearer {E2E_KEY}"}
    kind = "serve" if isinstance(server, LocalServer) else "gateway"
    first = start_server(kind, tmp_path / "data")
    try:
        with httpx.Client(base_url=first.url, headers=headers, timeout=120) as http:
            memory_id = store(http, "restart-user", "用户对花生过敏", category="constraint")
    finally:
        first.stop()
        configure(*session)
    second = start_server(kind, tmp_path / "data")
    try:
        with httpx.Client(base_url=second.url, headers=headers, timeout=120) as http:
            got = http.get(f"/v1/memories/{memory_id}")
            assert got.status_code == 200, got.text
            assert got.json()["memory"]["content"] == "用户对花生过敏"
            body = retrieve(http, "restart-user", "花生")
            assert body["results"][0]["memory_id"] == memory_id
    finally:
        second.stop()
        configure(*session)
