"""Store a document (a spec, a contract, meeting notes) as one long episodic memory.

The file is read by the ``DocumentConverter`` port (which knows the formats), and its text
is stored whole as one memory, chunked for search like any long memory. A document is
known by its ``document_id`` (default: its file name) within a tenant, user and scope:
storing the same ``document_id`` again replaces that memory — content, every chunk's
vector, metadata — instead of adding a second one, and answers ``updated``; the very same
text and fields again answer ``unchanged`` and write nothing.

The memory's id is derived from (tenant, user, scope, document_id) (``document_memory_id``),
so every backend's "put only if this id is absent" makes concurrent first uploads of one
document create one memory: the loser of the race finds it and replaces it instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from hindsight.core.access import require_write
from hindsight.core.commands import (
    MAX_METADATA_BYTES,
    AwareDatetime,
    Identifier,
    Label,
)
from hindsight.core.embedding import DEFAULT_CHUNK_SIZES, ChunkSizes, embed_memories
from hindsight.core.errors import (
    ConflictError,
    HindsightError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    UnavailableError,
    UnreadableDocumentError,
)
from hindsight.core.models import EpisodicMemory, Principal, StoredVector
from hindsight.core.ports import (
    Clock,
    ConvertedDocument,
    DocumentConverter,
    Embedder,
    MemoryWriter,
    NewRecord,
    RecordStore,
)
from hindsight.core.secrets import DEFAULT_SECRET_SCREEN, RedactionCount, SecretScreen
from hindsight.core.temporal import resolve_time_expressions
from hindsight.core.text import content_hash
from hindsight.core.usecases.store import MAX_FUTURE_SKEW

logger = logging.getLogger(__name__)

DOCUMENT_KEY = "document"  # the metadata entry describing the file
DEFAULT_CATEGORY = "document"
MAX_NAME_CHARS = 255
_ATTEMPTS = 4  # add or replace, when a concurrent upload or delete got there first
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_BLANK_RUNS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


def _check_name(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("must not be empty")
    if len(value) > MAX_NAME_CHARS:
        raise ValueError(f"must have at most {MAX_NAME_CHARS} characters")
    if _CONTROL.search(value) or "\n" in value or "\r" in value or "\t" in value:
        raise ValueError("must not contain control characters")
    return value


def _file_name(value: str) -> str:
    # a path is reduced to its last part: the name, not where the file was on a disk
    return _check_name(re.split(r"[\\/]", value.strip())[-1])


FileName = Annotated[str, AfterValidator(_file_name)]
DocumentId = Annotated[str, AfterValidator(_check_name)]


class StoreDocumentCommand(BaseModel):
    """POST /v1/documents: one file to remember, as bytes (the edge decodes the request)."""

    model_config = ConfigDict(extra="forbid")

    user_id: Identifier = Field(description="whose memory this is")
    file_name: FileName = Field(description="the file's name, e.g. vendor-contract.pdf")
    data: bytes = Field(repr=False, description="the file's bytes")
    content_type: str | None = Field(
        default=None,
        max_length=200,
        description="the file's media type; default: from the file name's extension",
    )
    document_id: DocumentId | None = Field(
        default=None,
        description="what the document is known by; storing it again replaces it. "
        "Default: the file name",
    )
    scope: Identifier | None = None
    session_id: Identifier | None = None
    occurred_at: AwareDatetime | None = Field(
        default=None, description="when the document was shared or written; default now"
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    category: Label | None = Field(default=None, description=f"default '{DEFAULT_CATEGORY}'")

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        if DOCUMENT_KEY in value:
            raise ValueError(
                f"'{DOCUMENT_KEY}' is reserved for the file's description; use another key"
            )
        try:
            encoded = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise ValueError("must be a JSON object") from exc
        if len(encoded.encode()) > MAX_METADATA_BYTES:
            raise ValueError(f"must be at most {MAX_METADATA_BYTES} bytes as JSON")
        return value

    @property
    def key(self) -> str:
        return self.document_id or self.file_name


class DocumentOutcome(BaseModel):
    """What storing a document did."""

    status: Literal["success", "updated", "unchanged"] = Field(
        description="success: stored as a new memory; updated: the memory of this "
        "document_id was replaced; unchanged: the same text and fields were already stored"
    )
    memory_id: str
    document_id: str
    file_name: str
    content_type: str = Field(description="what the file was read as")
    characters: int = Field(description="length of the text stored")
    chunks: int | None = Field(
        default=None, description="how many chunks the text is searched by (1: whole)"
    )
    redacted: list[RedactionCount] | None = Field(
        default=None,
        description="secrets found in the text and replaced by typed placeholders "
        "([REDACTED:<type>]) before anything was stored, counted by type",
    )


def document_memory_id(tenant_id: str, user_id: str, scope: str, document_id: str) -> str:
    """The memory id of a document: the same for the same (tenant, user, scope, id)."""
    key = "\x1f".join(("document", tenant_id, user_id, scope, document_id))
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return "mem_doc_" + base64.b32encode(digest[:20]).decode("ascii")


def clean_text(text: str) -> str:
    """Line ends unified, page breaks as paragraph breaks, control characters and runs of
    blank lines dropped, trailing spaces trimmed: the text as a reader sees it."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")
    text = _CONTROL.sub("", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _BLANK_RUNS.sub("\n\n", text).strip()


class StoreDocument:
    """Convert a file to text and store it as one memory, or replace the memory of its
    ``document_id``. Everything is checked before anything is written."""

    def __init__(
        self,
        records: RecordStore,
        writer: MemoryWriter,
        embedder: Embedder,
        converter: DocumentConverter,
        clock: Clock,
        max_document_bytes: int = 4 * 1_048_576,
        max_content_chars: int = 100_000,
        chunk_sizes: ChunkSizes = DEFAULT_CHUNK_SIZES,
        secrets: SecretScreen = DEFAULT_SECRET_SCREEN,
    ) -> None:
        self.records = records
        self.writer = writer
        self.embedder = embedder
        self.secrets = secrets
        self.converter = converter
        self.clock = clock
        self.max_document_bytes = max_document_bytes
        self.max_content_chars = max_content_chars
        self.chunk_sizes = chunk_sizes

    def __call__(self, principal: Principal, command: StoreDocumentCommand) -> DocumentOutcome:
        scope = command.scope or principal.default_scope
        require_write(principal, scope)
        converted, text = self._read(command)
        screened = self.secrets.screen((text,), principal.secrets, command.file_name)
        text = screened.texts[0] or text
        memory = self._build_memory(principal, command, scope, converted, text)
        embedded: list[StoredVector] = []
        for _ in range(_ATTEMPTS):
            existing = self._stored(memory)
            try:
                if existing is None:
                    outcome = self._add(memory, embedded)
                elif self._unchanged(existing, memory, command.occurred_at):
                    outcome = self._outcome("unchanged", existing, command, converted)
                else:
                    outcome = self._replace(existing, memory, command.occurred_at, embedded)
            except (ConflictError, NotFoundError):
                # another upload created it, or a delete removed it, in between: look again
                continue
            if screened.counts:
                outcome = outcome.model_copy(update={"redacted": screened.redacted})
            logger.info(
                "document stored tenant=%s status=%s chars=%d chunks=%s",
                principal.tenant_id,
                outcome.status,
                outcome.characters,
                outcome.chunks,
            )
            return outcome
        raise UnavailableError(
            f"document {command.key!r} kept changing while it was being stored (concurrent "
            "uploads or deletes); retry in a moment"
        )

    # --- reading -----------------------------------------------------------------------
    def _read(self, command: StoreDocumentCommand) -> tuple[ConvertedDocument, str]:
        size = len(command.data)
        if size > self.max_document_bytes:
            raise PayloadTooLargeError(
                f"{command.file_name} is {size:,} bytes; the limit is "
                f"{self.max_document_bytes:,} bytes (HINDSIGHT_MAX_DOCUMENT_BYTES). Send a "
                "smaller file or only its text, or raise the limit on the server"
            )
        if size == 0:
            raise UnreadableDocumentError(f"{command.file_name} is empty; send the file's bytes")
        converted = self.converter.convert(command.data, command.file_name, command.content_type)
        text = clean_text(converted.text)
        if not text:
            raise UnreadableDocumentError(
                f"{command.file_name} holds no text to remember ({converted.media_type}); "
                "send a file with text in it"
            )
        if len(text) > self.max_content_chars:
            raise PayloadTooLargeError(
                f"{command.file_name} is {len(text):,} characters as text; the limit is "
                f"{self.max_content_chars:,} (HINDSIGHT_MAX_CONTENT_CHARS). Split the document "
                "into parts stored under their own document_id, or raise the limit on the server"
            )
        return converted, text

    def _build_memory(
        self,
        principal: Principal,
        command: StoreDocumentCommand,
        scope: str,
        converted: ConvertedDocument,
        text: str,
    ) -> EpisodicMemory:
        now = self.clock.now()
        occurred_at = command.occurred_at or now
        if occurred_at > now + MAX_FUTURE_SKEW:
            raise InvalidRequestError(
                "occurred_at is more than a day in the future; send when the document was "
                "shared or written (ISO 8601 with a timezone), or omit it for now"
            )
        description = {
            "document_id": command.key,
            "file_name": command.file_name,
            "content_type": converted.media_type,
            "bytes": len(command.data),
            "converter": converted.converter,
        }
        return EpisodicMemory(
            memory_id=document_memory_id(principal.tenant_id, command.user_id, scope, command.key),
            tenant_id=principal.tenant_id,
            user_id=command.user_id,
            scope=scope,
            content=text,
            category=command.category or DEFAULT_CATEGORY,
            metadata={**command.metadata, DOCUMENT_KEY: description},
            occurred_at=occurred_at,
            created_at=now,
            updated_at=now,
            session_id=command.session_id,
            event_time=resolve_time_expressions(text, occurred_at),
            content_hash=content_hash(text),
        )

    # --- writing -----------------------------------------------------------------------
    def _stored(self, memory: EpisodicMemory) -> EpisodicMemory | None:
        """The memory this document already has, if any."""
        existing = self.records.get(memory.tenant_id, memory.memory_id)
        if existing is not None and not isinstance(existing, EpisodicMemory):
            raise HindsightError(f"memory {memory.memory_id} is not a document's; report this")
        return existing

    def _vector(self, memory: EpisodicMemory, embedded: list[StoredVector]) -> StoredVector:
        """The memory's vector (every chunk), embedded once however often the write is tried."""
        if not embedded:
            embedded.extend(embed_memories(self.embedder, [memory], self.chunk_sizes))
        return embedded[0]

    def _add(self, memory: EpisodicMemory, embedded: list[StoredVector]) -> DocumentOutcome:
        vector = self._vector(memory, embedded)
        self.writer.add([NewRecord(memory, vector)])
        return self._written("success", memory, vector)

    def _replace(
        self,
        existing: EpisodicMemory,
        memory: EpisodicMemory,
        occurred_at: datetime | None,
        embedded: list[StoredVector],
    ) -> DocumentOutcome:
        update: dict[str, Any] = {"created_at": existing.created_at}
        vector: StoredVector | None = None
        if existing.content == memory.content:
            # the same text with other fields: keep its time unless given, and its vectors
            if occurred_at is None:
                update["occurred_at"] = existing.occurred_at
                update["event_time"] = existing.event_time
            stored = self.records.get_vectors(memory.tenant_id, [memory.memory_id])
            vector = stored.get(memory.memory_id)
            if vector is not None and vector.model != self.embedder.model_name:
                vector = None
        replacement = memory.model_copy(update=update)
        if vector is None:
            vector = self._vector(replacement, embedded)
        self.writer.replace(NewRecord(replacement, vector))
        return self._written("updated", replacement, vector)

    @staticmethod
    def _unchanged(
        existing: EpisodicMemory, memory: EpisodicMemory, occurred_at: datetime | None
    ) -> bool:
        return (
            existing.content == memory.content
            and existing.category == memory.category
            and existing.metadata == memory.metadata
            and existing.session_id == memory.session_id
            and (occurred_at is None or existing.occurred_at == memory.occurred_at)
        )

    @staticmethod
    def _written(
        status: Literal["success", "updated"], memory: EpisodicMemory, vector: StoredVector
    ) -> DocumentOutcome:
        description = memory.metadata[DOCUMENT_KEY]
        return DocumentOutcome(
            status=status,
            memory_id=memory.memory_id,
            document_id=description["document_id"],
            file_name=description["file_name"],
            content_type=description["content_type"],
            characters=len(memory.content),
            chunks=len(vector.spans) or 1,
        )

    @staticmethod
    def _outcome(
        status: Literal["unchanged"],
        existing: EpisodicMemory,
        command: StoreDocumentCommand,
        converted: ConvertedDocument,
    ) -> DocumentOutcome:
        return DocumentOutcome(
            status=status,
            memory_id=existing.memory_id,
            document_id=command.key,
            file_name=command.file_name,
            content_type=converted.media_type,
            characters=len(existing.content),
        )
