"""An OpenAI Agents SDK model played by the scripted waiter (``story.waiter``): offline, no key.

``WaiterModel`` is a custom ``agents.Model`` (the SDK's extension point for other providers):
on each call it reads the run's input items (the user's message, the results of the tools
called since), the agent's instructions and the tools it has, and answers with a function call
or a message, built with the SDK's own ``agents.testing`` item helpers.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from agents import Model, ModelResponse, Usage
from agents.testing import assistant_message, function_call
from story import waiter


def _turn(items: str | list[Any]) -> tuple[str, list[str]]:
    """The newest user message, and the outputs of the tools called after it."""
    if isinstance(items, str):
        return items, []
    user_text, results = "", []
    for item in items:
        entry = item if isinstance(item, Mapping) else getattr(item, "model_dump", dict)()
        if entry.get("role") == "user":
            content = entry.get("content")
            user_text = content if isinstance(content, str) else str(content)
            results = []  # a new turn starts
        elif entry.get("type") == "function_call_output":
            results.append(str(entry.get("output")))
    return user_text, results


class WaiterModel(Model):
    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        user_text, results = _turn(input)
        names = [tool.name for tool in tools]
        turn = waiter(user_text, system_instructions or "", names, results)
        if turn.tool:
            call_id = f"call_{uuid.uuid4().hex[:8]}"
            output = [function_call(turn.tool, dict(turn.args), call_id=call_id)]
        else:
            output = [assistant_message(turn.text)]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted waiter answers Runner.run, not run_streamed")
