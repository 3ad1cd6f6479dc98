"""Which kind of document a file is, and how text files are decoded.

A file's kind comes from the media type it was sent with, else its file name's extension,
else its first bytes (``%PDF-``, a ZIP holding ``word/document.xml``, or UTF-8 text; so
is a file whose extension names no known type, such as ``.log``). A generic media type
(``application/octet-stream``, what many upload tools send) says nothing and is passed
over. Any ``text/*`` type other than HTML is read as plain text.
"""

from __future__ import annotations

import codecs
import io
import mimetypes
import zipfile
from dataclasses import dataclass
from email.message import Message

from hindsight.core.errors import UnreadableDocumentError, UnsupportedDocumentError


@dataclass(frozen=True)
class Format:
    name: str  # "PDF"
    media_type: str  # canonical: "application/pdf"
    extensions: tuple[str, ...]  # ".pdf"
    needs_converter: bool  # read by markitdown (not simply decoded)


MARKDOWN = Format("Markdown", "text/markdown", (".md", ".markdown", ".mdown", ".mkd"), False)
PLAIN_TEXT = Format("plain text", "text/plain", (".txt", ".text"), False)
HTML = Format("HTML", "text/html", (".html", ".htm", ".xhtml"), True)
PDF = Format("PDF", "application/pdf", (".pdf",), True)
DOCX = Format(
    "DOCX",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    (".docx",),
    True,
)
FORMATS = (MARKDOWN, PLAIN_TEXT, HTML, PDF, DOCX)

_ALIASES = {
    "text/x-markdown": MARKDOWN,
    "application/xhtml+xml": HTML,
    "application/x-pdf": PDF,
}
_GENERIC_TYPES = {"", "application/octet-stream", "binary/octet-stream", "application/unknown"}
_SNIFFED_BYTES = 1_024  # a PDF's header may follow a little junk
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # .doc, .xls, .ppt (not supported)


def supported_list(formats: tuple[Format, ...]) -> str:
    """``Markdown (.md), plain text (.txt), ... and DOCX (.docx)``."""
    names = [f"{f.name} ({f.extensions[0]})" for f in formats]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def split_media_type(value: str | None) -> tuple[str, str | None]:
    """(``type/subtype`` lowercased, its charset parameter or None)."""
    main = (value or "").split(";", 1)[0].strip().lower()
    if "/" not in main:
        return main, None
    message = Message()
    message["content-type"] = value or ""
    charset = message.get_param("charset")
    return main, charset if isinstance(charset, str) and charset else None


def _extension(file_name: str) -> str:
    dot = file_name.rfind(".")
    return file_name[dot:].lower() if dot > 0 else ""


def _by_media_type(media_type: str) -> Format | None:
    for fmt in FORMATS:
        if fmt.media_type == media_type:
            return fmt
    if media_type in _ALIASES:
        return _ALIASES[media_type]
    return PLAIN_TEXT if media_type.startswith("text/") else None


def _by_extension(extension: str, data: bytes) -> Format | None:
    """The format its extension names; an extension of no known type (.log, .toml) is
    plain text if its bytes are."""
    for fmt in FORMATS:
        if extension in fmt.extensions:
            return fmt
    guessed, _ = mimetypes.guess_type(f"file{extension}")
    if guessed is None:
        return PLAIN_TEXT if _sniffed(data) is PLAIN_TEXT else None
    return PLAIN_TEXT if guessed.startswith("text/") else None


def _sniffed(data: bytes) -> Format | None:
    if b"%PDF-" in data[:_SNIFFED_BYTES]:
        return PDF
    if _is_docx(data):
        return DOCX
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if b"\x00" in data else PLAIN_TEXT


def _is_docx(data: bytes) -> bool:
    if not data.startswith(b"PK"):
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def _unsupported(what: str, formats: tuple[Format, ...]) -> UnsupportedDocumentError:
    return UnsupportedDocumentError(
        f"{what} cannot be stored as a document; the supported types are "
        f"{supported_list(formats)} — or send the document's text"
    )


def detect(data: bytes, file_name: str, declared: str | None) -> Format:
    """The file's kind; UnsupportedDocumentError when it is none this module knows."""
    media_type, _ = split_media_type(declared)
    if media_type not in _GENERIC_TYPES:
        found = _by_media_type(media_type)
        if found is None:
            raise _unsupported(f"{file_name} ({media_type})", FORMATS)
        return found
    extension = _extension(file_name)
    if extension:
        found = _by_extension(extension, data)
        if found is None:
            raise _unsupported(f"{file_name} ({extension} file)", FORMATS)
        return found
    found = _sniffed(data)
    if found is None:
        raise UnsupportedDocumentError(
            f"cannot tell what kind of file {file_name} is; give content_type, or a file "
            f"name with its extension: {supported_list(FORMATS)}"
        )
    return found


def check_signature(data: bytes, file_name: str, fmt: Format) -> None:
    """UnreadableDocumentError (or 415 for an old binary Office file) when the bytes are
    not what the type says: no guessing a PDF out of a text file."""
    if fmt is PDF and b"%PDF-" not in data[:_SNIFFED_BYTES]:
        raise UnreadableDocumentError(
            f"{file_name} is not a PDF (it does not start with %PDF-); check the file and "
            "its content_type"
        )
    if fmt is DOCX and not _is_docx(data):
        if data.startswith(_OLE_MAGIC):
            raise UnsupportedDocumentError(
                f"{file_name} is an old binary Word file (.doc), which cannot be read; "
                "save it as .docx or PDF and send that"
            )
        raise UnreadableDocumentError(
            f"{file_name} is not a DOCX file (a DOCX is a ZIP archive holding "
            "word/document.xml); check the file and its content_type"
        )


def decode_text(data: bytes, file_name: str, charset: str | None) -> tuple[str, str]:
    """(text, encoding used): the charset given, else a byte-order mark, else UTF-8, else
    the encoding charset-normalizer finds (when installed)."""
    if charset:
        try:
            return data.decode(charset), codecs.lookup(charset).name
        except LookupError as exc:
            raise UnreadableDocumentError(
                f"content_type names charset {charset!r}, which is not known; use e.g. "
                "utf-8, gb18030 or latin-1"
            ) from exc
        except UnicodeDecodeError as exc:
            raise UnreadableDocumentError(
                f"{file_name} is not valid {charset} text (byte {exc.start}); check the "
                "charset in content_type"
            ) from exc
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), encoding
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    return _detected(data, file_name)


def _detected(data: bytes, file_name: str) -> tuple[str, str]:
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        best = None
    else:
        best = from_bytes(data).best()
    if best is None or b"\x00" in data:
        raise UnreadableDocumentError(
            f"{file_name} is not UTF-8 text and its encoding could not be told; send it as "
            "UTF-8, or name its charset in content_type (e.g. text/plain; charset=gb18030)"
        )
    return str(best), str(best.encoding)
