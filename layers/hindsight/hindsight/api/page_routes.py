"""The routes that serve pages rather than memories: the OpenAPI document, the docs page and
the memory explorer's files (public, cacheable; ``routes.py`` puts them in its table)."""

from __future__ import annotations

from hindsight.api.route_calls import COUNT, Answer, RouteCall

CACHE_PUBLIC = {"Cache-Control": "public, max-age=300"}
EXPLORER_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
}


# --- the API's own description ---------------------------------------------------------------
def openapi_document(call: RouteCall[None]) -> Answer:
    from hindsight.api.openapi import committed_document_text

    return Answer(
        200,
        committed_document_text(),
        media_type="application/json; charset=utf-8",
        headers=CACHE_PUBLIC,
        metrics=(("OpenApiServed", COUNT, 1),),
    )


def docs_page(call: RouteCall[None]) -> Answer:
    from hindsight.api.docs_page import committed_page

    return Answer(
        200,
        committed_page(),
        media_type="text/html; charset=utf-8",
        headers=CACHE_PUBLIC,
        metrics=(("DocsServed", COUNT, 1),),
    )


# --- the memory explorer (a page of static files) -------------------------------------------
def explorer_page(call: RouteCall[None]) -> Answer:
    from hindsight.explorer.assets import page

    return Answer(
        200,
        page(),
        media_type="text/html; charset=utf-8",
        headers=EXPLORER_HEADERS,
        metrics=(("ExplorerServed", COUNT, 1),),
    )


def explorer_asset(call: RouteCall[str]) -> Answer:
    from hindsight.explorer.assets import asset

    text, media_type = asset(call.input)
    return Answer(
        200,
        text,
        media_type=media_type,
        headers=EXPLORER_HEADERS,
        metrics=(("ExplorerFilesServed", COUNT, 1),),
    )
