"""What the framework tool shapes share: the three memory tools, their words and answers.

Each integration (LangChain, Pydantic AI) wraps these in its own tool classes; the tools
are bound to one user, never chosen by the model, so a model cannot read or write another
user's memories. Answers are short text the model reads; ``forget`` refuses a memory id of
another user (or another scope) as if it did not exist.
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight_client.client import Hindsight
from hindsight_client.errors import NotFoundError
from hindsight_client.types import DeleteResult, RetrievePage, StoreResult

STORE_NAME = "memory_store"
RETRIEVE_NAME = "memory_retrieve"
FORGET_NAME = "memory_forget"

STORE_DESCRIPTION = (
    "Save something the user told you that will matter in later conversations: facts about "
    "them, preferences, constraints (allergies, budgets, deadlines), plans and events. Save "
    "one self-contained statement per call, in the user's words and language. Do not save "
    "small talk, greetings or what you said yourself."
)
RETRIEVE_DESCRIPTION = (
    "Look up what you remember about the user that matters now: facts, preferences, "
    "constraints and past events, most relevant first, each with its memory id. Ask before "
    "recommending anything the user might have a constraint about (food, travel, dates)."
)
FORGET_DESCRIPTION = (
    "Forget one memory by its id (from memory_retrieve) when the user asks you to forget it "
    "or says it is wrong. Facts that only this memory supported are forgotten with it."
)
CONTENT_HELP = "the statement to remember, self-contained (e.g. 'The user is allergic to peanuts')"
CATEGORY_HELP = "optional label such as constraint, preference, plan, event or profile"
QUERY_HELP = "what you need to know, as a question or keywords (e.g. 'food allergies')"
TOP_K_HELP = "how many memories to return (1-20)"
MEMORY_ID_HELP = "the id of the memory to forget, as memory_retrieve showed it"


@dataclass(frozen=True)
class Who:
    """Whose memories a tool call reads and writes: a user, a session, a scope."""

    user_id: str
    session_id: str | None = None
    scope: str | None = None


@dataclass(frozen=True)
class MemoryToolbox:
    """The three memory operations behind every tool shape, for one client."""

    client: Hindsight
    top_k: int = 5

    def store(self, who: Who, content: str, category: str | None = None) -> StoreResult:
        return self.client.store(
            who.user_id,
            content,
            session_id=who.session_id,
            scope=who.scope,
            category=category or None,
        )

    def retrieve(self, who: Who, query: str, top_k: int | None = None) -> RetrievePage:
        scopes = [who.scope] if who.scope else None
        wanted = max(1, min(20, top_k or self.top_k))
        return self.client.retrieve(who.user_id, query, top_k=wanted, scopes=scopes)

    def forget(self, who: Who, memory_id: str) -> DeleteResult:
        """Delete one of this user's memories; NotFoundError for anyone else's."""
        memory = self.client.get(memory_id)
        if memory.user_id != who.user_id or (who.scope and memory.scope != who.scope):
            raise NotFoundError(
                f"no memory {memory_id} for this user; use an id that memory_retrieve showed",
                404,
            )
        return self.client.delete(memory_id)


def store_text(result: StoreResult) -> str:
    if result.duplicate:
        return f"Already remembered (memory {result.memory_id}); nothing new to save."
    return f"Remembered (memory {result.memory_id})."


def retrieve_text(page: RetrievePage) -> str:
    if not page.results and page.unknown_names:
        return f"No memories mention {', '.join(page.unknown_names)}."
    if not page.results:
        return "No memories about this."
    lines = []
    for number, memory in enumerate(page.results, start=1):
        labels = [memory.kind if memory.kind != "episodic" else "event"]
        if memory.category:
            labels.append(memory.category)
        if memory.confidence:
            labels.append(f"{memory.confidence} confidence")
        when = f", {memory.occurred_at:%Y-%m-%d}" if memory.occurred_at else ""
        lines.append(f"{number}. [{memory.memory_id}] ({', '.join(labels)}{when}) {memory.content}")
    return "\n".join(lines)


def forget_text(result: DeleteResult) -> str:
    text = f"Forgot memory {result.memory_id}."
    if result.deleted_facts:
        text += f" Facts forgotten with it: {', '.join(result.deleted_facts)}."
    return text


__all__ = [
    "FORGET_DESCRIPTION",
    "FORGET_NAME",
    "RETRIEVE_DESCRIPTION",
    "RETRIEVE_NAME",
    "STORE_DESCRIPTION",
    "STORE_NAME",
    "MemoryToolbox",
    "Who",
    "forget_text",
    "retrieve_text",
    "store_text",
]
