"""The MCP server: Hindsight's memory as tools for any MCP-capable agent.

``server`` defines the tools once (names, descriptions, input schemas, results);
``http`` serves them over streamable HTTP (stateless, JSON responses) for the
Lambda function and the local gateway; ``hindsight mcp`` serves them over stdio.
"""

from hindsight.mcp.server import TOOL_NAMES, build_server, run_stdio

__all__ = ["TOOL_NAMES", "build_server", "run_stdio"]
