"""``GET /`` on ``hindsight serve``: a small page linking the API documentation, the
explorer, health and the MCP endpoint, so a person who opens the server's address in a
browser lands somewhere. (A path that matches no route is answered with the nearest
real one: ``api.nearest_route``.)"""

from __future__ import annotations

import html

HOME_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "frame-ancestors 'none'",
}
_LINKS = (
    ("/docs", "API documentation", "every route, its request and its answers"),
    ("/explorer?user_id=test_user", "Memory explorer", "browse, search and review memories"),
    ("/v1/health", "Health", "status (with a key: the model and the index size)"),
    ("/v1/openapi.json", "OpenAPI document", "for client generators"),
)


def home_page(mcp_url: str) -> str:
    """The front page: what this server is and where to go."""
    items = "\n".join(
        f'  <li><a href="{html.escape(href)}">{html.escape(title)}</a> — {html.escape(what)}</li>'
        for href, title, what in _LINKS
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hindsight</title>
<style>body{{font:16px/1.5 system-ui,"Noto Sans CJK SC","PingFang SC","Microsoft YaHei",
sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}}code{{font-size:90%}}</style>
</head><body>
<h1>Hindsight</h1>
<p>Long-term memory for LLM agents. The HTTP API lives under <code>/v1</code>.</p>
<ul>
{items}
</ul>
<p>MCP (streamable HTTP): <code>{html.escape(mcp_url)}</code>; over stdio:
<code>hindsight mcp</code> on the same data directory goes through this server.</p>
</body></html>
"""
