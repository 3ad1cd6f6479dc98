"""A key that reads only some scopes must not hide the other scopes' episodes from later
reflections (the user's cursor is a low-water mark; scope cursors record partial runs)."""

from __future__ import annotations

import pytest

from hindsight.core.commands import ReflectCommand, StoreMemoryCommand
from hindsight.core.errors import ForbiddenError
from hindsight.core.models import Principal


@pytest.fixture
def calendar(principal: Principal) -> Principal:
    return Principal(
        tenant_id=principal.tenant_id,
        key_id="calendar",
        read_scopes=frozenset({"calendar"}),
        write_scopes=frozenset({"calendar"}),
        default_scope="calendar",
    )


def store(service, principal, content, scope):
    command = StoreMemoryCommand(user_id="u1", content=content, scope=scope)
    return service.store(principal, command).memory_id


def reflect(service, principal):
    return service.reflect(principal, ReflectCommand(user_id="u1"))


def test_a_scoped_reflection_leaves_other_scopes_to_a_later_one(
    service, principal, calendar, reflector, clock
):
    work = store(service, principal, "I am allergic to peanuts", "work")
    clock.advance(seconds=1)
    meeting = store(service, calendar, "dentist on Friday at 3", "calendar")
    assert reflect(service, calendar).episodes_considered == 1
    assert reflector.calls[-1] == [meeting]
    # the admin reflection still sees the work episode, and not the calendar one again
    assert reflect(service, principal).episodes_considered == 1
    assert reflector.calls[-1] == [work]
    assert reflect(service, principal).episodes_considered == 0
    assert reflect(service, calendar).episodes_considered == 0


def test_scoped_runs_never_reflect_an_episode_twice(service, principal, calendar, reflector, clock):
    work = store(service, principal, "work note one", "work")
    clock.advance(seconds=1)
    one = store(service, calendar, "calendar one", "calendar")
    reflect(service, calendar)
    clock.advance(seconds=1)
    later = store(service, calendar, "calendar two", "calendar")
    # the cursor stayed before the unread work episode; the calendar cursor skips "one"
    assert reflect(service, calendar).episodes_considered == 1
    assert reflector.calls[-1] == [later]
    seen = [memory_id for call in reflector.calls for memory_id in call]
    assert sorted(seen) == sorted([one, later])
    reflect(service, principal)
    seen = [memory_id for call in reflector.calls for memory_id in call]
    assert sorted(seen) == sorted([one, later, work])


def test_episodes_created_at_the_same_moment_as_an_unread_one(
    service, principal, calendar, reflector
):
    # the fixed clock gives both the same created_at: the cursor may not pass the work one
    work = store(service, principal, "work at noon", "work")
    store(service, calendar, "calendar at noon", "calendar")
    assert reflect(service, calendar).episodes_considered == 1
    assert reflect(service, principal).episodes_considered == 1
    assert reflector.calls[-1] == [work]


def test_only_unreadable_new_episodes_is_still_forbidden(service, principal, calendar):
    store(service, principal, "work only", "work")
    with pytest.raises(ForbiddenError):
        reflect(service, calendar)
