"""template.yaml as the gateway reads it: the API routes and the functions behind them.

``find_template`` locates the SAM template, ``routes_from_template`` turns every
``AWS::Serverless::Function`` ``Api`` event into a ``Route`` (method, path template,
``FunctionSpec``), and ``stage_name`` reads the API's stage. CloudFormation short
tags (``!Ref``, ``!Sub``, ``!GetAtt`` ...) are read, never evaluated: a value that is
an intrinsic function cannot be resolved locally and its function is skipped.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from hindsight.gateway.errors import GatewayConfigError

logger = logging.getLogger(__name__)

TEMPLATE_ENV = "HINDSIGHT_TEMPLATE"


class _TemplateLoader(yaml.SafeLoader):
    """SafeLoader that reads CloudFormation short tags (!Ref, !Sub, !GetAtt, ...)."""


def _cfn_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_TemplateLoader.add_multi_constructor("!", _cfn_tag)


def load_template(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_TemplateLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise GatewayConfigError(f"cannot read the SAM template {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("Resources"), dict):
        raise GatewayConfigError(f"{path} has no Resources section; is it a SAM template?")
    return data


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    code_dir: Path
    handler: str
    timeout_seconds: float
    memory_mb: int


@dataclass(frozen=True)
class AuthorizerSpec:
    """A Lambda authorizer of an API: its function, and the API's customised refusals
    (``GatewayResponses``: kind such as ``UNAUTHORIZED`` -> status, JSON body template)."""

    function: FunctionSpec
    responses: dict[str, tuple[int, str]] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Route:
    method: str  # upper case, or ANY
    resource: str  # the template path, e.g. /v1/users/{user_id}/memories
    function: FunctionSpec
    pattern: re.Pattern[str] = field(compare=False)
    dynamic: bool = False
    authorizer: AuthorizerSpec | None = None  # the Lambda authorizer API Gateway runs first

    def match(self, path: str) -> dict[str, str] | None:
        found = self.pattern.match(path)
        if found is None:
            return None
        return {k: unquote(v) for k, v in found.groupdict().items()}


def _path_pattern(resource: str) -> tuple[re.Pattern[str], bool]:
    parts: list[str] = []
    dynamic = False
    for piece in re.split(r"(\{[^}]+\})", resource):
        if piece.startswith("{") and piece.endswith("}"):
            dynamic = True
            name = piece[1:-1]
            if name.endswith("+"):
                parts.append(f"(?P<{name[:-1]}>.+)")
            else:
                parts.append(f"(?P<{name}>[^/]+)")
        else:
            parts.append(re.escape(piece))
    return re.compile("^" + "".join(parts) + "$"), dynamic


def _literal(value: Any) -> Any:
    """A template value that is not an intrinsic function, else None."""
    return None if isinstance(value, dict) else value


def _function_spec(
    logical_id: str, resource: dict[str, Any], base: Path, globals_fn: dict[str, Any]
) -> FunctionSpec | None:
    props = resource.get("Properties") or {}
    code_uri = _literal(props.get("CodeUri", globals_fn.get("CodeUri")))
    handler = _literal(props.get("Handler", globals_fn.get("Handler")))
    if not isinstance(code_uri, str) or not isinstance(handler, str):
        logger.warning("skipping %s: CodeUri/Handler are not plain strings", logical_id)
        return None
    return FunctionSpec(
        logical_id=logical_id,
        code_dir=(base / code_uri).resolve(),
        handler=handler,
        timeout_seconds=float(_literal(props.get("Timeout", globals_fn.get("Timeout"))) or 3),
        memory_mb=int(_literal(props.get("MemorySize", globals_fn.get("MemorySize"))) or 128),
    )


def _api(template: dict[str, Any], api_ref: Any) -> dict[str, Any]:
    """The properties of the ``AWS::Serverless::Api`` an event's ``RestApiId`` names."""
    if not isinstance(api_ref, dict) or not isinstance(api_ref.get("Ref"), str):
        return {}
    api = template["Resources"].get(api_ref["Ref"]) or {}
    props = api.get("Properties") if isinstance(api, dict) else None
    return props if isinstance(props, dict) else {}


def _responses(api: dict[str, Any]) -> dict[str, tuple[int, str]]:
    """The API's ``GatewayResponses`` with a JSON body: kind -> (status, body)."""
    found: dict[str, tuple[int, str]] = {}
    for kind, response in (api.get("GatewayResponses") or {}).items():
        body = ((response or {}).get("ResponseTemplates") or {}).get("application/json")
        status = _literal((response or {}).get("StatusCode"))
        if isinstance(body, str) and status is not None:
            found[str(kind)] = (int(status), body)
    return found


def _authorizer_function(auth: dict[str, Any], name: str) -> str | None:
    """The logical id of the function behind the named Lambda authorizer."""
    spec = (auth.get("Authorizers") or {}).get(name) or {}
    arn = spec.get("FunctionArn")
    if isinstance(arn, dict) and isinstance(arn.get("Fn::GetAtt"), list):
        return str(arn["Fn::GetAtt"][0])
    return None


def _event_authorizer(
    template: dict[str, Any], event_props: dict[str, Any], specs: dict[str, FunctionSpec]
) -> AuthorizerSpec | None:
    """The authorizer API Gateway runs before this event's function (None: no key)."""
    api = _api(template, event_props.get("RestApiId"))
    found = api.get("Auth")
    auth: dict[str, Any] = found if isinstance(found, dict) else {}
    name = ((event_props.get("Auth") or {}).get("Authorizer")) or auth.get("DefaultAuthorizer")
    if not isinstance(name, str) or name == "NONE":
        return None
    logical_id = _authorizer_function(auth, name)
    function = specs.get(logical_id) if logical_id else None
    return AuthorizerSpec(function, _responses(api)) if function else None


def routes_from_template(template_path: Path) -> list[Route]:
    """Every Api event of every serverless function, static paths before dynamic ones."""
    template = load_template(template_path)
    base = template_path.parent
    globals_fn = (template.get("Globals") or {}).get("Function") or {}
    functions = {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::Function"
    }
    specs = {
        logical_id: spec
        for logical_id, resource in functions.items()
        if (spec := _function_spec(logical_id, resource, base, globals_fn)) is not None
    }
    routes: list[Route] = []
    for logical_id, spec in specs.items():
        for event in ((functions[logical_id].get("Properties") or {}).get("Events") or {}).values():
            if not isinstance(event, dict) or event.get("Type") != "Api":
                continue
            event_props = event.get("Properties") or {}
            path, method = event_props.get("Path"), event_props.get("Method")
            if not isinstance(path, str) or not isinstance(method, str):
                continue
            pattern, dynamic = _path_pattern(path)
            authorizer = _event_authorizer(template, event_props, specs)
            routes.append(Route(method.upper(), path, spec, pattern, dynamic, authorizer))
    if not routes:
        raise GatewayConfigError(f"{template_path} defines no functions with Api events")
    return sorted(routes, key=lambda r: (r.dynamic, -len(r.resource)))


def stage_name(template_path: Path) -> str:
    """The StageName of the template's ``AWS::Serverless::Api`` ("local" if none)."""
    template = load_template(template_path)
    for resource in template["Resources"].values():
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::Api":
            stage = _literal((resource.get("Properties") or {}).get("StageName"))
            if isinstance(stage, str) and stage:
                return stage
    return "local"


def find_template(explicit: str | Path | None = None) -> Path:
    """template.yaml: explicit path, $HINDSIGHT_TEMPLATE, the working dir, the repository."""
    candidates: list[Path] = []
    if explicit:
        candidates.append(Path(explicit))
    if os.environ.get(TEMPLATE_ENV):
        candidates.append(Path(os.environ[TEMPLATE_ENV]))
    candidates.append(Path.cwd() / "template.yaml")
    candidates.append(Path(__file__).resolve().parents[4] / "template.yaml")
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise GatewayConfigError(
        "template.yaml not found; run from the repository root or set HINDSIGHT_TEMPLATE"
    )
