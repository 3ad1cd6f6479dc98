"""The peanut-allergy story every example tells, and the scripted waiter that plays the model.

Monday the user mentions an allergy and the agent saves it; Tuesday, in a new conversation,
the user asks for a dinner suggestion and the agent must remember. The waiter is a tiny
rule-based stand-in for a chat model (no network, no API key): it saves what the user
states about allergies, looks things up before recommending food when it has a lookup tool
and nothing in front of it mentions an allergy, and answers from whatever it was shown
(system prompt, instructions, tool results). If memory did not reach it, it recommends the
kung pao chicken, which is how the examples fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MONDAY = "Hi! Just so you know, I am allergic to peanuts."
TUESDAY = "What should I order for dinner tonight? I'm thinking kung pao chicken."
STORE_TOOLS = ("memory_store", "remember")
RETRIEVE_TOOLS = ("memory_retrieve", "recall")
LOOKUP_QUERY = "food allergies and dietary restrictions"
SAFE_ANSWER = (
    "Better skip the kung pao chicken: it is made with peanuts, and you told me you are "
    "allergic to them. The steamed sea bass with ginger is a safe choice."
)
UNSAFE_ANSWER = "Go for the kung pao chicken, it's the house favourite!"


@dataclass(frozen=True)
class Turn:
    """What the model decides: call a tool (``tool`` with ``args``) or say ``text``."""

    text: str = ""
    tool: str | None = None
    args: dict[str, str] = field(default_factory=dict)


def remembered(text: str) -> bool:
    return "peanut" in text.lower() or "花生" in text


def statement(user_text: str) -> str:
    """What a model would save: the user's words as a self-contained statement."""
    start = user_text.lower().index("allergic")
    return f"The user is {user_text[start:].rstrip('.!')}."


def waiter(user_text: str, shown: str, tools: list[str], tool_results: list[str]) -> Turn:
    """The next move, given the user's message, what the model was shown (system prompt,
    instructions), the tools it has and the results of the tools it called this turn."""
    store = next((t for t in STORE_TOOLS if t in tools), None)
    retrieve = next((t for t in RETRIEVE_TOOLS if t in tools), None)
    if "allergic" in user_text.lower():
        if store and not tool_results:
            return Turn(
                tool=store, args={"content": statement(user_text), "category": "constraint"}
            )
        return Turn(text="Noted, I will remember that.")
    everything = " ".join([shown, *tool_results])
    if retrieve and not tool_results and not remembered(everything):
        return Turn(tool=retrieve, args={"query": LOOKUP_QUERY})
    return Turn(text=SAFE_ANSWER if remembered(everything) else UNSAFE_ANSWER)
