"""The markitdown document converter: which type a file is, text decoding, and a server
without markitdown (the AWS zip layer) still reading Markdown and text."""

from __future__ import annotations

import codecs

import pytest

from hindsight.adapters.documents import MarkItDownConverter
from hindsight.adapters.documents import markitdown_converter as module
from hindsight.adapters.documents.formats import DOCX, HTML, MARKDOWN, PDF, PLAIN_TEXT, detect
from hindsight.core.errors import UnreadableDocumentError, UnsupportedDocumentError
from tests.functional.document_files import docx_bytes, pdf_bytes


@pytest.mark.parametrize(
    ("data", "file_name", "declared", "expected"),
    [
        (b"# x", "a.md", None, MARKDOWN),
        (b"x", "a.MARKDOWN", None, MARKDOWN),
        (b"x", "a.txt", "text/plain; charset=utf-8", PLAIN_TEXT),
        (b"x", "a.log", None, PLAIN_TEXT),  # other text files are plain text
        (b"x", "a.csv", None, PLAIN_TEXT),
        (b"x", "a.py", "text/x-python", PLAIN_TEXT),
        (b"x", "a.htm", None, HTML),
        (b"x", "x", "application/xhtml+xml", HTML),
        (b"%PDF-1.7", "a.bin", "application/pdf", PDF),
        (b"%PDF-1.7", "a.pdf", "application/octet-stream", PDF),  # generic: by name
        (b"%PDF-1.7 ...", "upload", None, PDF),  # no name, no type: by its bytes
        (b"plain words", "upload", None, PLAIN_TEXT),
        (b"x", "a.docx", None, DOCX),
    ],
)
def test_the_type_comes_from_the_media_type_then_the_name_then_the_bytes(
    data: bytes, file_name: str, declared: str | None, expected: object
) -> None:
    assert detect(data, file_name, declared) is expected


def test_a_docx_without_name_or_type_is_recognised_by_its_contents() -> None:
    assert detect(docx_bytes("T", ["p"]), "upload", None) is DOCX


@pytest.mark.parametrize(
    ("data", "file_name", "declared"),
    [
        (b"x", "a.xlsx", None),
        (b"x", "a.pptx", None),
        (b"x", "a.png", None),
        (b"x", "a.md", "image/jpeg"),  # a declared type wins over the name
        (b"\x00\x01\xff\xfe\x00", "upload", None),  # binary, nothing to tell its type by
    ],
)
def test_other_types_are_unsupported(data: bytes, file_name: str, declared: str | None) -> None:
    with pytest.raises(UnsupportedDocumentError):
        detect(data, file_name, declared)


def test_text_is_decoded_by_charset_then_bom_then_utf8_then_detection() -> None:
    converter = MarkItDownConverter()
    text = "会议纪要：下周五发布新版本，王总负责回归测试，合同终止需提前九十天书面通知。"
    given = converter.convert(text.encode("gb18030"), "a.txt", "text/plain; charset=GB18030")
    assert given.text == text
    bom = converter.convert(codecs.BOM_UTF16_LE + text.encode("utf-16-le"), "a.txt", None)
    assert bom.text == text
    assert converter.convert(text.encode(), "a.md", None).converter == "text (utf-8)"
    assert converter.convert(text.encode("gb18030"), "a.txt", None).text == text
    with pytest.raises(UnreadableDocumentError, match="charset 'klingon'"):
        converter.convert(b"x", "a.txt", "text/plain; charset=klingon")
    with pytest.raises(UnreadableDocumentError, match="not valid utf-8"):
        converter.convert(b"\xff\xfe\xfa", "a.txt", "text/plain; charset=utf-8")


def test_pdf_and_docx_are_read_by_markitdown() -> None:
    converter = MarkItDownConverter()
    pdf = converter.convert(pdf_bytes([["Hello from page one."]]), "a.pdf", None)
    assert "Hello from page one." in pdf.text and pdf.converter.startswith("markitdown ")
    docx = converter.convert(docx_bytes("Plan", ["Ship it."]), "a.docx", None)
    assert docx.text.startswith("# Plan") and "Ship it." in docx.text


def test_without_markitdown_text_still_works_and_the_rest_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(module, "markitdown_installed", lambda: False)
    converter = MarkItDownConverter()
    assert converter.media_types == ["text/markdown", "text/plain"]
    assert converter.convert(b"# Notes", "a.md", None).text == "# Notes"
    with pytest.raises(UnsupportedDocumentError) as refused:
        converter.convert(pdf_bytes([["x"]]), "a.pdf", None)
    message = refused.value.message
    assert "cannot read PDF files" in message
    assert "hindsight[documents]" in message and "EmbeddingMode=container" in message
    assert "Markdown (.md) and plain text (.txt)" in message
