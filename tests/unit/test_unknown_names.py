"""A query about someone the user's memories never mention gets no result
(Policy.unknown_names, core/retrieval/subjects.py): the names it finds, when they count as known,
and the gate through the retrieve use case."""

from __future__ import annotations

import dataclasses

import pytest

from hindsight.bootstrap import rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ConfigurationError
from hindsight.core.policy import Policy
from hindsight.core.retrieval.subjects import (
    check_mode,
    mentions,
    people,
    unknown_names,
    written_in,
)
from hindsight.settings import Settings
from tests.fakes import numbered_episode


@pytest.mark.parametrize(
    ("query", "subjects", "others"),
    [
        ("What did Caroline paint?", ("Caroline",), ()),
        ("What is Caroline's identity?", ("Caroline",), ()),
        ("Caroline's hobby?", ("Caroline",), ()),  # the first word counts when possessive
        ("Which musical did Nadia and I catch?", ("Nadia",), ()),
        ("What motivated Caroline to pursue counseling?", (), ("Caroline",)),
        ("Did Jon take a trip to Barcelona?", ("Jon",), ("Barcelona",)),
        # acronyms, titles, months, holidays, family titles and the first word are not names
        ("Where is the HR internship Dr. Seuss liked?", (), ("Seuss",)),
        ("What did I do on Christmas in December?", (), ()),
        ("How did we celebrate Mum's 60th?", (), ()),
        ("Where did I put my keys?", (), ()),
        ("What can't I eat?", (), ()),
        ("王芳上周去了哪里？", (), ("王芳",)),
        ("李志强喜欢吃什么？", (), ("李志强",)),  # jieba splits it: 李 + 志强
        ("周文静喜欢什么运动？", (), ("周文静",)),  # 周 + 文静 (a word: quiet)
        ("林子里有鸟吗？", (), ()),
        ("谢谢你，周末去哪里玩？", (), ()),
        ("帮我们做家务的钟点工是谁？", (), ()),
        ("我一张桌子都没买", (), ()),
        # common words jieba tags as names are not names
        ("去年十一黄金周游客都爱买啥？", (), ()),
        ("我老公现在靠什么挣钱？", (), ()),
    ],
)
def test_names_and_subjects_of_a_query(query, subjects, others):
    assert mentions(query) == (subjects, others)


def test_roles_are_not_people():
    assert people(["user", "Assistant", None, "", "Caroline", "张伟"]) == {"caroline", "张伟"}


def _unknown(query, held_words, speakers):
    return unknown_names(query, lambda w: w.lower() in held_words, lambda: speakers)


def test_a_subject_nobody_mentions_is_unknown_in_a_store_of_named_speakers():
    speakers = ["Jon", "Gina"]
    assert _unknown("What did Caroline paint?", {"jon", "gina"}, speakers) == ["Caroline"]
    # held by a memory: known
    assert _unknown("What did Caroline paint?", {"caroline"}, speakers) == []
    # a speaker of the best hits, or one edit from one: known
    assert _unknown("What did Gina paint?", set(), speakers) == []
    assert _unknown("What was Ginas's reaction?", set(), speakers) == []
    # a store without named speakers (notes in the first person, roles) proves nothing
    assert _unknown("What did Caroline paint?", set(), [None, "user", "assistant"]) == []
    assert _unknown("What did Caroline paint?", set(), []) == []


def test_a_name_out_of_the_subjects_place_counts_only_when_no_speaker_is_named():
    speakers = ["Jon", "Gina"]
    # "Barcelona" is not in the store, but the question is about Jon: ranked as usual
    assert _unknown("Why did Jon go to Barcelona?", {"jon"}, speakers) == []
    # about nobody in the store
    assert _unknown("What motivated Caroline to pursue art?", set(), speakers) == ["Caroline"]
    assert _unknown("王芳上周去了哪里？", set(), ["张伟", "李娜"]) == ["王芳"]
    assert _unknown("王芳和张伟上周去了哪里？", set(), ["张伟", "李娜"]) == []


def test_a_word_like_a_speakers_name_is_not_that_speaker():
    # "time" is one edit from Tim, but only a capitalised word may be a misspelt name
    speakers = ["Tim", "John"]
    assert _unknown("What motivated Caroline at the time?", set(), speakers) == ["Caroline"]
    assert _unknown("What motivated Caroline and Tims?", set(), speakers) == []


def test_a_name_is_held_as_written_not_as_its_stem():
    assert written_in("Tim", numbered_episode(1, "Tim: I read a lot"))
    assert written_in("Tim", numbered_episode(2, "that is Tim's book"))
    assert not written_in("Tim", numbered_episode(3, "I need more time"))  # stem "tim"
    assert written_in("Tim", numbered_episode(4, "I need more time", speaker="Tim"))
    assert written_in("王芳", numbered_episode(5, "我和王芳去了杭州"))
    assert not written_in("Tim", None)


def test_a_query_without_names_reads_nothing():
    def held(word):
        raise AssertionError("no name: nothing to look up")

    assert unknown_names("Where did I put my keys?", held, lambda: ["Jon"]) == []


def test_the_speakers_are_read_only_when_a_name_is_not_held():
    def speakers():
        raise AssertionError("every name is held: no speaker to read")

    assert unknown_names("What did Caroline paint?", lambda w: True, speakers) == []


def test_the_mode_is_checked_and_configurable():
    assert check_mode("off") == "off"
    with pytest.raises(ValueError, match="unknown_names"):
        check_mode("ignore")
    assert Policy().unknown_names == "empty"
    assert Settings.from_env({"HINDSIGHT_UNKNOWN_NAMES": "off"}).unknown_names == "off"
    with pytest.raises(ConfigurationError, match="UNKNOWN_NAMES"):
        Settings.from_env({"HINDSIGHT_UNKNOWN_NAMES": "ignore"})


# --- through the retrieve use case -----------------------------------------------------

TURNS = [  # (session, speaker, content)
    ("s1", "Jon", "Jon: I lost my job at the bank, so I am opening a dance studio"),
    ("s1", "Gina", "Gina: I painted a sunset over the lake last weekend"),
    ("s2", "Jon", "Jon: the studio opens next month in Boston"),
]


@pytest.fixture
def stored(service, principal, clock):
    for session, speaker, text in TURNS:
        command = StoreMemoryCommand(
            user_id="u1", content=text, speaker=speaker, session_id=session
        )
        service.store(principal, command)
        clock.advance(minutes=1)
    return service


def _retrieve(service, principal, query, **fields):
    return service.retrieve(principal, RetrieveCommand(user_id="u1", query=query, **fields))


def test_a_question_about_someone_else_gets_nothing_and_says_why(stored, principal):
    result = _retrieve(stored, principal, "What did Caroline paint?")
    assert result.results == [] and result.unknown_names == ["Caroline"]
    assert not result.has_more and result.next_cursor is None


def test_a_question_about_a_speaker_is_answered(stored, principal):
    result = _retrieve(stored, principal, "What did Gina paint?")
    assert result.unknown_names == []
    assert result.results[0].content.startswith("Gina: I painted")


def test_min_score_zero_or_the_mode_off_ranks_anyway(stored, principal):
    result = _retrieve(stored, principal, "What did Caroline paint?", min_score=0)
    assert result.unknown_names == [] and result.results
    off = rewire(stored, dataclasses.replace(stored.policy, unknown_names="off"))
    result = _retrieve(off, principal, "What did Caroline paint?")
    assert result.unknown_names == [] and result.results


def test_a_store_of_first_person_notes_is_not_gated(service, principal):
    service.store(principal, StoreMemoryCommand(user_id="u1", content="I am allergic to peanuts"))
    result = _retrieve(service, principal, "What is Alice allergic to?")
    assert result.unknown_names == [] and result.results


def test_a_speaker_outside_the_best_hits_is_found_among_the_newest_speakers():
    assert _unknown("What did Gina paint?", set(), ["Jon"]) == ["Gina"]
    found = unknown_names(
        "What did Gina paint?", lambda w: False, lambda: ["Jon"], lambda: ["Gina"]
    )
    assert found == []
    nobody = unknown_names(
        "What did Kim paint?", lambda w: False, lambda: ["Jon"], lambda: ["Gina"]
    )
    assert nobody == ["Kim"]


def test_through_the_use_case_a_speaker_only_in_the_speaker_field_is_known(
    service, principal, clock
):
    # Gina's one turn (the newest) neither names her nor shares a word with the question:
    # the best hits are all Jon's, the newest memories' speakers have her
    for number in range(120):
        content = f"What did I paint? I painted fence number {number} blue"
        service.store(principal, StoreMemoryCommand(user_id="u1", content=content, speaker="Jon"))
        clock.advance(minutes=1)
    service.store(
        principal, StoreMemoryCommand(user_id="u1", content="adopted puppy", speaker="Gina")
    )
    result = _retrieve(service, principal, "What did Gina paint?")
    assert result.unknown_names == [] and result.results
    assert _retrieve(service, principal, "What did Kim paint?").unknown_names == ["Kim"]
