"""One table of routes: every operation of the API has exactly one route function,
named like its operation id, and both entry points find it there."""

from __future__ import annotations

from hindsight.api.operations import OPERATIONS
from hindsight.api.route_calls import RouteRequest
from hindsight.api.routes import ROUTES, TRANSPORT_OPERATIONS, parse_input


def test_every_operation_but_the_transports_has_its_route_function() -> None:
    ids = {op.operation_id for op in OPERATIONS}
    assert set(ROUTES) == ids - TRANSPORT_OPERATIONS
    assert ids >= TRANSPORT_OPERATIONS
    for operation_id, spec in ROUTES.items():
        assert spec.function.__name__ == operation_id


def test_no_operation_has_more_than_one_path_parameter() -> None:
    # parse_input reads one identifier from the path; a second would need a model
    assert all(len(op.path_parameters) <= 1 for op in OPERATIONS)


def test_path_identifiers_and_query_models_are_parsed_from_the_table() -> None:
    by_id = {op.operation_id: op for op in OPERATIONS}
    get = by_id["get_memory"]
    assert parse_input(get, RouteRequest({}, path_params={"memory_id": "mem_1"})) == "mem_1"
    listing = by_id["list_memories"]
    command = parse_input(
        listing, RouteRequest({}, query={"limit": "2"}, path_params={"user_id": "u1"})
    )
    assert command.user_id == "u1" and command.limit == 2
