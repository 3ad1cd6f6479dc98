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
class Route:
    method: str  # upper case, or ANY
    resource: str  # the template path, e.g. /v1/users/{user_id}/memories
    function: FunctionSpec
    pattern: re.Pattern[str] = field(compare=False)
    dynamic: bool = False

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


def routes_from_template(template_path: Path) -> list[Route]:
    """Every Api event of every serverless function, static paths before dynamic ones."""
    template = load_template(template_path)
    base = template_path.parent
    globals_fn = (template.get("Globals") or {}).get("Function") or {}
    routes: list[Route] = []
    for logical_id, resource in template["Resources"].items():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource.get("Properties") or {}
        code_uri = _literal(props.get("CodeUri", globals_fn.get("CodeUri")))
        handler = _literal(props.get("Handler", globals_fn.get("Handler")))
        if not isinstance(code_uri, str) or not isinstance(handler, str):
            logger.warning("skipping %s: CodeUri/Handler are not plain strings", logical_id)
            continue
        spec = FunctionSpec(
            logical_id=logical_id,
            code_dir=(base / code_uri).resolve(),
            handler=handler,
            timeout_seconds=float(_literal(props.get("Timeout", globals_fn.get("Timeout"))) or 3),
            memory_mb=int(_literal(props.get("MemorySize", globals_fn.get("MemorySize"))) or 128),
        )
        for event in (props.get("Events") or {}).values():
            if not isinstance(event, dict) or event.get("Type") != "Api":
                continue
            event_props = event.get("Properties") or {}
            path, method = event_props.get("Path"), event_props.get("Method")
            if not isinstance(path, str) or not isinstance(method, str):
                continue
            pattern, dynamic = _path_pattern(path)
            routes.append(Route(method.upper(), path, spec, pattern, dynamic))
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
