"""Ids sort in creation order, also when many are made in one millisecond."""

from __future__ import annotations

from ulid import ULID

from hindsight.adapters.system import UlidGenerator


def test_ids_made_in_a_burst_sort_in_creation_order() -> None:
    generator = UlidGenerator()
    ids = [generator.new_id("mem") for _ in range(20_000)]  # many per millisecond
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("mem_") and ULID.from_str(i[4:]) for i in ids)
