"""Speakers in ranking: a query that names a speaker, and an assistant's turns.

A question that names a speaker ("How does Avery earn a living?") is about that speaker's
turns. The speaker boost (``Policy.speaker_boost``) rewards every episode of that speaker
(``names_speaker``); the name also counts as a keyword like any word of the query.

An assistant's turns in a conversation (``is_assistant``: a speaker "assistant", "AI",
"HelperBot", "智能助手"; an episode with a session) answer the user in the user's own
words, at length, and hold no fact about the user's life: for a question about the user
they outrank, by their words and their sense, the short turn where the user said it.
``Policy.assistant_weight`` weighs them less unless the query asks for the assistant's
words (``asks_assistant_words``): "How often did you say I should take a gel?", "your
idea", "你建议…", "the assistant"; "Can you remind me where I went?" or "你还记得我去了
哪儿吗？" only talk to it. An agent's own note (no session) keeps its whole weight.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hindsight.core.models import EpisodicMemory, Memory
from hindsight.core.text import tokenize

# a speaker named with one of these words is the assistant (the Chinese ones also count
# inside a longer name, as does a name ending in "Bot")
ASSISTANT_WORDS = frozenset({"assistant", "agent", "ai", "bot", "chatbot", "model", "system"})
ASSISTANT_WORDS_ZH = ("助手", "机器人", "智能体")
# ... or with the name of an assistant product that is no person's name ("ChatGPT",
# "GPT-4o", "Copilot", "通义千问"); "Claude" and "Kimi" are people's names too: not counted
ASSISTANT_PRODUCTS = frozenset(
    {"chatgpt", "copilot", "gemini", "bard", "llama", "mistral", "qwen", "deepseek", "grok"}
)
ASSISTANT_PRODUCTS_ZH = ("通义", "千问", "文心一言", "豆包", "混元")
_GPT = re.compile(r"^gpt[0-9o]*$")  # "gpt", "gpt4", "gpt4o"; "GPT-4" splits to "gpt", "4"
_NAME_TOKENS = re.compile(r"[^a-z0-9\u3400-\u9fff]+")
_BOT_NAME = re.compile(r"[a-z0-9]Bot$")  # "HelperBot"; not "Talbot" or "Abbot"
# what a query asks the assistant to do for it ("can you remind me", "你能告诉我",
# "do you remember", "你还记得"): it talks to the assistant without asking for its words
_REQUEST = re.compile(
    r"\b(?:can|could|would|will|please)\s+you\s+(?:please\s+)?"
    r"(?:remind|tell|help|remember|recall|know|find|list|check|look|show|give)\b"
    r"|\b(?:do|don't)\s+you\s+(?:remember|recall|know)\b"
    r"|请你|你(?:能不能|可不可以|能|可以|还记得|记得|知道)",
    re.IGNORECASE,
)
# a query that asks for the assistant's words: "your" (idea, advice), "you" as the one who
# said, suggested or planned something, the assistant by name or by its product's (not
# those that are common words too: a llama, a bard, the mistral, 机器人 of a robot vacuum)
_ASSISTANT_WORDS = re.compile(
    r"\b(?:your|yours|assistant|chatbot|the\s+ai|the\s+bot)\b"
    r"|\b(?:chatgpt|copilot|gemini|qwen|deepseek|gpt(?:-?[0-9o.]+)?)\b"
    r"|\byou\s+(?:\w+\s+){0,2}?(?:suggest|recommend|say|said|tell|told|think|thought|advise"
    r"|propose|mention|give|gave|came up|come up|wrote|write|plan|pick|picked|chose|choose"
    r"|offer|call|called|explain|estimate|reckon|mean|meant|show|showed|list|set|put together)"
    r"|[你您](?:当时|之前|上次|以前|曾经|那时|那会儿)?"
    r"(?:建议|推荐|说|讲|提到|提议|觉得|认为|给|帮|替|排|定|写|列|算|出的|选|挑|的)"
    r"|助手|通义|千问|文心一言",
    re.IGNORECASE,
)


@lru_cache(maxsize=4_096)
def speaker_terms(speaker: str) -> frozenset[str]:
    """The search terms of a speaker's name."""
    return frozenset(tokenize(speaker))


@lru_cache(maxsize=1_024)
def is_assistant(speaker: str | None) -> bool:
    """Whether the speaker is the assistant ("assistant", "HelperBot", "ChatGPT", "智能助手")."""
    if not speaker:
        return False
    lowered = speaker.strip().lower()
    tokens = _NAME_TOKENS.split(lowered)
    if not (ASSISTANT_WORDS.isdisjoint(tokens) and ASSISTANT_PRODUCTS.isdisjoint(tokens)):
        return True
    if any(_GPT.match(token) for token in tokens) or _BOT_NAME.search(speaker.strip()):
        return True
    return any(word in lowered for word in (*ASSISTANT_WORDS_ZH, *ASSISTANT_PRODUCTS_ZH))


@lru_cache(maxsize=1_024)
def asks_assistant_words(query: str) -> bool:
    """Whether the query asks for what the assistant said ("What did you suggest?", "your
    idea", "你建议"), not only talks to it ("Can you remind me where I went?", "我跟你提过
    …吗？", "once you add the alterations")."""
    return _ASSISTANT_WORDS.search(_REQUEST.sub(" ", query)) is not None


def assistant_weight(memory: Memory, query: str, weight: float) -> float:
    """``weight`` for an assistant's turn of a conversation (an episode with a session)
    when the query does not ask for the assistant's words; 1 otherwise. An agent's note of its
    own (no session: "Booked the table at Luigi's for Friday") is no echo and keeps 1."""
    if weight == 1.0 or not isinstance(memory, EpisodicMemory) or not memory.session_id:
        return 1.0
    if not is_assistant(memory.speaker) or asks_assistant_words(query):
        return 1.0
    return weight


def names_speaker(memory: Memory, query_terms: frozenset[str]) -> bool:
    """Whether every word of the episode's speaker occurs in the query."""
    if not isinstance(memory, EpisodicMemory) or not memory.speaker:
        return False
    words = speaker_terms(memory.speaker)
    return bool(words) and words <= query_terms
