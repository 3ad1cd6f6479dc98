"""The order is the score: over random stores and queries, a result's ``score`` never
rises down a page, nor from one page to the next (cursor paging).

Each store mixes English and Chinese episodes of the user and of an assistant (in a
session or not), spread over months, pairs that state one attribute twice (an older and
a newer state), and approved facts; the queries are drawn from the same words, with and
without a time cue or a "now". Every rule that moves a memory (a fact's boost, a state
updated later, the speaker, the assistant's weight, time) must move its score with it.
"""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ReflectCommand, RetrieveCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from tests.fakes import FixedClock, HashingEmbedder, ScriptedReflector, SequentialIds

PRINCIPAL = Principal(tenant_id="acme")

EPISODES_EN = [
    "I am allergic to peanuts",
    "I went on a business trip to Beijing in March",
    "nice weather today, we walked by the river",
    "I just moved to Lisbon last month",
    "Welcome to Lisbon! You will love the food",
    "my manager Dana asked for the report on Friday",
    "we had ramen downtown, the broth was great",
    "I run every Tuesday and Thursday morning",
    "I started learning the guitar last week",
    "the dentist appointment is next Monday",
]
EPISODES_ZH = [
    "用户对花生过敏",
    "明天要去北京出差",
    "今天天气不错，我们在河边散步",
    "我上个月刚搬到杭州",
    "欢迎来到杭州！这里的菜很好吃",
    "我的经理让我周五交报告",
    "我每周二和周四早上跑步",
    "我最近开始学吉他",
]
# an older and a newer state of one attribute, in each language (worded alike, so that
# the test embedder's vectors are as related as a real model's)
STATE_PAIRS = [
    (
        "I live in Beijing, my home is a flat near the old park",
        "I moved, I live in Shanghai now, my home is a flat near the new park",
    ),
    (
        "I drive a Toyota to work every day, the car is grey",
        "I sold it, I drive a Tesla to work every day now, the car is grey",
    ),
    ("I live in Beijing, near the river.", "I moved last month, I live in Shanghai now."),
    (
        "我住在北京，我的家是老公园旁边的一套公寓",
        "我搬家了，现在住在上海，我的家是新公园旁边的一套公寓",
    ),
    ("我在腾讯上班", "我辞职了，现在在阿里巴巴上班"),
]
# a user's statement and an assistant's answer naming what it said, a minute later
ECHO_PAIRS = [
    ("I just moved to Lisbon last month", "Welcome to Lisbon! Lisbon is lovely in spring."),
    ("I adopted a cat called Miso", "Miso the cat sounds adorable! Cats called Miso rule."),
    ("我上个月刚搬到里斯本", "欢迎来到里斯本！里斯本的春天很美。"),
]
FACTS = [
    ("peanuts", "The user is allergic to peanuts"),
    ("Beijing", "The user went on a business trip to Beijing"),
    ("Lisbon", "The user lives in Lisbon"),
    ("花生", "用户对花生过敏"),
    ("北京", "用户要去北京出差"),
]
QUERIES = [
    "what can't I eat",
    "where does the user live",
    "where do I live now",
    "my home flat in Beijing",
    "Lisbon",
    "the cat Miso",
    "里斯本",
    "我的家 公寓",
    "what car do I drive",
    "where do I work now",
    "who is my manager",
    "what did I do last week",
    "what did you suggest about food",
    "Beijing trip",
    "peanuts",
    "我现在住在哪里",
    "我不能吃什么",
    "我在哪里上班",
    "最近做了什么",
    "北京出差",
    "上个月",
]
SPEAKERS = [None, "user", "assistant", "Dana", "助手"]

episode = st.tuples(
    st.sampled_from(EPISODES_EN + EPISODES_ZH),
    st.sampled_from(SPEAKERS),
    st.sampled_from([None, "s1", "s2"]),
    st.integers(min_value=0, max_value=400),  # days ago
)
store_strategy = st.fixed_dictionaries(
    {
        "episodes": st.lists(episode, min_size=1, max_size=14),
        "pairs": st.lists(
            st.tuples(
                st.sampled_from(STATE_PAIRS),
                st.integers(min_value=60, max_value=300),  # the older, days ago
                st.integers(min_value=1, max_value=50),  # the newer, days ago
            ),
            max_size=3,
        ),
        "echoes": st.lists(
            st.tuples(
                st.sampled_from(ECHO_PAIRS),
                st.sampled_from([None, "s1", "s3"]),
                st.integers(min_value=0, max_value=100),  # days ago
            ),
            max_size=2,
        ),
        "facts": st.lists(st.sampled_from(FACTS), max_size=3, unique=True),
        "confidence": st.sampled_from(["high", "medium", "low"]),
    }
)


def _build(store: dict) -> MemoryService:
    clock, reflector = FixedClock(), ScriptedReflector()
    ports = local_ports(
        InMemoryRecordStore(),
        InMemorySearchIndex(),
        HashingEmbedder(),
        reflector,
        clock=clock,
        ids=SequentialIds(),
    )
    service = assemble(ports, Policy())
    now = clock.now()

    def put(content: str, days: int, minutes: int = 0, **fields: object) -> None:
        when = now - timedelta(days=days) + timedelta(minutes=minutes)
        command = StoreMemoryCommand(user_id="u1", content=content, occurred_at=when, **fields)
        service.store(PRINCIPAL, command)

    for content, speaker, session, days in store["episodes"]:
        put(content, days, speaker=speaker, session_id=session)
    for (older, newer), older_days, newer_days in store["pairs"]:
        put(older, older_days, speaker="user")
        put(newer, newer_days, speaker="user")
    for (statement, echo), session, days in store["echoes"]:
        put(statement, days, -2, speaker="user", session_id=session)
        put(echo, days, -1, speaker="assistant", session_id=session)
    if store["facts"]:
        for trigger, content in store["facts"]:
            reflector.when(trigger, content, confidence=store["confidence"], topic=trigger)
        reflected = service.reflect(PRINCIPAL, ReflectCommand(user_id="u1"))
        for fact in reflected.created:
            service.approve(PRINCIPAL, fact["memory_id"])
    return service


def _all_pages(service: MemoryService, query: str, top_k: int) -> list[list[float]]:
    pages, cursor = [], None
    for _ in range(12):
        command = RetrieveCommand(user_id="u1", query=query, top_k=top_k, cursor=cursor)
        result = service.retrieve(PRINCIPAL, command)
        pages.append([r.score for r in result.results])
        cursor = result.next_cursor
        if cursor is None:
            break
    return pages


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    store=store_strategy,
    queries=st.lists(st.sampled_from(QUERIES), min_size=1, max_size=3),
    top_k=st.integers(min_value=1, max_value=6),
)
def test_scores_never_rise_down_a_page_or_across_pages(
    store: dict, queries: list[str], top_k: int
) -> None:
    service = _build(store)
    for query in queries:
        pages = _all_pages(service, query, top_k)
        scores = [score for page in pages for score in page]
        rises = [(i, a, b) for i, (a, b) in enumerate(pairwise(scores)) if b > a]
        assert not rises, f"{query!r}: the score rises at {rises} in {pages}"
