"""POST /v1/documents at the edge: a JSON body or a multipart form into a core command.

JSON (``DocumentUpload``): the file as ``content_base64``, or its text as ``text``.
``multipart/form-data`` (what ``curl -F file=@notes.pdf`` and browsers send): a ``file``
part and the other fields as form fields (``metadata`` as a JSON object); the file name
and type come from the part unless ``file_name`` or ``content_type`` fields say otherwise.
Both are refused over the request body limit (413), and both become the same
``StoreDocumentCommand``.
"""

from __future__ import annotations

import base64
import binascii
import json
from email import policy
from email.message import EmailMessage, MIMEPart
from email.parser import BytesParser
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hindsight.api.http import body_limit, json_object, readable_errors
from hindsight.core.commands import AwareDatetime, Identifier, Label, body_too_large
from hindsight.core.errors import InvalidRequestError, MalformedRequestError, PayloadTooLargeError
from hindsight.core.usecases.documents import DocumentId, FileName, StoreDocumentCommand

MULTIPART = "multipart/form-data"
_FORM_FIELDS = frozenset(
    {
        "user_id",
        "file_name",
        "content_type",
        "document_id",
        "scope",
        "session_id",
        "occurred_at",
        "category",
        "metadata",
    }
)


class DocumentUpload(BaseModel):
    """POST /v1/documents as JSON: one file, as base64 or as text."""

    model_config = ConfigDict(extra="forbid")

    user_id: Identifier = Field(description="whose memory this is")
    file_name: FileName = Field(description="the file's name; its extension tells the type")
    content_base64: str | None = Field(
        default=None, description="the file's bytes, base64 (e.g. `base64 -w0 contract.pdf`)"
    )
    text: str | None = Field(
        default=None, description="or the document's text itself (Markdown, plain text, HTML)"
    )
    content_type: str | None = Field(
        default=None,
        max_length=200,
        description="media type; default from file_name's extension (text/markdown, "
        "text/plain, text/html, application/pdf, application/vnd.openxmlformats-"
        "officedocument.wordprocessingml.document)",
    )
    document_id: DocumentId | None = Field(
        default=None,
        description="what the document is known by within the user and scope; storing it "
        "again replaces the memory (status updated). Default: file_name",
    )
    scope: Identifier | None = None
    session_id: Identifier | None = None
    occurred_at: AwareDatetime | None = Field(
        default=None, description="when the document was shared or written; default now"
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="kept as is; the key 'document' is reserved"
    )
    category: Label | None = Field(default=None, description="default 'document'")

    @model_validator(mode="after")
    def _one_source(self) -> DocumentUpload:
        if (self.content_base64 is None) == (self.text is None):
            raise ValueError("give the file as content_base64, or its text as text (one of them)")
        return self

    def command(self) -> StoreDocumentCommand:
        fields = self.model_dump(exclude_none=True, exclude={"content_base64", "text"})
        if self.text is not None:
            if self.content_type:  # the text arrives as JSON: UTF-8, whatever it says
                fields["content_type"] = self.content_type.split(";", 1)[0] + "; charset=utf-8"
            return _validated({**fields, "data": self.text.encode("utf-8")})
        return _validated({**fields, "data": _decode_base64(self.content_base64 or "")})


def document_command_from(content_type: str, raw: bytes) -> StoreDocumentCommand:
    """The command of a POST /v1/documents body (JSON or multipart) and its Content-Type."""
    if _is_form(content_type):
        _check_size(raw)
        return _from_form(content_type, raw)
    return _from_json(json_object(raw))


def _is_form(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == MULTIPART


def _from_json(data: dict[str, Any]) -> StoreDocumentCommand:
    try:
        upload = DocumentUpload.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequestError(readable_errors(exc.errors())) from exc
    return upload.command()


def _validated(fields: dict[str, Any]) -> StoreDocumentCommand:
    try:
        return StoreDocumentCommand.model_validate(fields)
    except ValidationError as exc:
        raise InvalidRequestError(readable_errors(exc.errors())) from exc


def _decode_base64(value: str) -> bytes:
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestError(
            "content_base64: is not valid base64; send the file's bytes base64-encoded "
            "(e.g. base64 -w0 notes.pdf), or the text as text"
        ) from exc


def _check_size(raw: bytes) -> None:
    limit = body_limit()
    if len(raw) > limit:
        raise PayloadTooLargeError(body_too_large(len(raw), limit))


def _from_form(content_type: str, raw: bytes) -> StoreDocumentCommand:
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1", "replace")
    message = BytesParser(policy=policy.HTTP).parsebytes(head + raw)
    if not isinstance(message, EmailMessage) or not message.is_multipart():
        raise MalformedRequestError(
            "the multipart/form-data body could not be read (is its boundary right?); send "
            "a form with a file part, e.g. curl -F file=@notes.pdf -F user_id=u1"
        )
    fields: dict[str, Any] = {}
    file_part: MIMEPart | None = None
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name == "file":
            file_part = part
        elif isinstance(name, str) and name in _FORM_FIELDS:
            fields[name] = _form_value(part)
        else:
            raise InvalidRequestError(
                f"{name or 'a form part without a name'}: unknown field; send a file part "
                f"named file and any of {', '.join(sorted(_FORM_FIELDS))}"
            )
    if file_part is None:
        raise InvalidRequestError("file: field required (the form part holding the file)")
    return _validated({**_file_fields(file_part), **fields, "data": _payload(file_part)})


def _payload(part: MIMEPart) -> bytes:
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def _form_value(part: MIMEPart) -> Any:
    name = part.get_param("name", header="content-disposition")
    text = _payload(part).decode("utf-8", errors="replace")
    if name != "metadata":
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"metadata: is not valid JSON ({exc.msg})") from exc


def _file_fields(part: MIMEPart) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    file_name = part.get_filename()
    if file_name:
        fields["file_name"] = _undo_surrogates(file_name)
    declared = part.get("content-type")
    if declared:
        fields["content_type"] = str(declared)
    return fields


def _undo_surrogates(value: str) -> str:
    """A raw UTF-8 file name (what curl sends) as the email parser left it, made whole."""
    try:
        return value.encode("utf-8", errors="surrogateescape").decode("utf-8")
    except UnicodeError:
        return value
