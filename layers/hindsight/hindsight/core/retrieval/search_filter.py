"""What retrieve searches: the index filter of a command, and the moments it reads."""

from __future__ import annotations

from datetime import datetime

from hindsight.core.access import readable_scopes
from hindsight.core.commands import RetrieveCommand
from hindsight.core.models import FactStatus, Principal, SearchFilter, TimeRange
from hindsight.core.retrieval.states import reference_time


def query_reference(
    command: RetrieveCommand, as_of: datetime, query_time: TimeRange | None
) -> datetime:
    """The moment the query asks about (``core/retrieval/states.reference_time``)."""
    start, end = (query_time.start, query_time.end) if query_time else (None, None)
    return reference_time(command.query, as_of, start, end)[0]


def checks_validity(command: RetrieveCommand) -> bool:
    """Whether facts are kept to those valid at ``as_of``: reads of what holds
    (``current_only``) at an explicit past moment, without explicit statuses."""
    return command.current_only and command.as_of is not None and not command.statuses


def statuses(command: RetrieveCommand) -> frozenset[FactStatus]:
    """Fact statuses searched: the command's; approved, and superseded ones too when they
    may have held at an explicit ``as_of`` or when not only the current are asked for."""
    if command.statuses:
        return frozenset(command.statuses)
    if not command.current_only or command.as_of is not None:
        return frozenset({FactStatus.APPROVED, FactStatus.SUPERSEDED})
    return frozenset({FactStatus.APPROVED})


def search_filter(principal: Principal, command: RetrieveCommand, as_of: datetime) -> SearchFilter:
    """What the index filters by: the tenant, the user, the scopes the key may read, the
    command's filters, approved facts unless other statuses are asked for, and expiry."""
    return SearchFilter(
        tenant_id=principal.tenant_id,
        user_id=command.user_id,
        scopes=readable_scopes(principal, command.scopes),
        kinds=frozenset(command.kinds) if command.kinds else None,
        categories=frozenset(command.categories) if command.categories else None,
        emotions=frozenset(command.emotions) if command.emotions else None,
        statuses=statuses(command),
        since=command.since,
        until=command.until,
        now=as_of,
        session_id=command.session_id,
    )
