"""Store use case: validation, dedup, expiry, scopes, batches, nothing half-written."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from pydantic import ValidationError

from hindsight.bootstrap import rewire
from hindsight.core.commands import (
    ListMemoriesCommand,
    StoreBatchCommand,
    StoreMemoryCommand,
)
from hindsight.core.errors import ForbiddenError, InvalidRequestError, UnavailableError
from hindsight.core.models import Principal


def store(service, principal, **fields):
    return service.store(principal, StoreMemoryCommand(**{"user_id": "u1", **fields}))


def listed(service, principal, user_id="u1"):
    return service.list_memories(principal, ListMemoriesCommand(user_id=user_id)).results


def test_store_returns_id_and_keeps_every_field(service, principal, clock):
    outcome = store(
        service,
        principal,
        content="用户对花生过敏",
        session_id="s1",
        category="constraint",
        emotion="neutral",
        speaker="user",
        participants=["user", "agent"],
        agent_action="noted the allergy",
        outcome="confirmed",
        metadata={"source": "chat"},
    )
    assert outcome.status == "success"
    memory = service.get_memory(principal, outcome.memory_id)["memory"]
    assert memory["content"] == "用户对花生过敏"
    assert memory["category"] == "constraint"
    assert memory["scope"] == "global"
    assert memory["session_id"] == "s1"
    assert memory["agent_action"] == "noted the allergy"
    assert memory["metadata"] == {"source": "chat"}
    assert memory["occurred_at"].startswith(clock.now().date().isoformat())


def test_time_expressions_are_resolved_against_occurred_at(service, principal, clock):
    outcome = store(service, principal, content="我下周要去北京出差")
    memory = service.ports.records.get("acme", outcome.memory_id)
    assert memory.event_time, "下周 should resolve to a time range"
    start = memory.event_time[0].start
    assert start > clock.now()
    assert start - clock.now() < timedelta(days=8)


def test_same_content_within_window_is_skipped_with_existing_id(service, principal, clock):
    first = store(service, principal, content="I am allergic to peanuts")
    clock.advance(minutes=30)
    second = store(service, principal, content="  i am ALLERGIC to peanuts ")
    assert second.status == "skipped"
    assert second.reason == "duplicate"
    assert second.memory_id == first.memory_id
    assert len(listed(service, principal)) == 1


def test_same_content_after_window_is_stored_again(service, principal, clock):
    first = store(service, principal, content="I am allergic to peanuts")
    clock.advance(hours=2)
    second = store(service, principal, content="I am allergic to peanuts")
    assert second.status == "success"
    assert second.memory_id != first.memory_id


def test_dedup_is_per_user_and_scope(service, principal):
    a = store(service, principal, content="same words")
    b = store(service, principal, content="same words", user_id="u2")
    c = store(service, principal, content="same words", scope="calendar")
    assert {a.status, b.status, c.status} == {"success"}


def test_ttl_seconds_sets_expiry(service, principal, clock):
    outcome = store(service, principal, content="meeting at 3pm", ttl_seconds=3600)
    memory = service.ports.records.get("acme", outcome.memory_id)
    assert memory.expires_at == clock.now() + timedelta(hours=1)


def test_past_expiry_is_rejected_and_nothing_stored(service, principal, clock):
    with pytest.raises(InvalidRequestError, match="expires_at"):
        store(service, principal, content="x", expires_at=clock.now() - timedelta(minutes=1))
    assert listed(service, principal) == []


def test_future_occurred_at_is_rejected(service, principal, clock):
    with pytest.raises(InvalidRequestError, match="occurred_at"):
        store(service, principal, content="x", occurred_at=clock.now() + timedelta(days=3))


def test_imported_history_keeps_its_time(service, principal, clock):
    when = clock.now() - timedelta(days=400)
    outcome = store(service, principal, content="we met in Lisbon", occurred_at=when)
    assert service.ports.records.get("acme", outcome.memory_id).occurred_at == when


def test_writing_a_scope_the_key_may_not_write_is_forbidden(service):
    agent = Principal(
        tenant_id="acme", write_scopes=frozenset({"calendar"}), default_scope="calendar"
    )
    assert store(service, agent, content="ok").status == "success"
    with pytest.raises(ForbiddenError, match="email"):
        store(service, agent, content="not ok", scope="email")
    reader = Principal(tenant_id="acme")
    assert [m["scope"] for m in listed(service, reader)] == ["calendar"]


@pytest.mark.parametrize(
    "fields, fragment",
    [
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": "x" * 5_000_001}, "content"),
        ({"content": "ok", "user_id": "bad id with spaces"}, "user_id"),
        ({"content": "ok", "ttl_seconds": 10, "expires_at": "2030-01-01T00:00:00Z"}, "ttl"),
        ({"content": "ok", "metadata": {"k": "v" * 20000}}, "metadata"),
        ({"content": "ok", "unknown_field": 1}, "unknown_field"),
        ({"content": "ok", "ttl_seconds": -5}, "ttl_seconds"),
    ],
)
def test_invalid_commands_are_refused_before_anything_is_written(fields, fragment):
    with pytest.raises(ValidationError) as error:
        StoreMemoryCommand(**{"user_id": "u1", **fields})
    assert fragment in str(error.value)


def test_batch_stores_each_and_skips_duplicates_inside_the_batch(service, principal):
    outcomes = service.store_batch(
        principal,
        StoreBatchCommand(
            user_id="u1",
            items=[{"content": "likes tea"}, {"content": "likes coffee"}, {"content": "likes tea"}],
        ),
    )
    assert [o.status for o in outcomes] == ["success", "success", "skipped"]
    assert outcomes[2].memory_id == outcomes[0].memory_id
    assert len(listed(service, principal)) == 2


def test_batch_with_another_users_item_is_refused():
    with pytest.raises(ValidationError, match="differs"):
        StoreBatchCommand(user_id="u1", items=[{"content": "a", "user_id": "u2"}])


def test_batch_over_100_items_is_refused():
    with pytest.raises(ValidationError):
        StoreBatchCommand(user_id="u1", items=[{"content": f"m{i}"} for i in range(101)])


class FailingIndex:
    """Wraps an index and fails every upsert, as an unreachable index would."""

    def __init__(self, inner):
        self.inner = inner

    def upsert(self, documents):
        raise UnavailableError("index down")

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_index_failure_undoes_the_write(service, principal):
    failing = rewire(service, index=FailingIndex(service.ports.index))
    with pytest.raises(UnavailableError):
        failing.store_batch(
            principal, StoreBatchCommand(user_id="u1", items=[{"content": "a"}, {"content": "b"}])
        )
    assert listed(service, principal) == []
    # and the dedup markers went with the records: the same content can be stored later
    assert store(service, principal, content="a").status == "success"


def test_a_reply_is_searched_with_the_turn_before_it_in_its_session(service, principal, clock):
    from hindsight.core.commands import BatchItem, RetrieveCommand

    service.store_batch(
        principal,
        StoreBatchCommand(
            user_id="u1",
            items=[
                BatchItem(content="Do you keep any pets at home?", session_id="s1", speaker="Ann"),
                BatchItem(content="Yes, a grey cat called Pixel.", session_id="s1", speaker="Bo"),
                BatchItem(content="Lovely weather today.", session_id="s2", speaker="Ann"),
                BatchItem(content="And a goldfish.", session_id="s1", speaker="Bo"),
            ],
        ),
    )
    clock.advance(minutes=1)
    store(service, principal, content="She sleeps all day?", session_id="s1", speaker="Ann")
    store(service, principal, content="Also for work.", session_id="s1", scope="work", speaker="Bo")
    store(service, principal, content="Booked the vet.", session_id="s1")

    memories = {m.content: m for m, _ in service.ports.records.iter_all() if m.kind == "episodic"}
    assert memories["Do you keep any pets at home?"].context is None  # first of s1
    assert memories["Yes, a grey cat called Pixel."].context == "Do you keep any pets at home?"
    assert memories["Lovely weather today."].context is None  # another session
    assert memories["And a goldfish."].context is None  # its speaker goes on: not a reply
    # a single store finds the newest stored turn of its session
    assert memories["She sleeps all day?"].context == "And a goldfish."
    assert memories["Also for work."].context is None  # sessions do not cross scopes
    assert memories["Booked the vet."].context is None  # no speaker: a note, not a reply

    # the reply is found by the question's words, and its content is returned unchanged
    result = service.retrieve(principal, RetrieveCommand(user_id="u1", query="pets"))
    by_content = {r.content: r for r in result.results}
    assert by_content["Yes, a grey cat called Pixel."].why["keyword"] > 0
    assert "context" not in by_content["Yes, a grey cat called Pixel."].model_dump()


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("all", ["Where to?", "Lisbon.", "For a week."]), ("off", [None, None, None])],
)
def test_session_context_all_or_off(service, principal, mode, expected):
    from hindsight.core.commands import BatchItem

    chosen = rewire(service, policy=dataclasses.replace(service.policy, session_context=mode))
    items = [
        BatchItem(content="Where to?", session_id="s1"),
        BatchItem(content="Lisbon.", session_id="s1", speaker="Bo"),
        BatchItem(content="For a week.", session_id="s1", speaker="Bo"),
        BatchItem(content="Nice!", session_id="s1", speaker="Ann"),
    ]
    chosen.store_batch(principal, StoreBatchCommand(user_id="u1", items=items))
    memories = {m.content: m for m, _ in service.ports.records.iter_all() if m.kind == "episodic"}
    assert [memories[c].context for c in ("Lisbon.", "For a week.", "Nice!")] == expected


@pytest.mark.parametrize(("limit", "searched_with_it"), [(128, False), (0, True), (400, True)])
def test_a_reply_to_a_long_answer_is_searched_by_itself(
    service, principal, limit, searched_with_it
):
    # an assistant's long answer (or a pasted document) is not a remark the reply depends
    # on: as context it would outweigh the reply, so past context_tokens the reply is alone
    from hindsight.core.commands import BatchItem

    answer = "Here are some ideas for a budget wedding. " + "Think about the venue first. " * 40
    chosen = rewire(service, policy=dataclasses.replace(service.policy, context_tokens=limit))
    items = [
        BatchItem(content="Any tips for the wedding?", session_id="s1", speaker="user"),
        BatchItem(content=answer, session_id="s1", speaker="assistant"),
        BatchItem(content="My sister Hannah is a bridesmaid.", session_id="s1", speaker="user"),
    ]
    chosen.store_batch(principal, StoreBatchCommand(user_id="u1", items=items))
    memories = {m.content: m for m, _ in service.ports.records.iter_all() if m.kind == "episodic"}
    assert service.ports.embedder.count_tokens(answer) > 128
    # the short question is still the answer's context
    assert memories[answer].context == "Any tips for the wedding?"
    reply = memories["My sister Hannah is a bridesmaid."]
    assert (reply.context == answer[:600]) is searched_with_it
    assert (reply.context is None) is not searched_with_it


class ListCountingRecords:
    """The record store, counting ``list`` calls (how the turn before is read)."""

    def __init__(self, inner):
        self.inner = inner
        self.listed = 0

    def list(self, *args, **kwargs):
        self.listed += 1
        return self.inner.list(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_memory_without_a_speaker_does_not_read_the_turn_before(service, principal):
    records = ListCountingRecords(service.ports.records)
    counted = rewire(service, records=records)
    store(counted, principal, content="Do you keep any pets?", session_id="s1", speaker="Ann")
    records.listed = 0
    store(counted, principal, content="Booked the vet for Friday.", session_id="s1")
    assert records.listed == 0  # a note cannot be a reply: nothing to look up
    store(counted, principal, content="Which vet?", session_id="s1", speaker="Ann")
    store(counted, principal, content="The one on Elm Street.", session_id="s1", speaker="bo")
    assert records.listed == 2
    memories = {m.content: m for m, _ in service.ports.records.iter_all()}
    assert memories["Which vet?"].context is None  # the turn before it has no speaker
    assert memories["The one on Elm Street."].context == "Which vet?"  # Ann, then bo
