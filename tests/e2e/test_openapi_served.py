"""The local server serves the OpenAPI document and its reference page, without a key."""

from __future__ import annotations

import httpx

from hindsight.api.openapi import COMMITTED_PATH
from tests.e2e.conftest import Server


def test_the_document_and_the_page_are_served_without_a_key(server: Server) -> None:
    document = httpx.get(f"{server.url}/v1/openapi.json", timeout=30.0)
    assert document.status_code == 200
    assert document.headers["content-type"].startswith("application/json")
    assert document.text == COMMITTED_PATH.read_text(encoding="utf-8")
    assert document.json()["openapi"] == "3.1.0"
    page = httpx.get(f"{server.url}/docs", timeout=30.0)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "/v1/memories" in page.text and "<script" not in page.text
    # the page links the document relative to itself, as it is served on AWS under /<stage>
    assert "href='v1/openapi.json'" in page.text
    assert httpx.post(f"{server.url}/docs", timeout=30.0).status_code == 405
