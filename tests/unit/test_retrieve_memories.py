"""Retrieve use case: hybrid relevance, decay, kinds, filters, paging, budget, tenancy."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hindsight.bootstrap import rewire
from hindsight.core.commands import ReflectCommand, RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ForbiddenError, InvalidRequestError
from hindsight.core.models import Principal


def store(service, principal, content, **fields):
    command = StoreMemoryCommand(**{"user_id": "u1", "content": content, **fields})
    return service.store(principal, command).memory_id


def retrieve(service, principal, query, **fields):
    return service.retrieve(
        principal, RetrieveCommand(**{"user_id": "u1", "query": query, **fields})
    )


def contents(result):
    return [r.content for r in result.results]


def test_keyword_match_in_chinese_ranks_first(service, principal):
    for text in ["今天天气不错", "用户对花生过敏", "我喜欢打篮球", "明天要去北京出差"]:
        store(service, principal, text)
    result = retrieve(service, principal, "花生过敏")
    assert contents(result)[0] == "用户对花生过敏"
    top = result.results[0]
    assert top.why["keyword"] == 1.0
    assert {"similarity", "relevance", "decay", "age_days", "score"} <= set(top.why)


def test_english_query_finds_english_memory(service, principal):
    for text in ["The user is allergic to peanuts", "I love hiking on weekends", "nice weather"]:
        store(service, principal, text)
    assert contents(retrieve(service, principal, "hiking weekends"))[0] == (
        "I love hiking on weekends"
    )


def test_other_tenants_never_see_the_memory(service, principal, other_tenant):
    store(service, principal, "secret plan for the launch")
    assert retrieve(service, other_tenant, "secret plan").results == []
    assert retrieve(service, principal, "secret plan").results


def test_expired_memories_are_never_returned(service, principal, clock):
    store(service, principal, "parking spot is B12", ttl_seconds=3600)
    assert retrieve(service, principal, "parking spot").results
    clock.advance(hours=2)
    assert retrieve(service, principal, "parking spot").results == []


def test_older_memories_decay(service, principal, clock):
    store(
        service, principal, "coffee order oat latte", occurred_at=clock.now() - timedelta(days=30)
    )
    store(
        service, principal, "coffee order flat white", occurred_at=clock.now() - timedelta(days=1)
    )
    result = retrieve(service, principal, "coffee order")
    assert contents(result)[0] == "coffee order flat white"
    old = result.results[1]
    assert old.why["decay"] == pytest.approx(0.95**30, rel=1e-3)
    flat = retrieve(service, principal, "coffee order", time_decay=1.0)
    assert all(r.why["decay"] == 1.0 for r in flat.results)


def test_upcoming_event_does_not_decay(service, principal, clock):
    store(
        service,
        principal,
        "I have a dentist appointment next month",
        occurred_at=clock.now() - timedelta(days=10),
    )
    result = retrieve(service, principal, "dentist appointment")
    assert result.results[0].why["decay"] == 1.0


def approved_fact(service, principal, reflector, trigger, content, **rule):
    reflector.when(trigger, content, **rule)
    reflected = service.reflect(principal, ReflectCommand(user_id="u1"))
    fact_id = next(f["memory_id"] for f in reflected.created if f["content"] == content)
    service.approve(principal, fact_id)
    return fact_id


def test_semantic_facts_rank_ahead_and_pending_ones_are_hidden(service, principal, reflector):
    store(service, principal, "I told you I am allergic to peanuts")
    reflector.when(
        "peanuts",
        "The user is allergic to peanuts",
        category="constraint",
        confidence="high",
        topic="allergy:peanut",
    )
    reflected = service.reflect(principal, ReflectCommand(user_id="u1"))
    fact_id = reflected.created[0]["memory_id"]
    assert [r.kind for r in retrieve(service, principal, "allergic to peanuts").results] == [
        "episodic"
    ]
    with_pending = retrieve(service, principal, "allergic to peanuts", statuses=["pending"])
    assert with_pending.results[0].memory_id == fact_id
    service.approve(principal, fact_id)
    result = retrieve(service, principal, "allergic to peanuts")
    assert result.results[0].memory_id == fact_id
    assert result.results[0].kind == "semantic"
    assert result.results[0].source_memory_ids
    assert result.results[0].why["kind_boost"] > 1.0


def test_low_confidence_facts_are_down_weighted(service, principal, reflector):
    store(service, principal, "maybe I like jazz music")
    store(service, principal, "I like jazz music concerts")
    reflector.when("maybe", "The user might like jazz music", confidence="low", topic="a")
    reflector.when("concerts", "The user likes jazz music", confidence="high", topic="b")
    reflected = service.reflect(principal, ReflectCommand(user_id="u1"))
    for fact in reflected.created:
        service.approve(principal, fact["memory_id"])
    result = retrieve(service, principal, "jazz music", kinds=["semantic"])
    weights = {r.content: r.why["confidence_weight"] for r in result.results}
    assert weights["The user might like jazz music"] < weights["The user likes jazz music"]


def test_filters(service, principal, clock):
    store(
        service, principal, "mood note happy day", category="mood", emotion="happy", session_id="s1"
    )
    store(service, principal, "mood note sad day", category="mood", emotion="sad", session_id="s2")
    store(
        service,
        principal,
        "work note deadline",
        category="work",
        occurred_at=clock.now() - timedelta(days=20),
    )
    assert contents(retrieve(service, principal, "note", emotions=["sad"])) == ["mood note sad day"]
    assert set(contents(retrieve(service, principal, "note", categories=["mood"]))) == {
        "mood note happy day",
        "mood note sad day",
    }
    assert contents(retrieve(service, principal, "note", session_id="s1")) == [
        "mood note happy day"
    ]
    recent = retrieve(service, principal, "note", since=clock.now() - timedelta(days=5))
    assert "work note deadline" not in contents(recent)
    older = retrieve(service, principal, "note", until=clock.now() - timedelta(days=5))
    assert contents(older) == ["work note deadline"]
    assert retrieve(service, principal, "note", kinds=["semantic"]).results == []


def test_scopes_are_enforced(service):
    admin = Principal(tenant_id="acme")
    store(service, admin, "calendar thing", scope="calendar")
    store(service, admin, "email thing", scope="email")
    store(service, admin, "global thing")
    agent = Principal(
        tenant_id="acme",
        read_scopes=frozenset({"calendar"}),
        write_scopes=frozenset({"calendar"}),
        default_scope="calendar",
    )
    seen = set(contents(retrieve(service, agent, "thing")))
    assert seen == {"calendar thing", "global thing"}
    with pytest.raises(ForbiddenError, match="email"):
        retrieve(service, agent, "thing", scopes=["email"])
    assert contents(retrieve(service, admin, "thing", scopes=["email"])) == ["email thing"]


def test_min_similarity_drops_weak_matches(service, principal):
    store(service, principal, "peanut allergy")
    store(service, principal, "zzzz qqqq")
    result = retrieve(service, principal, "peanut allergy", min_similarity=0.5)
    assert contents(result) == ["peanut allergy"]
    assert all(r.why["similarity"] >= 0.5 for r in result.results)


def test_paging_walks_all_results_once(service, principal):
    for i in range(25):
        store(service, principal, f"travel note number {i}")
    seen, cursor, pages = [], None, 0
    while True:
        page = retrieve(service, principal, "travel note", top_k=10, cursor=cursor)
        seen += [r.memory_id for r in page.results]
        pages += 1
        if not page.has_more:
            assert page.next_cursor is None
            break
        cursor = page.next_cursor
    assert pages == 3
    assert len(seen) == len(set(seen)) == 25


def test_cursor_of_another_query_or_garbage_is_refused(service, principal):
    for i in range(12):
        store(service, principal, f"travel note number {i}")
    page = retrieve(service, principal, "travel note", top_k=5)
    with pytest.raises(InvalidRequestError, match="different query"):
        retrieve(service, principal, "other words", cursor=page.next_cursor)
    with pytest.raises(InvalidRequestError, match="cursor is invalid"):
        retrieve(service, principal, "travel note", cursor="not-a-cursor!!")


def test_top_k_is_capped_at_20():
    with pytest.raises(ValueError):
        RetrieveCommand(user_id="u1", query="x", top_k=21)


class SlowEmbedder:
    """Delegates to a real embedder but makes every query take the whole budget."""

    def __init__(self, inner, clock, seconds):
        self.inner, self.clock, self.seconds = inner, clock, seconds

    model_name = property(lambda self: self.inner.model_name)
    dimension = property(lambda self: self.inner.dimension)
    window_tokens = property(lambda self: self.inner.window_tokens)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def embed_documents(self, texts):
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        self.clock.advance(seconds=self.seconds)
        return self.inner.embed_query(text)


def test_time_budget_returns_partial_results(service, principal, clock):
    store(service, principal, "budget keyword match")
    service = rewire(service, embedder=SlowEmbedder(service.ports.embedder, clock, seconds=10))
    result = retrieve(service, principal, "budget keyword")
    assert result.partial is True
    assert contents(result) == ["budget keyword match"]


def test_query_time_cue_boosts_matching_memories(service, principal, clock):
    # equally similar memories: only the time cue tells them apart
    store(
        service, principal, "went to the gym with Sam", occurred_at=clock.now() - timedelta(days=40)
    )
    store(
        service, principal, "went to the gym with Max", occurred_at=clock.now() - timedelta(days=6)
    )
    result = retrieve(service, principal, "gym last week", time_decay=1.0)
    assert result.query_time is not None
    assert result.results[0].content == "went to the gym with Max"
    assert result.results[0].why["time_boost"] > 1.0


@pytest.mark.parametrize(
    "query",
    [
        "去年{month}月去北京做什么了",  # last year's month, not all last year or this month
        "what did I do in Beijing around Christmas last year",
        "去年春节在北京做什么了",  # the lunar new year of last year
    ],
)
def test_a_month_or_holiday_of_a_named_year_boosts_that_time(service, principal, clock, query):
    from hindsight.core.temporal import parse_query_time

    now = clock.now()
    query = query.format(month=now.month)
    found = parse_query_time(query, now)
    assert found is not None and found.start.year == now.year - 1
    store(service, principal, "在北京看了展览 the Beijing exhibition", occurred_at=found.start)
    store(service, principal, "在北京看了展览 the Beijing exhibition again", occurred_at=now)
    result = retrieve(service, principal, query, time_decay=1.0)
    assert result.results[0].content == "在北京看了展览 the Beijing exhibition"
    assert result.results[0].why["time_boost"] > 1.0


def test_as_of_hides_memories_from_after_that_time(service, principal, clock):
    store(service, principal, "first note about tea", occurred_at=clock.now() - timedelta(days=10))
    store(service, principal, "second note about tea")
    result = retrieve(service, principal, "note about tea", as_of=clock.now() - timedelta(days=5))
    assert contents(result) == ["first note about tea"]


def test_relevant_facts_rank_ahead_of_more_similar_episodes(service, principal, reflector):
    for text in ["tea with milk", "coffee black"]:
        store(service, principal, text)
    approved_fact(
        service,
        principal,
        reflector,
        "milk",
        "Likes tea with milk",
        confidence="low",
        topic="preference:tea",
    )
    result = retrieve(service, principal, "tea with milk")
    assert result.results[0].why["relevance"] >= 0.5
    assert result.results[0].kind == "semantic"
    assert result.results[0].score < result.results[1].score  # ahead by tier, not by score


def test_recency_floor_keeps_old_relevant_memories_in_play(service, principal, clock):
    store(
        service,
        principal,
        "passport renewal appointment",
        occurred_at=clock.now() - timedelta(days=300),
    )
    result = retrieve(service, principal, "passport renewal")
    why = result.results[0].why
    floor = service.policy.decay_floor
    assert why["decay"] == pytest.approx(0.95**300, abs=1e-4)
    assert why["recency"] == pytest.approx(floor + (1 - floor) * 0.95**300, abs=1e-4)
    assert why["fused_score"] >= floor * why["relevance"] - 1e-6


def test_session_pooling_lifts_turns_of_the_session_that_matched(service, principal):
    store(service, principal, "we planned the trip to Kyoto", session_id="trip")
    store(service, principal, "booked the ryokan for three nights", session_id="trip")
    store(service, principal, "booked the dentist for three nights", session_id="other")
    result = retrieve(service, principal, "Kyoto trip", time_decay=1.0)
    by_content = {r.content: r.why for r in result.results}
    ryokan = by_content["booked the ryokan for three nights"]
    dentist = by_content["booked the dentist for three nights"]
    assert ryokan["session_relevance"] > dentist["session_relevance"]
    assert ryokan["relevance"] > dentist["relevance"]
    pooling = service.policy.session_pooling
    expected = (1 - pooling) * ryokan["own_relevance"] + pooling * ryokan["session_relevance"]
    assert ryokan["relevance"] == pytest.approx(expected, abs=1e-3)


def test_turns_of_the_speaker_the_query_names_are_boosted(service, principal):
    store(service, principal, "I painted a sunrise over the lake", speaker="Caroline")
    store(service, principal, "I painted a sunrise over the sea", speaker="Melanie")
    result = retrieve(service, principal, "What did Melanie paint?")
    assert [r.speaker for r in result.results][:2] == ["Melanie", "Caroline"]
    assert result.results[0].why["speaker_boost"] == service.policy.speaker_boost > 1.0
    assert "speaker_boost" not in result.results[1].why
    result = retrieve(service, principal, "What did Caroline paint?")
    assert result.results[0].speaker == "Caroline"
