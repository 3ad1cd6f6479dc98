"""``GET /docs``: the OpenAPI document rendered as one self-contained HTML page.

Rendered on the server from the document itself (no JavaScript, no stylesheet or font
from a CDN: everything is in the page), so it works offline, behind a firewall and on
Lambda alike. Every operation shows its parameters, request body fields, success and
error responses; every schema its fields, types and limits, with links between them.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from hindsight.api.openapi import committed_document_text

_STYLE = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1d1f}
header{background:#14213d;color:#fff;padding:1.2rem 2rem}header a{color:#fca311}
main{display:grid;grid-template-columns:17rem 1fr;gap:2rem;padding:1rem 2rem}
nav{position:sticky;top:0;align-self:start;max-height:100vh;overflow:auto;font-size:13px}
nav a{display:block;text-decoration:none;color:#14213d;padding:1px 0}
h2{border-bottom:2px solid #e5e5e5;margin-top:2.5rem}
section.op{border:1px solid #e5e5e5;border-radius:6px;padding:.6rem 1rem;margin:1rem 0}
.m{display:inline-block;min-width:4.2rem;text-align:center;color:#fff;border-radius:4px;
font:600 12px monospace;padding:2px 6px;margin-right:.5rem}
.GET{background:#2a9d8f}.POST{background:#264653}.DELETE{background:#e76f51}
code,.path{font-family:ui-monospace,monospace;font-size:13px}.path{font-weight:600}
table{border-collapse:collapse;width:100%;margin:.4rem 0}
th,td{border-bottom:1px solid #eee;text-align:left;padding:3px 8px;vertical-align:top}
th{font-size:12px;color:#555}.req{color:#e76f51;font-size:11px}.muted{color:#666}
.s2{color:#2a9d8f;font-weight:600}.s4,.s5{color:#e76f51;font-weight:600}
"""

_TYPE_WORDS = {"string", "integer", "number", "boolean", "object", "array", "null"}
_LIMITS = (
    ("minLength", "≥ {} chars"),
    ("maxLength", "≤ {} chars"),
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minItems", "≥ {} items"),
    ("maxItems", "≤ {} items"),
    ("pattern", "matches {}"),
)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _prose(text: Any) -> str:
    """Escaped text with the Markdown the document uses: `code` and **bold**."""
    escaped = _e(text)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", escaped)


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def type_label(schema: Mapping[str, Any]) -> str:
    """A schema as a short type expression (HTML), with links to named schemas."""
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        return f'<a href="#schema-{_e(name)}">{_e(name)}</a>'
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " | ".join(type_label(option) for option in schema[key])
    if "const" in schema:
        return f"<code>{_e(json.dumps(schema['const'], ensure_ascii=False))}</code>"
    if "enum" in schema:
        return " | ".join(
            f"<code>{_e(json.dumps(v, ensure_ascii=False))}</code>" for v in schema["enum"]
        )
    kind = schema.get("type")
    if kind == "array":
        return f"{type_label(schema.get('items', {}))}[]"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"object of {type_label(schema['additionalProperties'])}"
    if isinstance(kind, str) and kind in _TYPE_WORDS:
        fmt = schema.get("format")
        return _e(f"{kind} ({fmt})" if fmt else kind)
    return "any"


def _limits(schema: Mapping[str, Any]) -> str:
    notes = [template.format(schema[key]) for key, template in _LIMITS if key in schema]
    if "default" in schema and schema["default"] is not None:
        notes.append(f"default {json.dumps(schema['default'], ensure_ascii=False)}")
    for option in schema.get("anyOf", []):
        notes += [template.format(option[key]) for key, template in _LIMITS if key in option]
    return "; ".join(notes)


def _fields_table(schema: Mapping[str, Any]) -> str:
    properties: Mapping[str, Any] = schema.get("properties", {})
    if not properties:
        return f"<p>{type_label(schema)}</p>"
    required = set(schema.get("required", []))
    rows = []
    for name, prop in properties.items():
        flag = ' <span class="req">required</span>' if name in required else ""
        about = " ".join(x for x in (_prose(prop.get("description", "")), _e(_limits(prop))) if x)
        rows.append(
            f"<tr><td><code>{_e(name)}</code>{flag}</td><td>{type_label(prop)}</td>"
            f"<td>{about}</td></tr>"
        )
    extra = (
        ""
        if schema.get("additionalProperties") is not False
        else ('<p class="muted">Other fields are refused (422).</p>')
    )
    return (
        "<table><tr><th>field</th><th>type</th><th>about</th></tr>"
        + "".join(rows)
        + "</table>"
        + extra
    )


def _parameters(parameters: Iterable[Mapping[str, Any]]) -> str:
    rows = []
    for param in parameters:
        flag = ' <span class="req">required</span>' if param.get("required") else ""
        schema = param.get("schema", {})
        about = " ".join(
            x for x in (_prose(param.get("description", "")), _e(_limits(schema))) if x
        )
        rows.append(
            f"<tr><td><code>{_e(param['name'])}</code>{flag}</td><td>{_e(param['in'])}</td>"
            f"<td>{type_label(schema)}</td><td>{about}</td></tr>"
        )
    if not rows:
        return ""
    return (
        "<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>type</th><th>about</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _resolve(document: Mapping[str, Any], item: Mapping[str, Any]) -> Mapping[str, Any]:
    """A response object, following a ``$ref`` into components."""
    if "$ref" not in item:
        return item
    found: Any = document
    for part in item["$ref"].lstrip("#/").split("/"):
        found = found[part]
    return found  # type: ignore[no-any-return]


def _responses(document: Mapping[str, Any], responses: Mapping[str, Any]) -> str:
    rows = []
    for status, item in responses.items():
        response = _resolve(document, item)
        content = response.get("content", {})
        types = ", ".join(
            f"{type_label(media.get('schema', {}))} <span class='muted'>{_e(name)}</span>"
            for name, media in content.items()
        )
        rows.append(
            f"<tr><td class='s{status[0]}'>{_e(status)}</td><td>{types}</td>"
            f"<td>{_prose(response.get('description', ''))}</td></tr>"
        )
    return (
        "<h4>Responses</h4><table><tr><th>status</th><th>body</th><th>meaning</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _request_body(operation: Mapping[str, Any]) -> str:
    body = operation.get("requestBody")
    if not body:
        return ""
    parts = []
    for media_type, media in body.get("content", {}).items():
        parts.append(
            f"<h4>Request body <span class='muted'>{_e(media_type)}</span></h4>"
            f"<p>{type_label(media.get('schema', {}))}</p>"
        )
    return "".join(parts)


def _operation(document: Mapping[str, Any], path: str, method: str, op: Mapping[str, Any]) -> str:
    anchor = _e(op.get("operationId", f"{method}-{path}"))
    auth = "" if op.get("security", True) != [] else " <span class='muted'>(no key needed)</span>"
    return (
        f"<section class='op' id='op-{anchor}'><h3><span class='m {method.upper()}'>"
        f"{method.upper()}</span><span class='path'>{_e(path)}</span></h3>"
        f"<p><b>{_e(op.get('summary', ''))}</b>{auth}. {_prose(op.get('description', ''))}</p>"
        + _parameters(op.get("parameters", []))
        + _request_body(op)
        + _responses(document, op.get("responses", {}))
        + "</section>"
    )


def _operations_by_tag(document: Mapping[str, Any]) -> dict[str, list[tuple[str, str, Any]]]:
    grouped: dict[str, list[tuple[str, str, Any]]] = {
        t["name"]: [] for t in document.get("tags", [])
    }
    for path, methods in document.get("paths", {}).items():
        for method, op in methods.items():
            for tag in op.get("tags", ["other"]):
                grouped.setdefault(tag, []).append((path, method, op))
    return grouped


def _navigation(grouped: Mapping[str, list[tuple[str, str, Any]]], schemas: Iterable[str]) -> str:
    links = []
    for tag, ops in grouped.items():
        links.append(f"<b>{_e(tag)}</b>")
        links += [
            f"<a href='#op-{_e(op.get('operationId', ''))}'><code>{_e(m.upper())}</code> "
            f"{_e(p)}</a>"
            for p, m, op in ops
        ]
    links.append("<b>schemas</b>")
    links += [f"<a href='#schema-{_e(n)}'>{_e(n)}</a>" for n in schemas]
    return "<nav>" + "".join(links) + "</nav>"


def render_page(document: Mapping[str, Any]) -> str:
    """The whole reference page for ``document``."""
    info = document.get("info", {})
    grouped = _operations_by_tag(document)
    schemas: Mapping[str, Any] = document.get("components", {}).get("schemas", {})
    body = []
    for tag, ops in grouped.items():
        body.append(f"<h2>{_e(tag)}</h2>")
        body += [_operation(document, path, method, op) for path, method, op in ops]
    body.append("<h2>Schemas</h2>")
    for name, schema in schemas.items():
        body.append(
            f"<section id='schema-{_e(name)}'><h3>{_e(name)}</h3>"
            f"<p>{_prose(schema.get('description', ''))}</p>{_fields_table(schema)}</section>"
        )
    intro = "".join(f"<p>{_prose(p)}</p>" for p in str(info.get("description", "")).split("\n\n"))
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{_e(info.get('title', 'API'))} API reference</title><style>{_STYLE}</style>"
        f"</head><body><header><h1>{_e(info.get('title', 'API'))} "
        f"<small>{_e(info.get('version', ''))}</small></h1>"
        "<p>OpenAPI 3.1 document: <a href='v1/openapi.json'>v1/openapi.json</a></p></header>"
        f"<main>{_navigation(grouped, schemas)}<div>{intro}{''.join(body)}</div></main>"
        "</body></html>"
    )


@cache
def committed_page() -> str:
    """The page of the committed document, rendered once per process."""
    return render_page(json.loads(committed_document_text()))
