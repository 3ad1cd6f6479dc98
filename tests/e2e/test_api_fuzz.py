"""Schemathesis against both local servers, with the OpenAPI document they serve.

For each server kind (``hindsight serve``, the ASGI application; ``hindsight serve
--gateway``, the template-driven gateway running the real Lambda handlers), on a fresh
embedded store with a full-scope key:

- stateless: every operation of ``GET /v1/openapi.json`` gets schema-valid cases
  (positive) and schema-violating ones (negative); no answer is a 5xx, every status is
  documented, every body, header and Content-Type matches the document, and no request
  the document calls invalid is accepted;
- stateful: the document's links (a store's ``memory_id`` into read, patch, forget and
  restore; its ``user_id`` into listing and export) drive sequences of calls with the
  same checks.

Bounded and reproducible: hypothesis is derandomized (the same cases every run), the
example counts are fixed and each call has a timeout; ``POST /mcp`` is left to
``test_mcp_fuzz`` (it speaks JSON-RPC, which the document does not describe).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.stateful import run_state_machine_as_test
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from hindsight.api.openapi import build_document
from tests.e2e.conftest import E2E_KEY, SERVERS, Server, own_server

AUTH = {"Authorization": f"Bearer {E2E_KEY}"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,  # a request the document calls invalid must get a 4xx
]
CALL_TIMEOUT = 30  # seconds per request: a hung route fails the case instead of the run
EXAMPLES = {"positive": 12, "negative": 8}
STATEFUL_STEPS = 10
STATEFUL_EXAMPLES = 15
NOT_FUZZED = {"/mcp"}  # JSON-RPC inside, fuzzed through a real MCP client instead


def _cases() -> list[tuple[str, str, str]]:
    """(method, path, mode) of every fuzzed operation: negative cases only where there is
    an input to break (parameters or a body)."""
    cases = []
    for path, methods in build_document()["paths"].items():
        for method, spec in methods.items():
            if path in NOT_FUZZED:
                continue
            cases.append((method.upper(), path, "positive"))
            if spec.get("parameters") or spec.get("requestBody"):
                cases.append((method.upper(), path, "negative"))
    return sorted(cases)


def _settings(examples: int, **extra: Any) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,  # a case's time is bounded by CALL_TIMEOUT, not by hypothesis
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        **extra,
    )


@pytest.fixture(scope="module", params=SERVERS)
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    kind = str(request.param)
    with own_server(kind, tmp_path_factory.mktemp(f"hindsight-fuzz-{kind}")) as server:
        yield server


@pytest.fixture(scope="module")
def schema(running: Server) -> Any:
    """The document the server serves, as schemathesis sees it."""
    served = httpx.get(f"{running.url}/v1/openapi.json", timeout=CALL_TIMEOUT)
    assert served.status_code == 200, served.text
    loaded = schemathesis.openapi.from_dict(served.json())
    return loaded.exclude(path=sorted(NOT_FUZZED))


@pytest.fixture(scope="module")
def statuses(running: Server) -> Iterator[Counter[tuple[str, int]]]:
    """Every answer's ("METHOD /path", status), for this module's run on one server."""
    seen: Counter[tuple[str, int]] = Counter()
    yield seen
    print(f"\n{running.url}: {seen.total()} fuzzed calls, by status", _by_status(seen))


def _by_status(seen: Counter[tuple[str, int]]) -> dict[int, int]:
    totals: Counter[int] = Counter()
    for (_, status), count in seen.items():
        totals[status] += count
    return dict(sorted(totals.items()))


@pytest.mark.parametrize(("method", "path", "mode"), _cases())
def test_an_operation_answers_as_documented(
    running: Server,
    schema: Any,
    statuses: Counter[tuple[str, int]],
    method: str,
    path: str,
    mode: str,
) -> None:
    operation = schema[path][method]
    strategy = operation.as_strategy(generation_mode=schemathesis.GenerationMode(mode))
    here: Counter[int] = Counter()

    @given(case=strategy)
    @_settings(EXAMPLES[mode])
    def fuzz(case: schemathesis.Case) -> None:
        response = case.call_and_validate(
            base_url=running.url, headers=AUTH, checks=CHECKS, timeout=CALL_TIMEOUT
        )
        here[response.status_code] += 1
        statuses[(f"{method} {path}", response.status_code)] += 1

    fuzz()
    assert here.total() > 0
    assert not here.keys() & {401, 403}, f"the fuzz key was refused: {dict(here)}"
    if mode == "positive" and path == "/v1/memories":  # valid cases do reach the store
        assert here[201] > 0, dict(here)


def linked_machine(schema: Any, url: str, seen: Counter[tuple[str, int]]) -> type:
    """The document's state machine against ``url``, counting answers into ``seen``.

    Each scenario starts from the same store: what one stored (into users it names) is
    erased after it, so a replayed scenario sees the same answers (a store is not a
    duplicate the second time) and hypothesis draws the same steps."""
    users: set[str] = set()

    class Fuzz(schema.as_state_machine()):  # type: ignore[misc]
        def before_call(self, case: schemathesis.Case) -> None:
            if case.headers:  # keys are for the stateless run: a reused one changes answers
                case.headers.pop("Idempotency-Key", None)
            body = case.body if isinstance(case.body, dict) else {}
            if case.path.startswith("/v1/memories") and isinstance(body.get("user_id"), str):
                users.add(body["user_id"])

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"base_url": url, "headers": AUTH, "timeout": CALL_TIMEOUT}

        def validate_response(self, response: Any, case: schemathesis.Case, **kwargs: Any) -> None:
            seen[(f"{case.method} {case.path}", response.status_code)] += 1
            case.validate_response(response, checks=CHECKS)

        def teardown(self) -> None:
            _erase(url, users)
            users.clear()

    return Fuzz


def test_linked_calls_answer_as_documented(
    running: Server, schema: Any, statuses: Counter[tuple[str, int]]
) -> None:
    here: Counter[tuple[str, int]] = Counter()
    run_state_machine_as_test(
        linked_machine(schema, running.url, here),
        settings=_settings(STATEFUL_EXAMPLES, stateful_step_count=STATEFUL_STEPS),
    )
    statuses.update(here)
    # a memory id is found only by following a link from a store or a listing
    linked = sum(
        count
        for (call, status), count in here.items()
        if "{memory_id}" in call and 200 <= status < 300
    )
    print(f"\nstateful: {here.total()} calls, {linked} answered 2xx on a linked memory id")
    assert linked > 0, dict(here)


def _erase(url: str, users: set[str]) -> None:
    with httpx.Client(base_url=url, headers=AUTH, timeout=CALL_TIMEOUT) as http:
        for user in sorted(users):
            answer = http.delete(f"/v1/users/{quote(user, safe='')}")
            assert answer.status_code in {200, 404, 422}, answer.text
