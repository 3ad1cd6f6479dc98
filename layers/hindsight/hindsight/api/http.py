"""What the four Lambda handlers share: the resolver, error mapping, request parsing.

``build_resolver()`` makes an ``APIGatewayRestResolver`` whose exception handlers turn
every failure into ``{"status": "error", "message": ...}`` with the right HTTP code:
``HindsightError`` subclasses get theirs from the table in ``hindsight.api.errors``;
pydantic and Powertools validation errors become 422 with one readable phrase per bad
field; unknown routes 404; anything unexpected 500 with a generic message (the details
go to the log).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from datetime import date, datetime
from enum import Enum
from http import HTTPStatus
from pathlib import Path
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as RouteNotFoundError
from aws_lambda_powertools.event_handler.exceptions import ServiceError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from pydantic import BaseModel, TypeAdapter, ValidationError

from hindsight.api.auth import authenticate
from hindsight.api.errors import headers_for, status_for
from hindsight.api.observability import MetricUnit, logger, metrics
from hindsight.bootstrap import get_settings
from hindsight.core.commands import Identifier, body_too_large, max_body_bytes
from hindsight.core.errors import (
    HindsightError,
    InvalidRequestError,
    MalformedRequestError,
    PayloadTooLargeError,
)
from hindsight.core.models import Principal

GENERIC_ERROR_MESSAGE = (
    "internal error; the request may not have completed — retry, and if it keeps failing "
    "report the time and request id to the operator"
)

ModelT = TypeVar("ModelT", bound=BaseModel)


# --- JSON ----------------------------------------------------------------------------
def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def to_json(body: Any) -> str:
    """Compact JSON, non-ASCII kept readable (Chinese stays Chinese)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def error_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response[dict[str, Any]]:
    return Response(
        status_code=int(status),
        content_type=content_types.APPLICATION_JSON,
        body={"status": "error", "message": message},
        headers=dict(headers) if headers else None,
    )


def success(body: Mapping[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """``{"status": "success", ...}``; the status cannot be overwritten by the fields."""
    merged = {**(body or {}), **fields}
    merged.pop("status", None)
    return {"status": "success", **merged}


# --- readable validation errors --------------------------------------------------------
def _location(loc: tuple[Any, ...] | list[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _kinds(*kinds: str, reason: str) -> dict[str, str]:
    return dict.fromkeys(kinds, reason)


# pydantic error type -> the phrase a caller can act on
_REASONS: dict[str, str] = {
    "missing": "field required",
    "extra_forbidden": "unknown field; remove it (check the spelling)",
    **_kinds("string_type", "string_sub_type", reason="must be a string"),
    **_kinds("int_type", "int_parsing", "int_from_float", reason="must be an integer"),
    **_kinds("float_type", "float_parsing", "finite_number", reason="must be a number"),
    **_kinds("bool_type", "bool_parsing", reason="must be true or false"),
    **_kinds("list_type", "tuple_type", "set_type", "frozen_set_type", reason="must be a list"),
    **_kinds("dict_type", "model_type", "model_attributes_type", reason="must be a JSON object"),
    "string_pattern_mismatch": "has characters or a form that is not allowed",
}
# pydantic error type -> (phrase with one blank, the ctx entry that fills it)
_BOUNDED_REASONS: dict[str, tuple[str, str]] = {
    "string_too_long": ("must have at most {} characters", "max_length"),
    "too_long": ("must have at most {} items", "max_length"),
    "string_too_short": ("must have at least {} character(s)", "min_length"),
    "too_short": ("must have at least {} item(s)", "min_length"),
    "less_than_equal": ("must be ≤ {}", "le"),
    "less_than": ("must be < {}", "lt"),
    "greater_than_equal": ("must be ≥ {}", "ge"),
    "greater_than": ("must be > {}", "gt"),
    "enum": ("must be one of {}", "expected"),
    "literal_error": ("must be one of {}", "expected"),
}
_DATETIME_REASON = "must be an ISO 8601 date-time such as 2026-06-01T09:00:00Z"
_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def _reason(error: Mapping[str, Any]) -> str:
    kind = str(error.get("type", ""))
    if kind in _REASONS:
        return _REASONS[kind]
    if kind in _BOUNDED_REASONS:
        template, key = _BOUNDED_REASONS[kind]
        return template.format((error.get("ctx") or {}).get(key))
    if kind.startswith(("datetime", "date_")):
        return _DATETIME_REASON
    message = str(error.get("msg", "is invalid"))
    for prefix in _PYDANTIC_PREFIXES:
        if message.startswith(prefix):
            message = message[len(prefix) :]
    return message


def readable_errors(errors: list[Any] | tuple[Any, ...], *, source_prefixed: bool = False) -> str:
    """``"content: field required; top_k: must be ≤ 20"``: one phrase per problem.

    ``source_prefixed``: locations start with where the value came from ("body",
    "query", "path"), as in Powertools' own validation errors; that part is dropped.
    """
    phrases: list[str] = []
    for error in errors:
        loc = tuple(error.get("loc", ()))
        if source_prefixed and len(loc) > 1 and loc[0] in {"body", "query", "path", "header"}:
            loc = loc[1:]
        where = _location(loc)
        reason = _reason(error)
        phrase = f"{where}: {reason}" if where else reason
        if phrase not in phrases:
            phrases.append(phrase)
    return "; ".join(phrases) or "the request is invalid"


# --- request parsing -----------------------------------------------------------------
def raw_body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body")
    if body is None:
        return b""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise MalformedRequestError(
                "the request body is marked base64 but is not valid base64; send JSON"
            ) from exc
    return str(body).encode("utf-8", errors="surrogatepass")


def body_limit() -> int:
    """The request body limit in force: it follows HINDSIGHT_MAX_CONTENT_CHARS."""
    from hindsight.bootstrap import get_settings

    return max_body_bytes(get_settings().max_content_chars)


def json_body(event: Mapping[str, Any]) -> dict[str, Any]:
    """The body of a proxy event as a JSON object (see ``json_object``)."""
    return json_object(raw_body(event))


def json_object(raw: bytes) -> dict[str, Any]:
    """A request body as a JSON object: 413 if over the limit, 400 if not a JSON object."""
    limit = body_limit()
    if len(raw) > limit:
        raise PayloadTooLargeError(body_too_large(len(raw), limit))
    if not raw.strip():
        raise MalformedRequestError(
            "the request body is empty; send a JSON object (Content-Type: application/json)"
        )
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MalformedRequestError("the request body is not UTF-8; send UTF-8 JSON") from exc
    except json.JSONDecodeError as exc:
        raise MalformedRequestError(
            f"the request body is not valid JSON ({exc.msg} at line {exc.lineno} column "
            f"{exc.colno}); send a JSON object"
        ) from exc
    if not isinstance(data, dict):
        raise MalformedRequestError(
            f"the request body must be a JSON object, not {type(data).__name__}; "
            'send e.g. {"user_id": "u1", ...}'
        )
    return data


def parse_model(model: type[ModelT], data: Mapping[str, Any]) -> ModelT:
    """Validate into a command; pydantic errors become a readable 422."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise InvalidRequestError(readable_errors(exc.errors())) from exc


_identifier = TypeAdapter(Identifier)


def path_identifier(name: str, value: str) -> str:
    """A path parameter checked like an id in a body (422 naming the parameter)."""
    try:
        return _identifier.validate_python(value)
    except ValidationError as exc:
        raise InvalidRequestError(
            f"{name}: {_reason(exc.errors()[0]) if exc.errors() else 'is invalid'}"
        ) from exc


def current_principal(app: APIGatewayRestResolver) -> Principal:
    """Who is calling (401 when nobody valid); appends tenant and key id to the logs."""
    event = app.current_event.raw_event
    authorizer = (event.get("requestContext") or {}).get("authorizer")
    principal = authenticate(event.get("headers"), authorizer, get_settings())
    logger.append_keys(tenant_id=principal.tenant_id, key_id=principal.key_id)
    return principal


def _count_error(status: int) -> None:
    name = "ServerErrors" if int(status) >= 500 else "ClientErrors"
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


# --- the resolver --------------------------------------------------------------------
def build_resolver() -> APIGatewayRestResolver:
    """A REST (v1 proxy) resolver with Hindsight's error responses registered."""
    app = APIGatewayRestResolver(serializer=to_json)

    @app.exception_handler(HindsightError)
    def _domain_error(error: HindsightError) -> Response[dict[str, Any]]:
        status = status_for(error)
        if status >= 500:
            # the operator's log says what to fix (a misconfiguration names its setting)
            logger.warning(
                "request failed", status=status, error=type(error).__name__, reason=error.message
            )
        else:
            logger.info("request refused", status=status, error=type(error).__name__)
        _count_error(status)
        return error_response(status, error.message, headers_for(error))

    @app.exception_handler(ValidationError)
    def _pydantic_error(error: ValidationError) -> Response[dict[str, Any]]:
        _count_error(HTTPStatus.UNPROCESSABLE_ENTITY)
        return error_response(HTTPStatus.UNPROCESSABLE_ENTITY, readable_errors(error.errors()))

    @app.exception_handler(RequestValidationError)
    def _powertools_validation_error(error: RequestValidationError) -> Response[dict[str, Any]]:
        _count_error(HTTPStatus.UNPROCESSABLE_ENTITY)
        return error_response(
            HTTPStatus.UNPROCESSABLE_ENTITY,
            readable_errors(list(error.errors()), source_prefixed=True),
        )

    @app.not_found
    def _unknown_route(_: RouteNotFoundError) -> Response[dict[str, Any]]:
        event = app.current_event
        _count_error(HTTPStatus.NOT_FOUND)
        from hindsight.api.nearest_route import not_found_message

        return error_response(
            HTTPStatus.NOT_FOUND, not_found_message(event.http_method, event.path)
        )

    @app.exception_handler(ServiceError)
    def _service_error(error: ServiceError) -> Response[dict[str, Any]]:
        _count_error(error.status_code)
        return error_response(error.status_code, str(error.msg))

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response[dict[str, Any]]:
        logger.exception("unexpected error", error=type(error).__name__)
        _count_error(HTTPStatus.INTERNAL_SERVER_ERROR)
        return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, GENERIC_ERROR_MESSAGE)

    return app
