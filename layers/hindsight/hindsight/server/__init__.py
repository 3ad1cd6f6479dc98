"""``hindsight serve``: the HTTP API as an ASGI application, many requests at once.

``app`` builds the Starlette application: one route per operation of
``hindsight.api.operations``, each calling the operation's route function in
``hindsight.api.routes`` (the same functions the Lambda handlers call) in a worker
thread, plus ``POST /mcp`` through the MCP SDK's streamable HTTP transport (``mcp``).
``runner`` serves it with uvicorn (``LocalServer``, ``serve``) with graceful shutdown;
``startup`` holds what every local server checks before it listens (keyless only on
loopback, one server per data directory); ``logs`` the log format.

The template-driven gateway (``hindsight.gateway``, ``hindsight serve --gateway``)
stays the ``sam local start-api`` stand-in: the real handlers, one event at a time.
"""
