"""A Pydantic AI model played by the scripted waiter (``story.waiter``): offline, no key.

``FunctionModel`` (Pydantic AI's own) calls ``waiter_model`` with the conversation and the
agent's instructions and tools; it answers with a tool call or text.
"""

from __future__ import annotations

import uuid

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from story import waiter


def waiter_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    user_text, results = "", []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                user_text, results = part.content, []  # a new turn starts
            elif isinstance(part, ToolReturnPart):
                results.append(part.model_response_str())
    tools = [tool.name for tool in info.function_tools]
    turn = waiter(user_text, info.instructions or "", tools, results)
    if turn.tool:
        call = ToolCallPart(turn.tool, dict(turn.args), tool_call_id=f"call_{uuid.uuid4().hex[:8]}")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(turn.text)])


def scripted_waiter() -> FunctionModel:
    return FunctionModel(waiter_model, model_name="scripted-waiter")
