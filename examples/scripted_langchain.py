"""A LangChain chat model played by the scripted waiter (``story.waiter``): offline, no key.

It is a real ``BaseChatModel``: agents bind tools to it, and it answers with an
``AIMessage`` that either calls one of them or speaks.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import Field
from story import waiter


class ScriptedWaiter(BaseChatModel):
    """Plays ``story.waiter`` on the conversation it is given."""

    tool_names: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-waiter"

    def bind_tools(self, tools: Sequence[Any], **_: Any) -> Runnable[Any, AIMessage]:
        names = [t.name if isinstance(t, BaseTool) else getattr(t, "__name__", "") for t in tools]
        return self.model_copy(update={"tool_names": names})

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **_: Any,
    ) -> ChatResult:
        turn_start = max(
            (i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0
        )
        user_text = messages[turn_start].text if messages else ""
        shown = " ".join(m.text for m in messages if isinstance(m, SystemMessage))
        results = [m.text for m in messages[turn_start:] if isinstance(m, ToolMessage)]
        turn = waiter(user_text, shown, self.tool_names, results)
        if turn.tool:
            call = {"name": turn.tool, "args": turn.args, "id": f"call_{uuid.uuid4().hex[:8]}"}
            message = AIMessage(content="", tool_calls=[call])
        else:
            message = AIMessage(content=turn.text)
        return ChatResult(generations=[ChatGeneration(message=message)])
