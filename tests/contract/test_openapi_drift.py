"""The committed OpenAPI document, the code's models and the served routes agree.

Fails when a request or response model changes without `make openapi`, when a route is
added to template.yaml or a function's resolver without an entry in
``hindsight.api.operations`` (or the other way round), or when an error answer is
documented in another shape than ``{"status": "error", "message"}``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from hindsight.api.errors import STATUS_BY_ERROR
from hindsight.api.openapi import COMMITTED_PATH, build_document, main, render
from hindsight.api.operations import OPERATIONS
from hindsight.gateway.lambda_emulation import load_function_module
from hindsight.gateway.template import find_template, routes_from_template

ROOT = Path(__file__).resolve().parents[2]
METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return build_document()


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    return json.loads(COMMITTED_PATH.read_text(encoding="utf-8"))


def operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): op
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in METHODS
    }


def test_the_committed_document_is_what_the_code_generates(document: dict[str, Any]) -> None:
    committed_text = COMMITTED_PATH.read_text(encoding="utf-8")
    assert committed_text == render(document), (
        f"{COMMITTED_PATH.relative_to(ROOT)} is stale: the models or the operation table "
        "changed; regenerate it with `make openapi` and commit it"
    )


def test_check_mode_reports_a_stale_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["--check"]) == 0
    stale = tmp_path / "openapi.json"
    stale.write_text('{"openapi": "3.1.0"}\n', encoding="utf-8")
    monkeypatch.setattr("hindsight.api.openapi.COMMITTED_PATH", stale)
    assert main(["--check"]) == 1


def test_it_is_a_valid_openapi_3_1_document(committed: dict[str, Any]) -> None:
    assert committed["openapi"].startswith("3.1")
    validate(committed)  # raises with the first problem


def test_every_route_of_the_template_is_documented_and_nothing_else(
    document: dict[str, Any],
) -> None:
    served = {
        (route.method, route.resource): route.function.code_dir.name
        for route in routes_from_template(find_template(ROOT / "template.yaml"))
    }
    documented = {(op.method, op.path): op.function for op in OPERATIONS}
    assert documented == served
    assert set(operations(document)) == set(served)


def _resolver_routes(function: str) -> dict[tuple[str, str], str]:
    """(method, path) -> route function name, as the function's Powertools resolver has them."""
    module = load_function_module(ROOT / "functions", function, f"openapi_drift_{function}")
    app = getattr(module, "app", None)
    routes = getattr(app, "_static_routes", []) + getattr(app, "_dynamic_routes", [])
    return {
        (route.method.upper(), re.sub(r"<(\w+)>", r"{\1}", route.path)): route.func.__name__
        for route in routes
    }


@pytest.mark.parametrize("function", sorted({op.function for op in OPERATIONS}))
def test_each_operation_id_names_the_route_function_that_answers_it(function: str) -> None:
    resolver = _resolver_routes(function)
    documented = {
        (op.method, op.path): op.operation_id for op in OPERATIONS if op.function == function
    }
    if not resolver:  # the MCP function hands the whole request to the MCP transport
        assert function == "mcp" and set(documented) == {("POST", "/mcp")}
        return
    assert documented == resolver


def test_every_error_answer_has_the_error_shape(committed: dict[str, Any]) -> None:
    schemas = committed["components"]["schemas"]
    for (method, path), op in operations(committed).items():
        for status, response in op["responses"].items():
            if int(status) < 400:
                continue
            if "$ref" in response:
                response = committed["components"]["responses"][response["$ref"].split("/")[-1]]
            ref = response["content"]["application/json"]["schema"]["$ref"]
            schema = schemas[ref.split("/")[-1]]
            if path == "/mcp" and status in {"400", "406"}:  # the MCP transport's own answers
                assert set(schema["required"]) == {"jsonrpc", "id", "error"}
                continue
            assert schema["properties"]["status"]["const"] == "error", (method, path, status)
            assert schema["properties"]["message"]["type"] == "string"
            assert {"status", "message"} <= set(schema["required"])
            assert response["description"], (method, path, status)


def test_every_status_the_code_can_answer_is_documented(committed: dict[str, Any]) -> None:
    shared = committed["components"]["responses"]
    assert {f"Error{int(status)}" for status in STATUS_BY_ERROR.values()} <= set(shared)
    for (method, path), op in operations(committed).items():
        statuses = {int(s) for s in op["responses"]}
        assert {429, 500} <= statuses, (method, path)
        if op["security"]:
            assert {401, 403} <= statuses, (method, path)
        if "requestBody" in op:
            assert {400, 413, 422} <= statuses, (method, path)
        if "{" in path:
            assert {404, 422} <= statuses, (method, path)


def test_public_routes_are_the_ones_the_template_leaves_without_a_key(
    committed: dict[str, Any],
) -> None:
    public = {key for key, op in operations(committed).items() if op["security"] == []}
    assert public == {
        ("GET", "/v1/health"),
        ("GET", "/v1/openapi.json"),
        ("GET", "/docs"),
        ("GET", "/explorer"),  # the explorer's page and files: it calls the API with a key
        ("GET", "/explorer/assets/{name}"),
    }


def test_request_schemas_refuse_unknown_fields_and_name_their_limits(
    committed: dict[str, Any],
) -> None:
    schemas = committed["components"]["schemas"]
    store = schemas["StoreMemoryCommand"]
    assert store["additionalProperties"] is False
    assert set(store["required"]) == {"user_id", "content"}
    retrieve = schemas["RetrieveCommand"]["properties"]
    assert retrieve["top_k"]["maximum"] == 20
    assert schemas["StoreBatchCommand"]["properties"]["items"]["maxItems"] == 100
