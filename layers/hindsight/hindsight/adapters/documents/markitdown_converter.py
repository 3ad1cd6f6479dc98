"""The document converter: Markdown and plain text decoded, HTML, PDF and DOCX read by
markitdown (Microsoft's file-to-Markdown library: pdfminer.six for PDF, mammoth for DOCX,
BeautifulSoup and markdownify for HTML).

markitdown and its format libraries are the optional extra ``hindsight[documents]``: with
onnxruntime (which markitdown needs) they are ~200 MB, more than the AWS Lambda layer has
room for (250 MB unzipped, ~240 MB already used by the embedding model, numpy and jieba).
Without them this converter still reads Markdown and plain text, and answers HTML, PDF and
DOCX with 415 saying what to install; the container-image functions install the extra.

Each format is read by its own markitdown converter class, named for its type, rather than
by ``MarkItDown.convert``, whose content sniffing falls back to other converters (a damaged
PDF came back as its raw bytes read as text).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import io
import logging
import threading
from typing import Any

from hindsight.adapters.documents.formats import (
    DOCX,
    FORMATS,
    HTML,
    PDF,
    Format,
    check_signature,
    decode_text,
    detect,
    split_media_type,
    supported_list,
)
from hindsight.core.errors import UnreadableDocumentError, UnsupportedDocumentError
from hindsight.core.ports import ConvertedDocument

logger = logging.getLogger(__name__)

INSTALL_HINT = (
    "install the document converter on the server (pip install 'hindsight[documents]'; on "
    "AWS deploy with EmbeddingMode=container, whose image has it)"
)


def markitdown_installed() -> bool:
    return importlib.util.find_spec("markitdown") is not None


class MarkItDownConverter:
    """``DocumentConverter`` over markitdown; Markdown and plain text need nothing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readers: dict[str, Any] = {}
        self._available = markitdown_installed()

    @property
    def formats(self) -> tuple[Format, ...]:
        """The formats this process can read."""
        return FORMATS if self._available else tuple(f for f in FORMATS if not f.needs_converter)

    @property
    def media_types(self) -> list[str]:
        return [f.media_type for f in self.formats]

    def convert(self, data: bytes, file_name: str, media_type: str | None) -> ConvertedDocument:
        fmt = detect(data, file_name, media_type)
        if fmt not in self.formats:
            raise UnsupportedDocumentError(
                f"this server cannot read {fmt.name} files: {INSTALL_HINT}. It reads "
                f"{supported_list(self.formats)}; or send the document's text"
            )
        check_signature(data, file_name, fmt)
        _, charset = split_media_type(media_type)
        if not fmt.needs_converter:
            text, encoding = decode_text(data, file_name, charset)
            return ConvertedDocument(text, fmt.media_type, f"text ({encoding})")
        if fmt is HTML:
            # markitdown reads HTML bytes as UTF-8 unless told: decode it here, as text files
            text, _ = decode_text(data, file_name, charset)
            data, charset = text.encode("utf-8"), "utf-8"
        markdown = self._read(fmt, data, file_name, charset)
        if fmt is PDF and not markdown.strip():
            raise UnreadableDocumentError(
                f"{file_name} has no extractable text: it is probably a scan (pictures of "
                "pages). Run OCR on it first (e.g. ocrmypdf) or send its text"
            )
        return ConvertedDocument(markdown, fmt.media_type, f"markitdown {_version()}")

    def _read(self, fmt: Format, data: bytes, file_name: str, charset: str | None) -> str:
        from markitdown import MissingDependencyException, StreamInfo

        reader = self._reader(fmt)
        info = StreamInfo(
            mimetype=fmt.media_type,
            extension=fmt.extensions[0],
            charset=charset,
            filename=file_name,
        )
        try:
            result = reader.convert(io.BytesIO(data), info)
        except MissingDependencyException as exc:
            raise UnsupportedDocumentError(
                f"this server cannot read {fmt.name} files (a library markitdown needs for "
                f"them is missing): {INSTALL_HINT}"
            ) from exc
        except MemoryError:
            raise
        except Exception as exc:  # the format libraries raise many types on a bad file
            raise _unreadable(exc, fmt, file_name) from exc
        return str(result.markdown or "")

    def _reader(self, fmt: Format) -> Any:
        with self._lock:
            if fmt.media_type not in self._readers:
                from markitdown.converters import DocxConverter, HtmlConverter, PdfConverter

                classes = {HTML: HtmlConverter, PDF: PdfConverter, DOCX: DocxConverter}
                self._readers[fmt.media_type] = classes[fmt]()
            return self._readers[fmt.media_type]


def _unreadable(exc: Exception, fmt: Format, file_name: str) -> UnreadableDocumentError:
    name = type(exc).__name__
    logger.info("document unreadable format=%s error=%s", fmt.name, name)
    if "password" in name.lower() or "encrypt" in name.lower():
        return UnreadableDocumentError(
            f"{file_name} is password-protected; remove the password and send it again"
        )
    reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else name
    return UnreadableDocumentError(
        f"{file_name} could not be read as {fmt.name} ({reason}); check that the file is "
        "complete and not damaged"
    )


def _version() -> str:
    try:
        return importlib.metadata.version("markitdown")
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"
