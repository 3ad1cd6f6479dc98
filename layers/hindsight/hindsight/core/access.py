"""Access rules: which scopes a principal's key may read and write, and reading one memory."""

from __future__ import annotations

from collections.abc import Iterable

from hindsight.core.errors import ForbiddenError, NotFoundError
from hindsight.core.models import GLOBAL_SCOPE, Memory, Principal
from hindsight.core.ports import RecordStore


def readable_scopes(principal: Principal, requested: Iterable[str] | None) -> frozenset[str] | None:
    """The scopes a read may touch; None means every scope of the tenant.

    Asking for a scope the key may not read is an error, not a silent empty answer.
    """
    if requested:
        wanted = frozenset(requested)
        denied = sorted(s for s in wanted if not principal.can_read(s))
        if denied:
            raise ForbiddenError(
                f"this API key may not read scope(s) {', '.join(denied)}; "
                "ask for scopes your key allows or use a key that allows them"
            )
        return wanted
    if "*" in principal.read_scopes:
        return None
    return frozenset(principal.read_scopes | {GLOBAL_SCOPE})


def require_write(principal: Principal, scope: str) -> None:
    if not principal.can_write(scope):
        allowed = ", ".join(sorted(principal.write_scopes)) or "none"
        raise ForbiddenError(
            f"this API key may not write scope '{scope}' (it may write: {allowed}); "
            "omit scope to use the key's default or use a key that allows it"
        )


def load_readable(records: RecordStore, principal: Principal, memory_id: str) -> Memory:
    """A memory the principal may read, or NotFoundError / ForbiddenError."""
    memory = records.get(principal.tenant_id, memory_id)
    if memory is None:
        raise NotFoundError(f"memory {memory_id} was not found; check the id")
    if not principal.can_read(memory.scope):
        raise ForbiddenError(
            f"this API key may not read scope '{memory.scope}' of memory {memory_id}"
        )
    return memory
