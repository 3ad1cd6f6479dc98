"""POST /v1/documents through the store function's handler: every type, the upsert, limits.

Documents are real files made in the test (reportlab PDFs, python-docx DOCX), sent as JSON
(base64 or text) or as a multipart form, read by markitdown, and found again by retrieve.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hindsight.bootstrap import build_memory_service, configure
from hindsight.core.models import SearchFilter
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder
from tests.functional.conftest import (
    ADMIN_KEY,
    CALENDAR_KEY,
    KEYS,
    READONLY_KEY,
    LambdaContextStub,
    Reply,
    assert_error,
    call,
    listed,
    load_function,
)
from tests.functional.document_files import (
    DOCX_TYPE,
    b64,
    docx_bytes,
    multipart_event,
    pdf_bytes,
    pdf_without_text,
)
from tests.functional.test_openapi_responses import assert_conforms

SUPPORTED = "Markdown (.md), plain text (.txt), HTML (.html), PDF (.pdf) and DOCX (.docx)"


def upload(body: dict[str, Any], key: str | None = ADMIN_KEY) -> Reply:
    reply = call("POST", "/v1/documents", function="store", body=body, key=key)
    assert_conforms("POST", "/v1/documents", reply)
    return reply


def upload_form(event: dict[str, Any]) -> Reply:
    result = load_function("store")(event, LambdaContextStub("store-function"))
    reply = Reply(result["statusCode"], json.loads(result["body"]), result.get("headers") or {})
    assert_conforms("POST", "/v1/documents", reply)
    return reply


def retrieve(query: str, user_id: str = "u1") -> list[dict[str, Any]]:
    reply = call("POST", "/v1/retrieve", body={"user_id": user_id, "query": query, "top_k": 5})
    assert reply.status == 200, reply.body
    return reply.body["results"]


def memory(memory_id: str) -> dict[str, Any]:
    reply = call("GET", "/v1/memories/{memory_id}", path_params={"memory_id": memory_id})
    assert reply.status == 200, reply.body
    return reply.body["memory"]


# --- each type ---------------------------------------------------------------------------
def test_markdown_text_is_stored_as_one_document_memory(service: MemoryService) -> None:
    text = "# Deployment runbook\n\n- Drain the queue first.\n- Then rotate the signing keys.\n"
    reply = upload({"user_id": "u1", "file_name": "runbook.md", "text": text})
    assert reply.status == 201, reply.body
    assert reply.body["status"] == "success"
    assert reply.body["document_id"] == "runbook.md"
    assert reply.body["content_type"] == "text/markdown"
    stored = memory(reply.body["memory_id"])
    assert stored["content"] == text.strip()
    assert stored["category"] == "document"
    assert stored["metadata"]["document"]["file_name"] == "runbook.md"
    assert stored["metadata"]["document"]["document_id"] == "runbook.md"
    assert stored["metadata"]["document"]["content_type"] == "text/markdown"
    found = retrieve("rotate the signing keys")
    assert found[0]["memory_id"] == reply.body["memory_id"]


def test_plain_text_in_another_charset_is_decoded(service: MemoryService) -> None:
    text = "会议纪要：下周五发布新版本，王总负责回归测试。"
    reply = upload(
        {
            "user_id": "u1",
            "file_name": "纪要.txt",
            "content_base64": b64(text.encode("gb18030")),
            "content_type": "text/plain; charset=gb18030",
        }
    )
    assert reply.status == 201, reply.body
    assert memory(reply.body["memory_id"])["content"] == text


def test_html_becomes_markdown_without_scripts(service: MemoryService) -> None:
    html = (
        "<html><head><title>Policy</title><script>track()</script></head><body>"
        "<h2>Refunds</h2><p>Refunds are paid within <b>14 days</b>.</p>"
        "<ul><li>Card</li><li>Bank transfer</li></ul></body></html>"
    )
    reply = upload(
        {"user_id": "u1", "file_name": "policy.html", "content_base64": b64(html.encode())}
    )
    assert reply.status == 201, reply.body
    content = memory(reply.body["memory_id"])["content"]
    assert "## Refunds" in content
    assert "**14 days**" in content
    assert "Bank transfer" in content
    assert "track()" not in content


def test_pdf_pages_in_english_and_chinese_are_read(service: MemoryService) -> None:
    pdf = pdf_bytes(
        [
            ["Vendor contract", "Termination needs ninety days written notice."],
            ["合同终止需提前九十天书面通知。", "The late payment penalty is five percent."],
        ]
    )
    reply = upload({"user_id": "u1", "file_name": "contract.pdf", "content_base64": b64(pdf)})
    assert reply.status == 201, reply.body
    assert reply.body["content_type"] == "application/pdf"
    content = memory(reply.body["memory_id"])["content"]
    assert "Termination needs ninety days written notice." in content
    assert "合同终止需提前九十天书面通知。" in content
    assert "late payment penalty" in content
    assert "\f" not in content
    assert retrieve("合同终止通知")[0]["memory_id"] == reply.body["memory_id"]


def test_docx_uploaded_as_a_form_keeps_headings_and_tables(service: MemoryService) -> None:
    data = docx_bytes(
        "Meeting notes",
        ["We agreed to ship the beta on Friday.", "下周三和王总复盘。"],
        [["Owner", "Task"], ["Ann", "Deploy the beta"]],
    )
    event = multipart_event(
        {"user_id": "u1", "metadata": {"team": "platform"}},
        ("meeting notes 会议.docx", data, DOCX_TYPE),
    )
    reply = upload_form(event)
    assert reply.status == 201, reply.body
    assert reply.body["file_name"] == "meeting notes 会议.docx"
    stored = memory(reply.body["memory_id"])
    assert stored["content"].startswith("# Meeting notes")
    assert "| Ann | Deploy the beta |" in stored["content"]
    assert "下周三和王总复盘。" in stored["content"]
    assert stored["metadata"]["team"] == "platform"
    assert stored["metadata"]["document"]["content_type"] == DOCX_TYPE


def test_a_form_upload_sent_as_octet_stream_is_typed_by_its_name(service: MemoryService) -> None:
    pdf = pdf_bytes([["Quarterly plan: hire two engineers."]])
    event = multipart_event({"user_id": "u1"}, ("plan.pdf", pdf, "application/octet-stream"))
    reply = upload_form(event)
    assert reply.status == 201, reply.body
    assert reply.body["content_type"] == "application/pdf"


# --- the upsert ----------------------------------------------------------------------------
def long_spec(phrase: str) -> str:
    sections = [
        f"## Section {i}\n\nThe service keeps invoices, budgets and deadlines in order; "
        f"reviews happen every quarter and reports go to finance. Item {i} of the spec."
        for i in range(120)
    ]
    sections[90] = f"## Section 90\n\n{phrase}"
    return "\n\n".join(sections)


def index_hits(service: MemoryService, word: str) -> list[str]:
    search = SearchFilter(tenant_id="acme", user_id="u1")
    return [hit.memory_id for hit in service.ports.index.keyword_search(search, word, 10)]


def test_the_same_document_id_again_replaces_the_memory_and_its_chunks(
    service: MemoryService,
) -> None:
    old = long_spec("The spare key to the workshop is under the blue flowerpot.")
    new = long_spec("The spare key now hangs in the red cabinet by the garage door.")
    first = upload({"user_id": "u1", "file_name": "spec.md", "text": old})
    assert first.status == 201, first.body
    assert first.body["chunks"] > 1
    assert index_hits(service, "flowerpot") == [first.body["memory_id"]]

    second = upload({"user_id": "u1", "file_name": "spec.md", "text": new})
    assert second.status == 200, second.body
    assert second.body["status"] == "updated"
    assert second.body["memory_id"] == first.body["memory_id"]
    assert [m["memory_id"] for m in listed("u1")] == [first.body["memory_id"]]
    assert memory(first.body["memory_id"])["content"] == new.strip()
    # the old chunks are gone from the index: only the new text is searchable
    assert index_hits(service, "flowerpot") == []
    assert index_hits(service, "cabinet") == [first.body["memory_id"]]
    for result in retrieve("where is the spare key to the workshop"):
        assert "flowerpot" not in result["content"]
    top = retrieve("spare key red cabinet garage")[0]
    assert top["memory_id"] == first.body["memory_id"]
    assert any("red cabinet" in h["excerpt"] for h in top["highlights"])


def test_the_same_file_again_is_unchanged_and_writes_nothing(service: MemoryService) -> None:
    body = {"user_id": "u1", "file_name": "notes.md", "text": "Standup moved to 9:30."}
    first = upload(body)
    again = upload(body)
    assert again.status == 200
    assert again.body["status"] == "unchanged"
    assert again.body["memory_id"] == first.body["memory_id"]
    assert (
        memory(first.body["memory_id"])["updated_at"]
        == memory(first.body["memory_id"])["created_at"]
    )


def test_document_id_names_the_document_across_file_names(service: MemoryService) -> None:
    first = upload(
        {
            "user_id": "u1",
            "file_name": "contract-v1.md",
            "document_id": "acme-contract",
            "text": "Payment within 30 days.",
        }
    )
    second = upload(
        {
            "user_id": "u1",
            "file_name": "contract-v2.md",
            "document_id": "acme-contract",
            "text": "Payment within 45 days.",
        }
    )
    assert (first.status, second.status) == (201, 200)
    assert second.body["status"] == "updated"
    assert second.body["memory_id"] == first.body["memory_id"]
    stored = memory(first.body["memory_id"])
    assert stored["content"] == "Payment within 45 days."
    assert stored["metadata"]["document"]["file_name"] == "contract-v2.md"


def test_one_document_id_is_separate_per_user_scope_and_tenant(service: MemoryService) -> None:
    body = {"file_name": "notes.md", "text": "Quarterly goals: ship search."}
    ids = {
        upload({**body, "user_id": "u1"}).body["memory_id"],
        upload({**body, "user_id": "u2"}).body["memory_id"],
        upload({**body, "user_id": "u1", "scope": "work"}).body["memory_id"],
        upload({**body, "user_id": "u1"}, key=CALENDAR_KEY).body["memory_id"],
    }
    assert len(ids) == 4


# --- limits and refusals -------------------------------------------------------------------
@pytest.fixture
def small_limits() -> Iterator[MemoryService]:
    settings = Settings(
        backend="memory",
        api_keys=json.dumps(KEYS),
        max_document_bytes=4_096,
        max_content_chars=2_000,
    )
    built = build_memory_service(settings, embedder=HashingEmbedder())
    configure(settings, built)
    yield built
    configure()


def test_a_file_over_the_byte_limit_is_413_naming_the_setting(small_limits: MemoryService) -> None:
    pages = [
        [f"line {page}.{n}: {hash((page, n)) % 10**12:012d}" for n in range(45)]
        for page in range(6)
    ]
    pdf = pdf_bytes(pages)
    assert len(pdf) > 4_096
    reply = upload({"user_id": "u1", "file_name": "big.pdf", "content_base64": b64(pdf)})
    assert_error(reply, 413, "the limit is 4,096 bytes (HINDSIGHT_MAX_DOCUMENT_BYTES)")
    assert listed("u1") == []


def test_text_over_the_content_limit_is_413_naming_the_setting(small_limits: MemoryService) -> None:
    reply = upload({"user_id": "u1", "file_name": "long.txt", "text": "word " * 600})
    assert_error(reply, 413, "the limit is 2,000 (HINDSIGHT_MAX_CONTENT_CHARS)", "long.txt")
    assert listed("u1") == []


@pytest.mark.parametrize(
    ("file_name", "content_type", "data", "words"),
    [
        ("budget.xlsx", None, b"PK\x03\x04 not a real workbook", ("budget.xlsx",)),
        ("photo", "image/png", b"\x89PNG\r\n\x1a\n", ("image/png",)),
        ("old.doc", None, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", ("old.doc",)),
    ],
)
def test_unsupported_types_are_415_listing_the_supported_ones(
    service: MemoryService, file_name: str, content_type: str | None, data: bytes, words: tuple
) -> None:
    body = {"user_id": "u1", "file_name": file_name, "content_base64": b64(data)}
    if content_type:
        body["content_type"] = content_type
    assert_error(upload(body), 415, SUPPORTED, *words)
    assert listed("u1") == []


def test_a_word_97_file_named_docx_is_415_saying_to_save_as_docx(service: MemoryService) -> None:
    body = {
        "user_id": "u1",
        "file_name": "x.docx",
        "content_base64": b64(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"),
    }
    assert_error(upload(body), 415, "save it as .docx or PDF")


def test_a_pdf_without_text_says_so(service: MemoryService) -> None:
    reply = upload(
        {"user_id": "u1", "file_name": "scan.pdf", "content_base64": b64(pdf_without_text())}
    )
    assert_error(reply, 422, "scan.pdf has no extractable text", "OCR")
    assert listed("u1") == []


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"just some text, no pdf here", ("not a PDF",)),
        (b"%PDF-1.7\n1 0 obj << /Type /Catalog >> broken", ("could not be read as PDF",)),
    ],
)
def test_a_damaged_or_mislabelled_pdf_is_422(
    service: MemoryService, data: bytes, words: tuple
) -> None:
    reply = upload({"user_id": "u1", "file_name": "contract.pdf", "content_base64": b64(data)})
    assert_error(reply, 422, *words)
    assert listed("u1") == []


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"user_id": "u1", "file_name": "a.md"}, ("content_base64, or its text as text",)),
        (
            {"user_id": "u1", "file_name": "a.md", "text": "x", "content_base64": "eA=="},
            ("one of them",),
        ),
        ({"user_id": "u1", "file_name": "a.pdf", "content_base64": "not base64!"}, ("base64",)),
        ({"user_id": "u1", "text": "x"}, ("file_name: field required",)),
        (
            {"user_id": "u1", "file_name": "a.md", "text": "x", "metadata": {"document": 1}},
            ("reserved",),
        ),
        (
            {"user_id": "u1", "file_name": "a.md", "text": "x", "colour": "red"},
            ("colour: unknown field",),
        ),
        ({"user_id": "u1", "file_name": "a.md", "text": "   \n  "}, ("no text",)),
    ],
)
def test_invalid_requests_are_422_naming_the_problem(
    service: MemoryService, body: dict[str, Any], words: tuple
) -> None:
    assert_error(upload(body), 422, *words)
    assert listed("u1") == []


def test_a_read_only_key_may_not_store_documents(service: MemoryService) -> None:
    reply = upload({"user_id": "u1", "file_name": "a.md", "text": "hello"}, key=READONLY_KEY)
    assert_error(reply, 403, "may not write scope")


def test_a_form_without_a_file_or_with_unknown_fields_is_422(service: MemoryService) -> None:
    assert_error(upload_form(multipart_event({"user_id": "u1"}, None)), 422, "file: field required")
    reply = upload_form(multipart_event({"user_id": "u1", "colour": "red"}, ("a.md", b"hi", None)))
    assert_error(reply, 422, "colour: unknown field")
    reply = upload_form(
        multipart_event({"user_id": "u1", "metadata": "{oops"}, ("a.md", b"hi", None))
    )
    assert_error(reply, 422, "metadata: is not valid JSON")
    assert listed("u1") == []
