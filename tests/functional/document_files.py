"""Small real documents made in the test run: PDFs (reportlab), DOCX (python-docx), forms.

Made with the libraries office tools use, so the converter reads what users upload, not a
hand-written imitation of a format.
"""

from __future__ import annotations

import base64
import io
import json
import uuid
from typing import Any

from hindsight.gateway.lambda_emulation import proxy_event as lambda_proxy_event
from tests.functional.conftest import ADMIN_KEY

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def pdf_bytes(pages: list[list[str]]) -> bytes:
    """A PDF with one page per list of lines; Chinese lines use a CID font (STSong-Light)."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    for lines in pages:
        for number, line in enumerate(lines):
            chinese = any(ord(ch) > 0x2E80 for ch in line)
            pdf.setFont("STSong-Light" if chinese else "Helvetica", 11)
            pdf.drawString(60, 780 - 16 * number, line)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def pdf_without_text() -> bytes:
    """What a scanner makes, as far as text goes: pages with drawings and no text."""
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.rect(100, 100, 300, 400, fill=1)
    pdf.circle(250, 600, 50)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def docx_bytes(title: str, paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(title, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                grid.cell(r, c).text = cell
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def multipart_body(
    fields: dict[str, Any], file: tuple[str, bytes, str | None] | None
) -> tuple[bytes, str]:
    """(body, Content-Type) of a multipart/form-data form, as curl -F would send it."""
    boundary = f"------------------------{uuid.uuid4().hex[:16]}"
    parts: list[bytes] = []
    for name, value in fields.items():
        text = json.dumps(value) if isinstance(value, dict) else str(value)
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + text.encode("utf-8")
            + b"\r\n"
        )
    if file is not None:
        file_name, data, media_type = file
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{file_name}"\r\n'
        )
        if media_type:
            head += f"Content-Type: {media_type}\r\n"
        parts.append(head.encode("utf-8") + b"\r\n" + data + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def multipart_event(
    fields: dict[str, Any],
    file: tuple[str, bytes, str | None] | None,
    key: str = ADMIN_KEY,
) -> dict[str, Any]:
    """An API Gateway event of a form upload: binary media type, so the body is base64."""
    body, content_type = multipart_body(fields, file)
    return lambda_proxy_event(
        "POST",
        "/v1/documents",
        headers={
            "Content-Type": content_type,
            "Authorization": f"Bearer {key}",
            "User-Agent": "curl/8.5.0",
        },
        body=body,
        base64_body=True,
        stage="prod",
        source_ip="203.0.113.7",
    )
