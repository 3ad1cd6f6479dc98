"""An assistant's turns weigh less unless the query addresses the assistant
(Policy.assistant_weight, core/retrieval/speakers.py ``assistant_weight``)."""

from __future__ import annotations

import dataclasses

import pytest

from hindsight.bootstrap import rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ConfigurationError
from hindsight.core.retrieval.speakers import asks_assistant_words, is_assistant
from hindsight.settings import Settings

# the assistant's answer echoes the user's words and matches the query a little better
USER = "My shins ache: the doctor says shin splints"
ASSISTANT = "Shin splints need rest; ease back slowly once shins stop aching"
QUERY = "shin splints"


@pytest.mark.parametrize(
    "speaker",
    [
        "assistant",
        "Assistant",
        "AI",
        "model",
        "support-bot",
        "ChatBot",
        "HelperBot",
        "智能助手",
        "ChatGPT",
        "GPT-4o",
        "gpt4",
        "GitHub Copilot",
        "Gemini 2.5 Pro",
        "Llama-3-8B",
        "通义千问",
        "豆包",
    ],
)
def test_the_assistant_is_told_by_its_speaker(speaker):
    assert is_assistant(speaker)


@pytest.mark.parametrize(
    "speaker",
    [
        None,
        "",
        "user",
        "Caroline",
        "Talbot",
        "Abbot",
        "小明",
        "Claude",
        "Kimi",
        "Egypt",
        "Gptolemy",
    ],
)
def test_people_and_the_user_are_not_the_assistant(speaker):
    assert not is_assistant(speaker)


@pytest.mark.parametrize(
    "query",
    [
        "How often did you say I should take a gel?",
        "How much did you tell me to hold back?",
        "What was your main present idea?",
        "what did the assistant recommend",
        "Can you remind me which book you recommended?",
        "你建议我每天吃多少克？",
        "您推荐的书是哪本",
        "你之前说的那家店在哪",
        "你给我排的作息是几点起床？",
        "What did the AI suggest for dinner?",
        "Which laptop did ChatGPT recommend?",
        "What did GPT-4o say about my essay?",
        "通义千问推荐的餐厅叫什么",
    ],
)
def test_a_query_for_the_assistants_words_asks_for_them(query):
    assert asks_assistant_words(query)


@pytest.mark.parametrize(
    "query",
    [
        "What injuries have I had?",
        "What did the agent say about the house?",
        "Which AI courses did I sign up for?",
        "Did I see a llama at the zoo?",
        "我买的扫地机器人是什么牌子",
        "Can you remind me where I went last March?",
        "Could you tell me what I said about the dog?",
        "Do you remember my sister's name?",
        "What has the dress cost once you add the alterations?",
        "youth hostel in Lisbon",
        "我的饮食偏好",
        "你还记得我去了哪儿吗？",
        "你能告诉我我妹妹叫什么吗",
        "我跟你提过我爱人在哪儿上班吗？",
    ],
)
def test_a_query_that_only_talks_to_the_assistant_does_not(query):
    assert not asks_assistant_words(query)


def _store_both(service, principal):
    for speaker, content in (("user", USER), ("assistant", ASSISTANT)):
        service.store(
            principal,
            StoreMemoryCommand(user_id="u1", content=content, speaker=speaker, session_id="s1"),
        )


def _ranked(service, principal, query):
    result = service.retrieve(principal, RetrieveCommand(user_id="u1", query=query))
    return [(r.speaker, r.why) for r in result.results]


def test_the_users_statement_outranks_the_assistants_echo(service, principal):
    _store_both(service, principal)
    off = rewire(service, dataclasses.replace(service.policy, assistant_weight=1.0))
    assert [s for s, _ in _ranked(off, principal, QUERY)] == ["assistant", "user"]
    ranked = _ranked(service, principal, QUERY)
    assert [s for s, _ in ranked] == ["user", "assistant"]
    user, assistant = ranked[0][1], ranked[1][1]
    assert "assistant_weight" not in user
    assert assistant["assistant_weight"] == service.policy.assistant_weight == 0.8
    # the weight is one factor of the fused score, as every other
    unweighted = dict(_ranked(off, principal, QUERY))["assistant"]
    assert assistant["fused_score"] == pytest.approx(0.8 * unweighted["fused_score"], abs=1e-5)


def test_a_query_for_the_assistants_words_keeps_them_whole(service, principal):
    _store_both(service, principal)
    ranked = _ranked(service, principal, "what did you say about shin splints")
    assert ranked[0][0] == "assistant"
    assert all("assistant_weight" not in why for _, why in ranked)


def test_an_agents_own_note_outside_a_conversation_keeps_its_weight(service, principal):
    service.store(principal, StoreMemoryCommand(user_id="u1", content=ASSISTANT, speaker="agent"))
    ranked = _ranked(service, principal, QUERY)
    assert ranked[0][0] == "agent"
    assert "assistant_weight" not in ranked[0][1]


def test_the_weight_is_configurable_and_checked():
    assert Settings.from_env({"HINDSIGHT_ASSISTANT_WEIGHT": "1"}).assistant_weight == 1.0
    with pytest.raises(ConfigurationError, match=r"HINDSIGHT_ASSISTANT_WEIGHT.*> 0"):
        Settings.from_env({"HINDSIGHT_ASSISTANT_WEIGHT": "0"})
    with pytest.raises(ConfigurationError, match=r"HINDSIGHT_ASSISTANT_WEIGHT.*> 0 and ≤ 1"):
        Settings.from_env({"HINDSIGHT_ASSISTANT_WEIGHT": "1.5"})
