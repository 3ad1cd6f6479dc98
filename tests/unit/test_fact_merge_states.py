"""Reflection supersedes a fact when a newer episode states a new value of its attribute
(``core/fact_merge.py``, the evidence of ``states.updated_attributes``), whatever the two
facts' topics; and only then: each case where it must not fire, in both languages."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from hindsight.core.fact_merge import FactMerger
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    ExtractedFact,
    FactCategory,
    FactStatus,
    StoredVector,
)
from hindsight.core.retrieval.state_facts import attributes_named, first_person, restates

T0 = datetime(2026, 1, 10, 9, tzinfo=UTC)
# two statements of one person: related, not the same sentence (states.RELATED, DUPLICATE)
RELATED = (StoredVector("m", np.asarray([1.0, 0.0], np.float32)),
           StoredVector("m", np.asarray([0.85, np.sqrt(1 - 0.85**2)], np.float32)))  # fmt: skip


def episode(memory_id: str, content: str, days: float) -> EpisodicMemory:
    moment = T0 + timedelta(days=days)
    return EpisodicMemory(
        memory_id=memory_id, tenant_id="t1", user_id="u1", content=content,
        occurred_at=moment, created_at=moment, updated_at=moment,
    )  # fmt: skip


class Sources:
    """The store's episodes and vectors, as the reflect use case reads them."""

    def __init__(self, episodes: list[EpisodicMemory]) -> None:
        vectors = dict(zip([e.memory_id for e in episodes], RELATED, strict=False))
        self.known = {e.memory_id: (e, vectors.get(e.memory_id)) for e in episodes}
        self.reads: list[list[str]] = []

    def __call__(self, ids: Sequence[str]) -> dict[str, tuple[EpisodicMemory, StoredVector | None]]:
        self.reads.append(list(ids))
        return {i: self.known[i] for i in ids if i in self.known}


def reflect(
    older: str, newer: str, older_facts: list[str], newer_fact: str, days: float = 90
) -> dict[str, FactStatus]:
    """Merge the older episode's facts, then the newer one's; each fact's status."""
    episodes = [episode("e1", older, 0), episode("e2", newer, days)]
    count = iter(range(100))
    merger = FactMerger(
        "t1", "u1", T0 + timedelta(days=300), [], {}, lambda: f"f{next(count)}", False,
        Sources(episodes),
    )  # fmt: skip
    by_id = {e.memory_id: e for e in episodes}
    facts = [(text, "e1") for text in older_facts] + [(newer_fact, "e2")]
    for n, (text, source) in enumerate(facts):
        # unrelated fact vectors and no topics: only the episodes' evidence links them
        vector = StoredVector("m", np.eye(8, dtype=np.float32)[n])
        fact = ExtractedFact(text, FactCategory.FACT, Confidence.MEDIUM, [source])
        merger.merge("global", fact, vector, by_id, "learned")
    return {f.content: f.status for f in merger.created.values()}


UPDATES = [  # (older episode, newer episode, the older's fact, the newer's fact)
    (
        "My phone is a Galaxy S22.",
        "Got a Xperia 5 for my birthday.",
        "The user's phone is a Galaxy S22.",
        "Got a Xperia 5 for their birthday.",
    ),
    (
        "I support Celtic.",
        "I support Liverpool now.",
        "The user supports Celtic.",
        "The user supports Liverpool now.",
    ),
    (
        "我住在北京。",
        "我搬到上海了，现在住在上海。",
        "用户住在北京。",
        "用户搬到上海了，现在住在上海。",
    ),
]


@pytest.mark.parametrize(("older", "newer", "older_fact", "newer_fact"), UPDATES)
def test_a_newer_episode_with_a_new_value_supersedes_the_older_fact(
    older: str, newer: str, older_fact: str, newer_fact: str
) -> None:
    statuses = reflect(older, newer, [older_fact], newer_fact)
    assert statuses == {older_fact: FactStatus.SUPERSEDED, newer_fact: FactStatus.PENDING}


@pytest.mark.parametrize(
    ("older", "newer", "older_fact", "newer_fact"),
    [
        # consistent: the same car, no new value
        (
            "I drive a Toyota Corolla.",
            "My Toyota needs new tyres before winter.",
            "The user drives a Toyota Corolla.",
            "The user's Toyota needs new tyres before winter.",
        ),
        ("我住在杭州。", "杭州最近一直下雨。", "用户住在杭州。", "杭州最近一直下雨。"),
        # another person's state
        (
            "I live in Berlin.",
            "My sister lives in Rome.",
            "The user lives in Berlin.",
            "The user's sister lives in Rome.",
        ),
        ("我住在北京。", "我姐姐住在上海。", "用户住在北京。", "用户的姐姐住在上海。"),
        # unrelated
        (
            "I live in Berlin.",
            "I moved my desk closer to the window.",
            "The user lives in Berlin.",
            "The user moved their desk closer to the window.",
        ),
        ("我在学法语。", "我换了一张升降桌。", "用户在学法语。", "用户换了一张升降桌。"),
    ],
)
def test_no_new_value_of_the_same_persons_attribute_supersedes_nothing(
    older: str, newer: str, older_fact: str, newer_fact: str
) -> None:
    statuses = reflect(older, newer, [older_fact], newer_fact)
    assert set(statuses.values()) == {FactStatus.PENDING}


@pytest.mark.parametrize(
    ("older", "newer", "facts", "kept", "newer_fact"),
    [
        (
            "I live in Berlin and I play the violin.",
            "I moved to Munich last month, I live there now.",
            ["The user lives in Berlin.", "The user plays the violin."],
            "The user plays the violin.",
            "The user moved to Munich last month.",
        ),
        (
            "我住在北京，我会拉小提琴。",
            "我搬到上海了，现在住在上海。",
            ["用户住在北京。", "用户会拉小提琴。"],
            "用户会拉小提琴。",
            "用户搬到上海了，现在住在上海。",
        ),
    ],
)
def test_only_the_fact_of_the_changed_attribute_is_superseded(
    older: str, newer: str, facts: list[str], kept: str, newer_fact: str
) -> None:
    statuses = reflect(older, newer, facts, newer_fact)
    assert statuses[facts[0]] == FactStatus.SUPERSEDED
    assert statuses[kept] == FactStatus.PENDING


@pytest.mark.parametrize(("older", "newer", "older_fact", "newer_fact"), UPDATES)
def test_two_statements_within_the_hour_elaborate_one_state(
    older: str, newer: str, older_fact: str, newer_fact: str
) -> None:
    statuses = reflect(older, newer, [older_fact], newer_fact, days=10 / 1440)
    assert set(statuses.values()) == {FactStatus.PENDING}


def test_a_new_fact_that_names_no_attribute_reads_no_episode() -> None:
    episodes = [episode("e1", "I live in Berlin.", 0), episode("e2", "Lovely day.", 90)]
    sources = Sources(episodes)
    merger = FactMerger("t1", "u1", T0, [], {}, lambda: "f", False, sources)
    fact = ExtractedFact("The user had a lovely day.", FactCategory.FACT, Confidence.LOW, ["e2"])
    merger.merge("global", fact, RELATED[0], {"e2": episodes[1]}, "learned")
    assert sources.reads == []


def test_each_episode_is_read_once_a_run_and_a_deleted_one_changes_nothing() -> None:
    older = episode("e1", "My phone is a Galaxy S22.", 0)
    newer = episode("e2", "Got a Xperia 5 for my birthday.", 90)
    sources = Sources([newer])  # the older episode was deleted meanwhile
    count = iter(range(10))
    merger = FactMerger("t1", "u1", T0, [], {}, lambda: f"f{next(count)}", False, sources)
    by_id = {"e1": older, "e2": newer}
    for n, (text, source) in enumerate(
        [
            ("The user's phone is a Galaxy S22.", "e1"),
            ("Got a Xperia 5 for their birthday.", "e2"),
            ("The user's new phone is a Xperia 5.", "e2"),
        ]
    ):
        vector = StoredVector("m", np.eye(4, dtype=np.float32)[n])
        fact = ExtractedFact(text, FactCategory.FACT, Confidence.MEDIUM, [source])
        merger.merge("global", fact, vector, by_id, "learned")
    assert {f.status for f in merger.created.values()} == {FactStatus.PENDING}
    read = [i for ids in sources.reads for i in ids]
    assert sorted(read) == ["e1", "e2"]


@pytest.mark.parametrize(
    ("fact", "spoken"),
    [
        ("The user supports Celtic.", "I support Celtic."),
        ("The user now lives in Leeds.", "I now live in Leeds."),
        ("The user's partner is Sam.", "my partner is Sam."),
        ("The user goes to the gym with their sister.", "I go to the gym with my sister."),
        ("The user studies at Fudan.", "I study at Fudan."),
        ("用户的对象是子涵。", "我的对象是子涵。"),
    ],
)
def test_a_fact_is_read_as_the_user_would_say_it(fact: str, spoken: str) -> None:
    assert first_person(fact) == spoken


def test_a_fact_names_its_attribute_in_the_third_person_and_a_name_alone_names_none() -> None:
    assert attributes_named("The user supports Celtic.", ["team"]) == {"team"}
    assert attributes_named("用户住在杭州。", ["residence", "phone"]) == {"residence"}
    assert not attributes_named("The user visited Berlin.", ["phone"])
    assert not attributes_named("The user likes Celtic music.", ["team"])


@pytest.mark.parametrize(
    ("older", "newer", "same"),
    [
        (
            "The user works at Stark Logistics as a software engineer.",
            "The user loves their job at Stark Logistics, the projects keep getting better.",
            True,
        ),
        ("用户在华为上班。", "用户现在在华为上班，快五年了。", True),
        ("用户这两年都是无麸质饮食。", "用户周日备好一周的餐，无麸质饮食坚持起来很轻松。", True),
        # a new value of the same kind, an end, a past, a negation: a change, or unsure
        ("The user lives in Beijing.", "The user moved from Beijing to Shanghai.", False),
        ("用户住在北京。", "用户搬到上海了，现在住在上海。", False),
        ("The user is vegetarian.", "The user is no longer vegetarian.", False),
        ("The user lives in Shanghai.", "The user used to live in Shanghai.", False),
        ("用户住在北京。", "用户以前住在北京。", False),
        ("用户吃素。", "用户现在什么都吃，不吃素了。", False),
        ("The user drinks tea.", "The user switched from tea to coffee.", False),
        ("The user likes the office.", "The user likes the new office.", False),  # no value
    ],
)
def test_a_state_said_again_with_its_value_is_no_contradiction(
    older: str, newer: str, same: bool
) -> None:
    assert restates(older, newer) is same


def test_a_restated_state_of_one_topic_leaves_the_older_fact_live() -> None:
    episodes = {"e1": episode("e1", "I work at Stark Logistics.", 0)}
    episodes["e2"] = episode("e2", "I love my job at Stark Logistics.", 90)
    count = iter(range(10))
    merger = FactMerger("t1", "u1", T0, [], {}, lambda: f"f{next(count)}", False)

    def merge(n: int, text: str, source: str) -> list[FactStatus]:
        vector = StoredVector("m", np.eye(4, dtype=np.float32)[n])
        fact = ExtractedFact(text, FactCategory.FACT, Confidence.MEDIUM, [source], "state:work")
        merger.merge("global", fact, vector, episodes, "learned")
        return [f.status for f in merger.created.values()]

    merge(0, "The user works at Stark Logistics.", "e1")
    said_again = merge(1, "The user loves their job at Stark Logistics.", "e2")
    assert said_again == [FactStatus.PENDING, FactStatus.PENDING]
    changed = merge(2, "The user works at Initech now.", "e2")
    assert changed == [FactStatus.SUPERSEDED, FactStatus.SUPERSEDED, FactStatus.PENDING]


def retire(older: str, newer: str, older_fact: str, days: float = 90) -> FactStatus:
    """The older episode's fact after a run over both episodes in which the newer one gave
    no fact: its status once ``retire_outdated`` has read the run's episodes."""
    episodes = [episode("e1", older, 0), episode("e2", newer, days)]
    merger = FactMerger("t1", "u1", T0, [], {}, lambda: "f1", False, Sources(episodes))
    fact = ExtractedFact(older_fact, FactCategory.FACT, Confidence.MEDIUM, ["e1"])
    merger.merge("global", fact, RELATED[0], {"e1": episodes[0]}, "learned")
    merger.retire_outdated("global", episodes)
    (made,) = merger.created.values()
    assert made.superseded_by in (None, "e2")
    return made.status


SAID_CHANGED = [  # (older episode, newer episode saying it changed, the older's fact)
    UPDATES[1][:3],
    UPDATES[2][:3],
    ("I'm a die-hard Juventus fan.", "I no longer follow Juventus, I'm a Barcelona fan now.",
     "The user is a die-hard Juventus fan."),
    ("我开的是比亚迪秦。", "我把比亚迪秦卖了，现在开本田思域。", "用户开的是比亚迪秦。"),
]  # fmt: skip


@pytest.mark.parametrize(("older", "newer", "older_fact"), SAID_CHANGED)
def test_an_episode_that_gave_no_fact_still_retires_the_fact_it_changes(
    older: str, newer: str, older_fact: str
) -> None:
    assert retire(older, newer, older_fact) == FactStatus.SUPERSEDED


@pytest.mark.parametrize(
    ("older", "newer", "older_fact"),
    [
        ("I drive a Toyota Corolla.", "My Toyota needs new tyres before winter.",
         "The user drives a Toyota Corolla."),
        ("我住在杭州。", "杭州最近一直下雨。", "用户住在杭州。"),
        ("I live in Berlin.", "My sister lives in Rome.", "The user lives in Berlin."),
        ("我住在北京。", "我姐姐住在上海。", "用户住在北京。"),
        ("I live in Berlin.", "I moved my desk closer to the window.",
         "The user lives in Berlin."),
        ("我在学法语。", "我换了一张升降桌。", "用户在学法语。"),
        # the fact does not name the attribute the episode changes
        ("I live in Berlin and I play the violin.", "I moved to Munich last month, I live "
         "there now.", "The user plays the violin."),
        ("我住在北京，我会拉小提琴。", "我搬到上海了，现在住在上海。", "用户会拉小提琴。"),
        # a new value without a word of change: the episode alone is not enough
        ("My phone is a Galaxy S22.", "Got a Xperia 5 for my birthday.",
         "The user's phone is a Galaxy S22."),
        ("I'm doing my degree at Trinity College Dublin.",
         "Camped at Folly Farm with the school, Noah was sick on the pirate ship ride.",
         "The user is doing their degree at Trinity College Dublin."),
        ("我报了一个线上的Excel课程。", "果果在学校跟同学打架，被叫了家长。",
         "用户报了一个线上的Excel课程。"),
    ],
)  # fmt: skip
def test_an_episode_retires_no_fact_it_does_not_update(
    older: str, newer: str, older_fact: str
) -> None:
    assert retire(older, newer, older_fact) == FactStatus.PENDING


@pytest.mark.parametrize(("older", "newer", "older_fact"), SAID_CHANGED)
def test_an_episode_within_the_hour_or_before_the_fact_retires_nothing(
    older: str, newer: str, older_fact: str
) -> None:
    assert retire(older, newer, older_fact, days=10 / 1440) == FactStatus.PENDING
    assert retire(older, newer, older_fact, days=-90) == FactStatus.PENDING


def test_a_fact_said_again_after_the_episode_stays_live() -> None:
    """A move to Shanghai, then the fact of Beijing repeated by a later episode: the
    change is older than the fact's latest source, so it does not retire it."""
    episodes = [
        episode("e1", "我住在北京。", 0),
        episode("e2", "我搬到上海了，现在住在上海。", 90),
        episode("e3", "我住在北京。", 120),
    ]
    merger = FactMerger("t1", "u1", T0, [], {}, lambda: "f1", False, Sources(episodes))
    by_id = {e.memory_id: e for e in episodes}
    for source in ("e1", "e3"):
        fact = ExtractedFact("用户住在北京。", FactCategory.FACT, Confidence.MEDIUM, [source])
        merger.merge("global", fact, RELATED[0], by_id, "learned")
    merger.retire_outdated("global", episodes)
    (made,) = merger.created.values()
    assert made.status == FactStatus.PENDING and made.mention_count == 2


def of_one_topic(
    older: str, newer: str, older_fact: str, newer_fact: str, topic: str
) -> FactStatus:
    """The older fact's status once a newer fact of the same state topic is merged (the
    facts' vectors unrelated, the episodes 90 days apart)."""
    episodes = [episode("e1", older, 0), episode("e2", newer, 90)]
    count = iter(range(10))
    merger = FactMerger("t1", "u1", T0, [], {}, lambda: f"f{next(count)}", False, Sources(episodes))
    by_id = {e.memory_id: e for e in episodes}
    for n, (text, source) in enumerate(((older_fact, "e1"), (newer_fact, "e2"))):
        vector = StoredVector("m", np.eye(4, dtype=np.float32)[n])
        fact = ExtractedFact(text, FactCategory.FACT, Confidence.MEDIUM, [source], topic)
        merger.merge("global", fact, vector, by_id, "learned")
    return merger.created["f0"].status


@pytest.mark.parametrize(
    ("older", "newer", "older_fact", "newer_fact", "topic"),
    [
        # the fact says it: an end, or a change with a new value
        ("My girlfriend is Olivia.", "I'm seeing Sofia now.", "The user's girlfriend is Olivia.",
         "The user is seeing Sofia now.", "state:partner"),
        ("我吃素。", "我不吃素了。", "用户吃素。", "用户不吃素了。", "state:diet"),
        ("我住在北京。", "我现在住在上海了。", "用户住在北京。", "用户现在住在上海了。",
         "state:residence"),
        # only the episodes say it
        ("I live in Berlin.", "Moved to Munich last month, I live there now.",
         "The user lives in Berlin.", "The user lives in Munich.", "state:residence"),
    ],
)  # fmt: skip
def test_a_fact_of_one_state_topic_with_evidence_of_a_new_value_supersedes(
    older: str, newer: str, older_fact: str, newer_fact: str, topic: str
) -> None:
    assert of_one_topic(older, newer, older_fact, newer_fact, topic) == FactStatus.SUPERSEDED


@pytest.mark.parametrize(
    ("older", "newer", "older_fact", "newer_fact", "topic"),
    [
        ("My partner loves board games.", "My partner and I got back from a trip to Rio.",
         "The user's partner loves board games.",
         "The user and their partner got back from a trip to Rio.", "state:partner"),
        ("Take a look at my car, I put a lot of work into it.",
         "Look at how my car looks right now.", "Calvin put a lot of work into their car.",
         "Calvin's car looks great right now.", "person:calvin:state:vehicle"),
        ("我的工作很忙。", "佳佳的妈妈问了一晚上我的工作。", "用户的工作很忙。",
         "佳佳的妈妈问了一晚上用户的工作。", "state:employer"),
        ("桂芬学会了用手机买菜。", "手机里的家族群天天发养生文章。", "桂芬学会了用手机买菜。",
         "手机里的家族群天天发养生文章。", "state:phone"),
    ],
)  # fmt: skip
def test_a_fact_of_one_state_topic_without_evidence_of_a_new_value_supersedes_nothing(
    older: str, newer: str, older_fact: str, newer_fact: str, topic: str
) -> None:
    assert of_one_topic(older, newer, older_fact, newer_fact, topic) == FactStatus.PENDING
