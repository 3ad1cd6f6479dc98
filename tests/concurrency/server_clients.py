"""Client processes for the server races (``test_server_races.py``): one role each.

Run as ``python -m tests.concurrency.server_clients <base url> <role> <json args>``. A
client prints ``ready`` once imported and connected, waits for a line on stdin (so that
every client of a race starts at the same moment), plays its role over HTTP and prints
one JSON line: ``{"result": ..., "errors": [...]}``. An unexpected status is an error,
never an exception, so the test sees every failure of every client.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

WORD = "orchard"  # in every memory the races store


class Client:
    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=120.0)
        self.errors: list[str] = []

    def call(self, method: str, path: str, ok: tuple[int, ...], **kwargs: Any) -> Any:
        reply = self.http.request(method, path, **kwargs)
        if reply.status_code not in ok:
            self.errors.append(f"{method} {path}: {reply.status_code} {reply.text[:300]}")
            return None
        return reply.json()

    def store(self, user_id: str, content: str) -> str | None:
        body = self.call(
            "POST", "/v1/memories", (200, 201), json={"user_id": user_id, "content": content}
        )
        return None if body is None else str(body["memory_id"])

    def batch(self, user_id: str, contents: list[str]) -> list[str]:
        items = [{"content": content} for content in contents]
        body = self.call(
            "POST", "/v1/memories/batch", (200,), json={"user_id": user_id, "items": items}
        )
        return [] if body is None else [str(r["memory_id"]) for r in body["results"]]

    def retrieve(self, user_id: str, query: str, top_k: int = 20) -> list[str]:
        body = self.call(
            "POST",
            "/v1/retrieve",
            (200,),
            json={"user_id": user_id, "query": query, "top_k": top_k},
        )
        return [] if body is None else [str(r["memory_id"]) for r in body["results"]]


def duplicate(client: Client, user_id: str, content: str, times: int) -> list[str | None]:
    named = [client.store(user_id, content) for _ in range(times)]
    return [*named, *client.batch(user_id, [content])]


def store_and_find(client: Client, user_id: str, words: list[str]) -> dict[str, Any]:
    stored, missing = [], []
    for word in words:
        memory_id = client.store(user_id, f"{WORD} note about {word}")
        stored.append(memory_id)
        if memory_id is not None and memory_id not in client.retrieve(user_id, word, 5):
            missing.append(word)
    return {"stored": stored, "missing": missing}


def delete(client: Client, memory_ids: list[str], log: str) -> int:
    with Path(log).open("a", encoding="utf-8") as out:
        for memory_id in memory_ids:
            if client.call("DELETE", f"/v1/memories/{memory_id}", (200,)) is not None:
                out.write(memory_id + "\n")
                out.flush()
    return len(memory_ids)


def read_while_deleting(client: Client, user_id: str, log: str, rounds: int) -> list[str]:
    seen_deleted: list[str] = []
    for _ in range(rounds):
        path = Path(log)
        gone = set(path.read_text(encoding="utf-8").split()) if path.exists() else set()
        seen_deleted += sorted(gone.intersection(client.retrieve(user_id, WORD)))
    return seen_deleted


def batch_store(client: Client, user_id: str, contents: list[str]) -> list[str]:
    return client.batch(user_id, contents)


def single_stores(client: Client, user_id: str, contents: list[str]) -> list[str | None]:
    return [client.store(user_id, content) for content in contents]


def erase(client: Client, user_id: str, pause: float) -> Any:
    time.sleep(pause)
    return client.call("DELETE", f"/v1/users/{user_id}", (200,))


ROLES: dict[str, Callable[..., Any]] = {
    "duplicate": duplicate,
    "store_and_find": store_and_find,
    "delete": delete,
    "read_while_deleting": read_while_deleting,
    "batch_store": batch_store,
    "single_stores": single_stores,
    "erase": erase,
}


def main(base_url: str, role: str, arguments: str) -> None:
    client = Client(base_url)
    client.call("GET", "/v1/health", (200,))  # connected before the race starts
    print("ready", flush=True)
    sys.stdin.readline()
    result = ROLES[role](client, **json.loads(arguments))
    print(json.dumps({"result": result, "errors": client.errors}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
