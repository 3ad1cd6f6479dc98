"""``hindsight document add PATH``: a file the agent should remember, as one memory.

The same use case as POST /v1/documents: Markdown, text, HTML, PDF or DOCX, converted to
text and stored whole; adding the same document (by ``--document-id``, default the file
name) again replaces it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hindsight import bootstrap
from hindsight.cli.errors import handles_errors
from hindsight.cli.output import emit_json, fail, make_console
from hindsight.cli.progress import embedding_bar
from hindsight.cli.state import JsonFlag, cli_state, given, open_service, parse_metadata
from hindsight.core.usecases.documents import StoreDocumentCommand

app = typer.Typer(
    name="document",
    help="Documents the agent should remember (Markdown, text, HTML, PDF, DOCX).",
    no_args_is_help=True,
)

_VERBS = {"success": "stored", "updated": "updated", "unchanged": "unchanged"}
_COLOURS = {"success": "green", "updated": "cyan", "unchanged": "yellow"}


def _read(path: Path, as_json: bool) -> bytes:
    """The file's bytes; a file over the limit is refused before it is read."""
    limit = bootstrap.get_settings().max_document_bytes
    size = path.stat().st_size
    if size > limit:
        fail(
            f"{path.name} is {size:,} bytes; the limit is {limit:,} bytes "
            "(HINDSIGHT_MAX_DOCUMENT_BYTES). Add a smaller file or only its text, or raise "
            "the limit",
            as_json=as_json,
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}", as_json=as_json)


@app.command("add")
@handles_errors
def add(
    ctx: typer.Context,
    path: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, readable=True, help="The file (.md .txt .html .pdf .docx)."
        ),
    ],
    user_id: Annotated[str, typer.Option("--user-id", help="Whose memory this is.")],
    document_id: Annotated[
        str | None,
        typer.Option(
            help="What the document is known by; adding it again replaces it "
            "(default: the file name)."
        ),
    ] = None,
    file_name: Annotated[
        str | None, typer.Option(help="Name to store it under (default: the file's).")
    ] = None,
    content_type: Annotated[
        str | None, typer.Option(help="Media type (default: from the file name).")
    ] = None,
    scope: Annotated[str | None, typer.Option(help="Scope (default 'global').")] = None,
    session_id: Annotated[str | None, typer.Option(help="Conversation session.")] = None,
    category: Annotated[str | None, typer.Option(help="Category (default 'document').")] = None,
    occurred_at: Annotated[
        str | None, typer.Option(help="When it was shared or written, ISO 8601 (default now).")
    ] = None,
    metadata: Annotated[str | None, typer.Option(help="A JSON object kept as is.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Store a file as one memory, or replace the one stored under its document id."""
    state = cli_state(ctx, as_json)
    service, principal = open_service(state)
    fields = given(
        user_id=user_id,
        file_name=file_name or path.name,
        document_id=document_id,
        content_type=content_type,
        scope=scope,
        session_id=session_id,
        category=category,
        occurred_at=occurred_at,
        metadata=parse_metadata(metadata),
    )
    command = StoreDocumentCommand(data=_read(path, state.json_output), **fields)
    with embedding_bar(f"storing {path.name}", state.json_output):
        outcome = service.store_document(principal, command)
    if state.json_output:
        emit_json(outcome.model_dump(mode="json", exclude_none=True))
        return
    colour = _COLOURS[outcome.status]
    chunks = ""
    if outcome.chunks:
        chunks = f", {outcome.chunks} chunk{'s' if outcome.chunks > 1 else ''}"
    make_console().print(
        f"[{colour}]{_VERBS[outcome.status]}[/{colour}] {outcome.memory_id} "
        f"({outcome.file_name}, {outcome.content_type}, {outcome.characters:,} characters"
        f"{chunks}; document id {outcome.document_id!r})",
        highlight=False,
    )
