"""The MCP server: Hindsight's memory as tools for any MCP-capable agent.

``tool_schemas`` defines the tools once (names, descriptions, input schemas);
``tools`` runs them against the memory service; ``results`` shapes their answers and
maps failures to error results; ``server`` builds the SDK server and serves it over
stdio (``hindsight mcp``); ``http`` serves it over streamable HTTP (stateless, JSON
responses) for the Lambda function and the local gateway.
"""

from hindsight.mcp.server import TOOL_NAMES, build_server, run_stdio

__all__ = ["TOOL_NAMES", "build_server", "run_stdio"]
