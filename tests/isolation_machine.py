"""Isolation properties (issue #15): a hypothesis state machine shared by the backends.

Two tenants, two users (the same names in both) and six API keys of different scopes call
the route functions (``api.routes.call_route``, authenticated from the headers as
``hindsight serve`` and the Lambda handlers do) in random interleavings; a model keeps
who owns what. No answer may hold a memory (by id, or by the tag ``zq`` + five digits
every content carries, so a leak is found in any field, facts included) of another
tenant, another user or a scope the key may not read; refusals are 404 across tenants,
403 for a scope. After erase-user, ``leftovers`` (one per backend) inspects every store
directly: nothing of that user may remain, and the other tenant's same-named user keeps
everything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from hindsight.api.auth import authenticate
from hindsight.api.http import to_json
from hindsight.api.route_calls import RouteRequest
from hindsight.api.routes import call_route, error_status
from hindsight.core.service import MemoryService
from hindsight.settings import Settings

TENANTS = ("acme", "globex")
USERS = ("user-ana", "user-bo")  # the same names in both tenants
SCOPES = ("global", "calendar", "work")
SESSIONS = ("s-1", "s-2")
OWNERS = tuple((tenant, user) for tenant in TENANTS for user in USERS)
TAG = re.compile(r"zq\d{5}")


@dataclass(frozen=True)
class KeySpec:
    name: str
    tenant: str
    read: tuple[str, ...] = ("*",)
    write: tuple[str, ...] = ("*",)
    default_scope: str = "global"

    @property
    def secret(self) -> str:
        return f"key-{self.name}-0123456789"

    def can_read(self, scope: str) -> bool:
        return scope == "global" or "*" in self.read or scope in self.read

    def can_write(self, scope: str) -> bool:
        return "*" in self.write or scope in self.write


KEYS = (
    KeySpec("acme-admin", "acme"),
    KeySpec("acme-calendar", "acme", ("calendar",), ("calendar",), "calendar"),
    KeySpec("acme-work", "acme", ("work",), ("work", "global"), "work"),
    KeySpec("acme-reader", "acme", ("*",), ()),
    KeySpec("globex-admin", "globex"),
    KeySpec("globex-calendar", "globex", ("calendar",), ("calendar",), "calendar"),
)
ADMINS = {spec.tenant: spec for spec in KEYS if spec.name.endswith("-admin")}
ERASERS = tuple(spec for spec in KEYS if "*" in spec.write)  # erase-user needs every scope

# sentences the offline reflector turns into facts, each keeping the tag
TEMPLATES = (
    "I am allergic to {tag} peanuts",
    "I prefer {tag} tea over coffee",
    "My favourite city is {tag}",
    "I love {tag} music",
    "用户喜欢{tag}咖啡",
    "Meeting about {tag} budget next week",
)


def key_config() -> str:
    """``HINDSIGHT_API_KEYS`` for every key of ``KEYS``."""
    entries = [
        {
            "key": spec.secret,
            "tenant_id": spec.tenant,
            "key_id": spec.name,
            "read_scopes": list(spec.read),
            "write_scopes": list(spec.write),
            "default_scope": spec.default_scope,
        }
        for spec in KEYS
    ]
    return json.dumps({"keys": entries})


Owner = tuple[str, str, str]  # tenant, user, scope


@dataclass
class Held:
    """One memory the model knows: whose it is and in which scope."""

    tenant: str
    user: str
    scope: str
    kind: str  # "episodic" | "semantic"


@dataclass
class Model:
    """What exists, who owns it, and which tags must never be seen again."""

    memories: dict[str, Held] = field(default_factory=dict)
    tag_owners: dict[str, set[Owner]] = field(default_factory=dict)
    gone_tags: set[str] = field(default_factory=set)  # tags of erased users only

    def add(self, memory_id: str, held: Held, content: str) -> None:
        self.memories[memory_id] = held
        for tag in TAG.findall(content):
            self.tag_owners.setdefault(tag, set()).add((held.tenant, held.user, held.scope))
            self.gone_tags.discard(tag)

    def of_user(self, tenant: str, user: str, kind: str | None = None) -> set[str]:
        return {
            memory_id
            for memory_id, held in self.memories.items()
            if (held.tenant, held.user) == (tenant, user) and kind in (None, held.kind)
        }

    def of_any(self, kind: str) -> set[str]:
        return {memory_id for memory_id, held in self.memories.items() if held.kind == kind}

    def erase(self, tenant: str, user: str) -> set[str]:
        """Forget the user; the tags only they held (must never be seen again)."""
        for memory_id in self.of_user(tenant, user):
            del self.memories[memory_id]
        only_theirs: set[str] = set()
        for tag, owners in self.tag_owners.items():
            kept = {o for o in owners if (o[0], o[1]) != (tenant, user)}
            if owners and not kept:
                only_theirs.add(tag)
            owners.intersection_update(kept)
        self.gone_tags |= only_theirs
        return only_theirs


class IsolationMachine(RuleBasedStateMachine):
    """Drives the route functions; subclasses build the backend and inspect its stores.

    A subclass sets ``build`` (returns the settings and the service of a fresh, empty
    backend), ``leftovers(tenant, user, erased_ids, tags)`` (what of that user any store
    still holds, as readable lines) and ``close``.
    """

    examples: ClassVar[int] = 0
    steps: ClassVar[int] = 0
    erasures: ClassVar[int] = 0
    calls: ClassVar[dict[str, int]] = {}

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.settings, self.service = self.build()
        self.model = Model()
        self.contents: dict[str, str] = {}
        self.next_tag = 0

    # --- what a backend provides -----------------------------------------------------
    def build(self) -> tuple[Settings, MemoryService]:
        raise NotImplementedError

    def leftovers(self, tenant: str, user: str, erased_ids: set[str], tags: set[str]) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def teardown(self) -> None:
        """Every user of every tenant is erased (and the stores inspected) at the end of
        every example, so each example checks erase-user on whatever state it reached."""
        try:
            for tenant, user in OWNERS:
                self.erase_user(ADMINS[tenant], user)
        finally:
            self.close()

    # --- calling the API as an entry point does --------------------------------------
    def call(
        self,
        operation_id: str,
        spec: KeySpec,
        *,
        body: Any = None,
        query: Mapping[str, str] | None = None,
        path: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, Any]:
        type(self).steps += 1
        type(self).calls[operation_id] = type(self).calls.get(operation_id, 0) + 1
        request = RouteRequest(
            {
                "Authorization": f"Bearer {spec.secret}",
                "Content-Type": "application/json",
                **(headers or {}),
            },
            b"" if body is None else json.dumps(body, ensure_ascii=False).encode(),
            dict(query or {}),
            dict(path or {}),
        )
        try:
            answer = call_route(
                operation_id,
                request,
                lambda: authenticate(request.headers, None, self.settings),
                lambda: self.service,
            )
        except Exception as error:
            status, message = error_status(error)
            if status >= 500:
                raise
            return status, {"status": "error", "message": message}
        if isinstance(answer.body, str):
            return answer.status, answer.body
        return answer.status, json.loads(to_json(answer.body))

    # --- checking an answer against the model ----------------------------------------
    def check_answer(self, spec: KeySpec, body: Any, user: str | None) -> None:
        """No memory, fact or tag the key may not see, whatever field it hides in."""
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
        for tag in set(TAG.findall(text)):
            assert tag not in self.model.gone_tags, f"{tag} of an erased user in {text[:400]}"
            owners = self.model.tag_owners.get(tag, set())
            assert any(self._visible(spec, user, owner) for owner in owners), (
                f"{spec.name} (user {user}) was shown {tag}, owned by {sorted(owners)}: "
                f"{text[:400]}"
            )
        for item in _memories_in(body):
            self._check_memory(spec, user, item)

    @staticmethod
    def _visible(spec: KeySpec, user: str | None, owner: Owner) -> bool:
        tenant, owner_user, scope = owner
        return tenant == spec.tenant and user in (None, owner_user) and spec.can_read(scope)

    def _check_memory(self, spec: KeySpec, user: str | None, item: Mapping[str, Any]) -> None:
        memory_id = str(item["memory_id"])
        scope = item.get("scope")
        if scope is not None:
            assert spec.can_read(str(scope)), f"{spec.name} was shown scope {scope}: {item}"
        if user is not None and item.get("user_id") is not None:
            assert item["user_id"] == user, f"asked about {user}, shown {item}"
        held = self.model.memories.get(memory_id)
        if held is not None:
            assert held.tenant == spec.tenant, f"{spec.name} was shown {held}: {item}"
            assert user in (None, held.user), f"asked about {user}, shown {held}: {item}"

    def expect(self, status: int, allowed: bool, body: Any) -> None:
        assert status in ((200, 201) if allowed else (403,)), (status, body)

    # --- choosing ----------------------------------------------------------------------
    def new_content(self, template: int) -> str:
        self.next_tag += 1
        tag = f"zq{self.next_tag + 10_000 * (type(self).examples % 9):05d}"
        return TEMPLATES[template % len(TEMPLATES)].format(tag=tag)

    def pick(self, ids: Iterable[str], index: int) -> str | None:
        ordered = sorted(ids)
        return ordered[index % len(ordered)] if ordered else None

    def any_tag(self, index: int) -> str:
        tags = sorted(self.model.tag_owners) or ["zq99999"]
        return tags[index % len(tags)]

    # --- rules: writes ------------------------------------------------------------------
    @initialize(
        scopes=st.lists(st.sampled_from(SCOPES), min_size=3, max_size=3),
        template=st.integers(0, 50),
    )
    def seed(self, scopes: list[str], template: int) -> None:
        """Every user of both tenants starts with memories, so that every rule (an erase
        above all) meets data."""
        for tenant, user in OWNERS:
            items = [
                {
                    "content": self.new_content(template + n),
                    "scope": scope,
                    "session_id": SESSIONS[0],
                }
                for n, scope in enumerate(scopes)
            ]
            status, answer = self.call(
                "store_batch", ADMINS[tenant], body={"user_id": user, "items": items}
            )
            assert status == 200, answer
            for item, outcome in zip(items, answer["results"], strict=True):
                self._stored(ADMINS[tenant], user, item["scope"], item["content"], outcome)

    @rule(
        spec=st.sampled_from(KEYS),
        user=st.sampled_from(USERS),
        scope=st.sampled_from((None, *SCOPES)),
        template=st.integers(0, 50),
        session=st.sampled_from(SESSIONS),
        idempotent=st.booleans(),
    )
    def store(
        self,
        spec: KeySpec,
        user: str,
        scope: str | None,
        template: int,
        session: str,
        idempotent: bool,
    ) -> None:
        content = self.new_content(template)
        body: dict[str, Any] = {"user_id": user, "content": content, "session_id": session}
        if scope is not None:
            body["scope"] = scope
        headers = {"Idempotency-Key": f"idem-{self.next_tag:05d}"} if idempotent else {}
        status, answer = self.call("store_memory", spec, body=body, headers=headers)
        target = scope or spec.default_scope
        self.expect(status, spec.can_write(target), answer)
        if status in (200, 201):
            self._stored(spec, user, target, content, answer)

    @rule(spec=st.sampled_from(KEYS), user=st.sampled_from(USERS), index=st.integers(0, 10**6))
    def store_copy(self, spec: KeySpec, user: str, index: int) -> None:
        """The exact content of a memory of any tenant: dedup must never answer with
        another tenant's (or user's) memory id."""
        memory_id = self.pick(self.model.of_any("episodic"), index)
        if memory_id is None:
            return
        held = self.model.memories[memory_id]
        content = self.contents[memory_id]
        body = {"user_id": user, "content": content, "scope": held.scope}
        status, answer = self.call("store_memory", spec, body=body)
        self.expect(status, spec.can_write(held.scope), answer)
        if status in (200, 201):
            self._stored(spec, user, held.scope, content, answer)

    def _stored(
        self, spec: KeySpec, user: str, scope: str, content: str, outcome: Mapping[str, Any]
    ) -> None:
        memory_id = str(outcome["memory_id"])
        known = self.model.memories.get(memory_id)
        if outcome["status"] == "skipped":
            assert known is not None, f"a duplicate of a memory the model lacks: {outcome}"
            assert (known.tenant, known.user) == (spec.tenant, user), (
                f"dedup answered {spec.tenant}/{user} with {known}: {outcome}"
            )
            return
        assert known is None, f"a new memory reused id {memory_id} of {known}"
        self.model.add(memory_id, Held(spec.tenant, user, scope, "episodic"), content)
        self.contents[memory_id] = content

    @rule(
        spec=st.sampled_from(KEYS),
        user=st.sampled_from(USERS),
        scopes=st.lists(st.sampled_from((None, *SCOPES)), min_size=1, max_size=3),
        template=st.integers(0, 50),
    )
    def store_batch(
        self, spec: KeySpec, user: str, scopes: list[str | None], template: int
    ) -> None:
        items = []
        for offset, scope in enumerate(scopes):
            item: dict[str, Any] = {"content": self.new_content(template + offset)}
            if scope is not None:
                item["scope"] = scope
            items.append(item)
        status, answer = self.call("store_batch", spec, body={"user_id": user, "items": items})
        targets = [scope or spec.default_scope for scope in scopes]
        self.expect(status, all(spec.can_write(t) for t in targets), answer)
        if status == 200:
            for item, target, outcome in zip(items, targets, answer["results"], strict=True):
                self._stored(spec, user, target, item["content"], outcome)

    @rule(
        spec=st.sampled_from(KEYS),
        user=st.sampled_from(USERS),
        scope=st.sampled_from((None, *SCOPES)),
        template=st.integers(0, 50),
    )
    def store_document(self, spec: KeySpec, user: str, scope: str | None, template: int) -> None:
        """A document long enough to be chunked (and, on AWS, kept in S3)."""
        content = self.new_content(template)
        paragraph = f"{content}. Notes on the quarterly plan, owners and dates follow here."
        text = "# Notes\n\n" + "\n\n".join([paragraph] * 40)
        body: dict[str, Any] = {"user_id": user, "file_name": f"{content[-7:]}.md", "text": text}
        if scope is not None:
            body["scope"] = scope
        status, answer = self.call("store_document", spec, body=body)
        target = scope or spec.default_scope
        self.expect(status, spec.can_write(target), answer)
        if status in (200, 201):
            memory_id = str(answer["memory_id"])
            self.model.add(memory_id, Held(spec.tenant, user, target, "episodic"), content)
            self.contents[memory_id] = text

    # --- rules: reads --------------------------------------------------------------------
    @rule(
        spec=st.sampled_from(KEYS),
        user=st.sampled_from(USERS),
        index=st.integers(0, 10**6),
        scopes=st.sampled_from((None, ("calendar",), ("work",), ("global", "work"))),
        facts=st.booleans(),
    )
    def retrieve(
        self, spec: KeySpec, user: str, index: int, scopes: tuple[str, ...] | None, facts: bool
    ) -> None:
        """Asking for a tag of any tenant's memory: the likeliest way to pull a leak."""
        tag = self.any_tag(index)
        body: dict[str, Any] = {"user_id": user, "query": f"{tag} music tea", "top_k": 20}
        if scopes is not None:
            body["scopes"] = list(scopes)
        if facts:
            body["statuses"] = ["pending", "approved", "rejected", "superseded"]
        status, answer = self.call("retrieve_memories", spec, body=body)
        self.expect(status, all(spec.can_read(s) for s in scopes or ()), answer)
        self.check_answer(spec, answer, user)

    @rule(
        spec=st.sampled_from(KEYS),
        user=st.sampled_from(USERS),
        scope=st.sampled_from((None, *SCOPES)),
    )
    def list_memories(self, spec: KeySpec, user: str, scope: str | None) -> None:
        query = {"limit": "50", **({"scope": scope} if scope else {})}
        status, answer = self.call("list_memories", spec, query=query, path={"user_id": user})
        self.expect(status, scope is None or spec.can_read(scope), answer)
        self.check_answer(spec, answer, user)
        if status != 200 or answer["has_more"]:
            return
        # and nothing the key may read is missing (the checks above are not vacuous)
        listed = {item["memory_id"] for item in answer["results"]}
        expected = {
            memory_id
            for memory_id in self.model.of_user(spec.tenant, user, "episodic")
            if spec.can_read(self.model.memories[memory_id].scope)
            and scope in (None, self.model.memories[memory_id].scope)
        }
        assert expected <= listed, f"{spec.name} misses {sorted(expected - listed)} of {user}"

    @rule(spec=st.sampled_from(KEYS), index=st.integers(0, 10**6))
    def get_memory(self, spec: KeySpec, index: int) -> None:
        memory_id = self.pick(self.model.memories, index)
        if memory_id is None:
            return
        held = self.model.memories[memory_id]
        status, answer = self.call("get_memory", spec, path={"memory_id": memory_id})
        if held.tenant != spec.tenant:
            assert status == 404, (status, answer)
        else:
            self.expect(status, spec.can_read(held.scope), answer)
        self.check_answer(spec, answer, None)

    @rule(spec=st.sampled_from(KEYS), user=st.sampled_from(USERS), query=st.booleans())
    def context(self, spec: KeySpec, user: str, query: bool) -> None:
        body: dict[str, Any] = {"user_id": user, "session_id": SESSIONS[0]}
        if query:
            body["query"] = "music tea city peanuts"
        status, answer = self.call("build_context", spec, body=body)
        self.expect(status, True, answer)
        self.check_answer(spec, answer, user)

    @rule(spec=st.sampled_from(KEYS), user=st.sampled_from(USERS))
    def export(self, spec: KeySpec, user: str) -> None:
        status, answer = self.call("export_user", spec, path={"user_id": user})
        assert status in (200, 404), (status, answer)
        self.check_answer(spec, answer, user)
        if status == 200:
            for line in answer.splitlines():
                self.check_answer(spec, json.loads(line), user)

    @rule(spec=st.sampled_from(KEYS), user=st.sampled_from(USERS))
    def reflection_status(self, spec: KeySpec, user: str) -> None:
        status, answer = self.call("reflection_status", spec, path={"user_id": user})
        self.expect(status, True, answer)
        readable = [
            memory_id
            for memory_id in self.model.of_user(spec.tenant, user, "episodic")
            if spec.can_read(self.model.memories[memory_id].scope)
        ]
        assert answer["episodes_waiting"] <= len(readable), (spec.name, user, answer)

    # --- rules: forget, reflect, review ---------------------------------------------------
    @rule(spec=st.sampled_from(KEYS), index=st.integers(0, 10**6))
    def delete_memory(self, spec: KeySpec, index: int) -> None:
        memory_id = self.pick(self.model.memories, index)
        if memory_id is None:
            return
        held = self.model.memories[memory_id]
        status, answer = self.call("delete_memory", spec, path={"memory_id": memory_id})
        if held.tenant != spec.tenant:
            assert status == 404, (status, answer)
        else:
            self.expect(status, spec.can_read(held.scope) and spec.can_write(held.scope), answer)
        self.check_answer(spec, answer, None)
        if status == 200:
            for gone in (memory_id, *answer["deleted_facts"]):
                self.model.memories.pop(gone, None)

    @rule(spec=st.sampled_from(KEYS), user=st.sampled_from(USERS))
    def reflect(self, spec: KeySpec, user: str) -> None:
        status, answer = self.call("reflect", spec, body={"user_id": user})
        assert status in (200, 403), (status, answer)
        if status == 403:  # new episodes, none in a scope the key may read
            assert "*" not in spec.read, answer
            return
        for fact in answer["created"]:
            held = Held(spec.tenant, user, str(fact["scope"]), "semantic")
            assert spec.can_read(held.scope), (spec.name, fact)
            self.model.add(str(fact["memory_id"]), held, str(fact["content"]))
        for fact in answer["updated"]:
            held = self.model.memories.get(str(fact["memory_id"]))
            assert held is not None and held.tenant == spec.tenant, (spec.name, fact)
            self.model.add(str(fact["memory_id"]), held, str(fact["content"]))
        self.check_answer(spec, answer, user)

    @rule(spec=st.sampled_from(KEYS), index=st.integers(0, 10**6), approve=st.booleans())
    def review(self, spec: KeySpec, index: int, approve: bool) -> None:
        fact_id = self.pick(self.model.of_any("semantic"), index)
        if fact_id is None:
            return
        held = self.model.memories[fact_id]
        operation = "approve_fact" if approve else "reject_fact"
        status, answer = self.call(operation, spec, path={"memory_id": fact_id})
        if held.tenant != spec.tenant:
            assert status == 404, (status, answer)
        elif not (spec.can_read(held.scope) and spec.can_write(held.scope)):
            assert status == 403, (status, answer)
        else:  # 409: superseded since
            assert status in (200, 409), (status, answer)
        self.check_answer(spec, answer, None)

    # --- rules: erase-user -------------------------------------------------------------------
    @rule(
        spec=st.sampled_from(tuple(s for s in KEYS if s not in ERASERS)),
        user=st.sampled_from(USERS),
    )
    def erase_user_refused(self, spec: KeySpec, user: str) -> None:
        """A key that may not write every scope may not erase (403), and nothing goes."""
        self.erase_user(spec, user)

    @rule(spec=st.sampled_from(ERASERS), user=st.sampled_from(USERS))
    def erase_user(self, spec: KeySpec, user: str) -> None:
        before = {t_u: self.model.of_user(*t_u, "episodic") for t_u in OWNERS}
        status, answer = self.call("erase_user", spec, path={"user_id": user})
        self.expect(status, spec in ERASERS, answer)
        if status != 200:
            self.assert_all_listed(before)
            return
        type(self).erasures += 1
        self.flush_hits()
        erased = self.model.of_user(spec.tenant, user)
        tags = self.model.erase(spec.tenant, user)
        found = self.leftovers(spec.tenant, user, erased, tags)
        assert not found, f"erase of {spec.tenant}/{user} left: " + "; ".join(found[:20])
        status, listed = self.call(
            "list_memories", spec, query={"limit": "10"}, path={"user_id": user}
        )
        assert status == 200 and listed["results"] == [], listed
        self.assert_all_listed({k: v for k, v in before.items() if k != (spec.tenant, user)})

    def flush_hits(self) -> None:
        """Retrieval's pending hit counts go to the store now: a count of an erased memory
        must not bring its record back."""
        hits = self.service.use_cases.retrieve.hits
        if hits is not None:
            hits.flush()
            assert hits.pending() == 0

    def assert_all_listed(self, expected: Mapping[tuple[str, str], set[str]]) -> None:
        """Every user's memories the model holds are still there (a refused or another
        user's erase deleted nothing)."""
        for (tenant, user), ids in expected.items():
            live = ids & set(self.model.memories)
            if not live:
                continue
            status, answer = self.call(
                "list_memories", ADMINS[tenant], query={"limit": "50"}, path={"user_id": user}
            )
            assert status == 200, answer
            listed = {item["memory_id"] for item in answer["results"]}
            assert live <= listed or answer["has_more"], (tenant, user, sorted(live - listed))


def _memories_in(body: Any) -> Iterable[Mapping[str, Any]]:
    """Every object in an answer that is a memory (has a ``memory_id``)."""
    if isinstance(body, Mapping):
        if "memory_id" in body and ("scope" in body or "user_id" in body):
            yield body
        for value in body.values():
            yield from _memories_in(value)
    elif isinstance(body, list):
        yield from (memory for value in body for memory in _memories_in(value))
