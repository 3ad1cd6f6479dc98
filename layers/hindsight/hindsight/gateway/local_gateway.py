"""Local gateway: serves template.yaml's API routes through the real Lambda handlers.

Like ``sam local start-api`` without Docker: it reads the SAM template, finds every
``AWS::Serverless::Function`` with ``Api`` events, imports each function's handler by
file path, turns every HTTP request into an API Gateway REST proxy event (payload
v1) plus a minimal Lambda context, invokes ``lambda_handler`` in-process and writes
the proxy response back. The service behind the handlers is the embedded default
(SQLite + in-process index + local model) unless settings say otherwise.

    python -m hindsight.gateway.local_gateway --port 8080

Invocations run one at a time, like one warm Lambda container per function: the
Powertools resolvers keep the current event in class state, so they must not overlap.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import ipaddress
import json
import logging
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from hindsight.api.auth import load_key_ring
from hindsight.bootstrap import configure, get_service
from hindsight.core.errors import HindsightError
from hindsight.settings import Settings

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1_048_576
DRAIN_LIMIT_BYTES = 16 * MAX_BODY_BYTES  # refused bodies up to this size are read and dropped
TEMPLATE_ENV = "HINDSIGHT_TEMPLATE"
KEYLESS_WARNING = "no API keys configured: serving keyless on {host} — do not expose this port"

Handler = Callable[[dict[str, Any], Any], Any]


class GatewayConfigError(HindsightError):
    """The gateway cannot start as asked (template missing, unsafe keyless bind...)."""

    http_status = 500


# --- template ------------------------------------------------------------------------
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


def _stage_name(template_path: Path) -> str:
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


# --- handlers and Lambda context ------------------------------------------------------
def load_handler(spec: FunctionSpec) -> Handler:
    """Import ``<CodeUri>/<module>.py`` under a unique module name and return the handler."""
    module_path, _, attribute = spec.handler.rpartition(".")
    source = spec.code_dir / (module_path.replace(".", "/") + ".py")
    name = f"hindsight_local_fn_{spec.logical_id}_{module_path.replace('.', '_')}"
    module: ModuleType | None = sys.modules.get(name)
    if module is None:
        loader_spec = importlib.util.spec_from_file_location(name, source)
        if loader_spec is None or loader_spec.loader is None:
            raise GatewayConfigError(f"cannot import {source} for function {spec.logical_id}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        try:
            loader_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    handler = getattr(module, attribute, None)
    if not callable(handler):
        raise GatewayConfigError(f"{source} has no callable {attribute!r}")
    return handler


class LocalLambdaContext:
    """The attributes of a Lambda context object that handlers and Powertools read."""

    def __init__(self, spec: FunctionSpec) -> None:
        self.function_name = spec.logical_id
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:local:000000000000:function:{spec.logical_id}"
        self.memory_limit_in_mb = spec.memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{spec.logical_id}"
        self.log_stream_name = "local"
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + spec.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def build_proxy_event(
    *,
    method: str,
    path: str,
    query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    route: Route,
    path_parameters: Mapping[str, str],
    stage: str,
    source_ip: str,
) -> dict[str, Any]:
    """An API Gateway REST proxy event (payload v1). Never carries an authorizer."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in headers:
        single[name] = value
        multi.setdefault(name, []).append(value)
    parsed = parse_qs(query, keep_blank_values=True)
    text: str | None
    try:
        text = body.decode("utf-8") if body else None
        encoded = False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    request_id = str(uuid.uuid4())
    now = time.time()
    return {
        "resource": route.resource,
        "path": path,
        "httpMethod": method,
        "headers": single or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": {k: v[-1] for k, v in parsed.items()} or None,
        "multiValueQueryStringParameters": parsed or None,
        "pathParameters": dict(path_parameters) or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "resourceId": "local",
            "resourcePath": route.resource,
            "httpMethod": method,
            "path": f"/{stage}{path}",
            "stage": stage,
            "protocol": "HTTP/1.1",
            "requestId": request_id,
            "extendedRequestId": request_id,
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "requestTimeEpoch": int(now * 1000),
            "domainName": single.get("Host", "localhost"),
            "identity": {
                "sourceIp": source_ip,
                "userAgent": single.get("User-Agent"),
                "apiKey": None,
                "user": None,
            },
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


# --- HTTP server -----------------------------------------------------------------------
@dataclass
class GatewayResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def _json_response(status: int, message: str, **extra_headers: str) -> GatewayResponse:
    body = json.dumps({"status": "error", "message": message}, ensure_ascii=False).encode()
    headers = [("Content-Type", "application/json")]
    headers += list(extra_headers.items())
    return GatewayResponse(status, headers, body)


class _Dispatcher:
    """Finds the route, builds the event, invokes the handler (one at a time)."""

    def __init__(self, routes: list[Route], stage: str) -> None:
        self.routes = routes
        self.stage = stage
        self._handlers: dict[str, Handler] = {}
        self._invoke_lock = threading.Lock()

    def handler_for(self, spec: FunctionSpec) -> Handler:
        handler = self._handlers.get(spec.logical_id)
        if handler is None:
            handler = load_handler(spec)
            self._handlers[spec.logical_id] = handler
        return handler

    def load_all(self) -> None:
        for route in self.routes:
            self.handler_for(route.function)

    def resolve(self, method: str, path: str) -> tuple[Route | None, dict[str, str], list[str]]:
        allowed: list[str] = []
        for route in self.routes:
            params = route.match(path)
            if params is None:
                continue
            if route.method in {method, "ANY"}:
                return route, params, []
            allowed.append(route.method)
        return None, {}, sorted(set(allowed))

    def dispatch(
        self,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
        source_ip: str,
    ) -> GatewayResponse:
        split = urlsplit(target)
        raw_path = split.path or "/"
        if len(raw_path) > 1:
            raw_path = raw_path.rstrip("/") or "/"
        path = unquote(raw_path)
        route, params, allowed = self.resolve(method, raw_path)
        if route is None:
            if allowed:
                return _json_response(
                    405,
                    f"{method} is not allowed on {path}; use {', '.join(allowed)}",
                    Allow=", ".join(allowed),
                )
            return _json_response(
                404, f"no route {method} {path}; the API lives under /v1 (see the README)"
            )
        event = build_proxy_event(
            method=method,
            path=path,
            query=split.query,
            headers=headers,
            body=body,
            route=route,
            path_parameters=params,
            stage=self.stage,
            source_ip=source_ip,
        )
        context = LocalLambdaContext(route.function)
        try:
            handler = self.handler_for(route.function)
            with self._invoke_lock:
                result = handler(event, context)
        except Exception:
            logger.exception("function %s failed", route.function.logical_id)
            return _json_response(502, "the function failed; see the gateway's log for the error")
        return _proxy_result(result, route.function.logical_id)


def _proxy_result(result: Any, function_name: str) -> GatewayResponse:
    if not isinstance(result, dict) or not isinstance(result.get("statusCode"), int):
        logger.error("function %s returned no proxy response", function_name)
        return _json_response(502, "the function returned a malformed proxy response")
    headers: list[tuple[str, str]] = []
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers += [(name, str(v)) for v in values]
    seen = {name.lower() for name, _ in headers}
    for name, value in (result.get("headers") or {}).items():
        if name.lower() not in seen:
            headers.append((name, str(value)))
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
    return GatewayResponse(int(result["statusCode"]), headers, body)


class _RequestHandler(BaseHTTPRequestHandler):
    server_version = "HindsightLocalGateway/1"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    dispatcher: _Dispatcher  # set on the subclass made per gateway

    def log_message(self, format: str, *args: Any) -> None:
        logger.info("%s %s", self.address_string(), format % args)

    def _send(self, response: GatewayResponse, close: bool = False) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            if name.lower() not in {"content-length", "connection", "transfer-encoding"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _read_body(self) -> bytes | GatewayResponse:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length_header = self.headers.get("Content-Length")
        if not length_header:
            return b""
        try:
            length = int(length_header)
        except ValueError:
            return _json_response(400, "Content-Length is not a number")
        if length > MAX_BODY_BYTES:
            self._discard(length)
            return _json_response(
                413,
                f"the request body is {length} bytes; the limit is {MAX_BODY_BYTES} bytes "
                "(1 MiB) — send fewer or shorter memories per request",
            )
        return self.rfile.read(length)

    def _discard(self, length: int) -> None:
        """Read and drop a refused body (if not huge) so the client sees the answer."""
        remaining = length if length <= DRAIN_LIMIT_BYTES else 0
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 65_536))
            if not chunk:
                break
            remaining -= len(chunk)

    def _read_chunked(self) -> bytes | GatewayResponse:
        chunks: list[bytes] = []
        total = 0
        while True:
            size_line = self.rfile.readline(1024).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                return _json_response(400, "malformed chunked body")
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(chunks)
            total += size
            if total > MAX_BODY_BYTES:
                return _json_response(
                    413, f"the request body exceeds {MAX_BODY_BYTES} bytes (1 MiB)"
                )
            chunks.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def _handle(self) -> None:
        body = self._read_body()
        if isinstance(body, GatewayResponse):
            self._send(body, close=True)
            return
        headers = [(name, value) for name, value in self.headers.items()]
        response = self.dispatcher.dispatch(
            self.command, self.path, headers, body, self.client_address[0]
        )
        self._send(response)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _handle

    def do_HEAD(self) -> None:
        self._handle()


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the port private to this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LocalGateway:
    """An HTTP server in a background thread serving the template's routes.

    ``LocalGateway(port=0).start()`` picks a free port; ``.url`` is where it listens.
    Settings must be configured (``hindsight.bootstrap.configure``) before start, or
    are taken from the environment on the first request.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        template: str | Path | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.settings = settings
        self.template_path = find_template(template)
        self.routes = routes_from_template(self.template_path)
        self.stage = _stage_name(self.template_path)
        self.dispatcher = _Dispatcher(self.routes, self.stage)
        handler_class = type(
            "_BoundRequestHandler", (_RequestHandler,), {"dispatcher": self.dispatcher}
        )
        self._server = ThreadingHTTPServer((host, port), handler_class)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = self.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    def load_functions(self) -> None:
        """Import every handler now, so that import errors show at start, not per request."""
        self.dispatcher.load_all()

    def warm(self) -> None:
        """Configure the given settings (if any), import the handlers, build the service
        and load its embedding model."""
        if self.settings is not None:
            configure(self.settings)
        self.load_functions()
        service = get_service()
        service.embedder.embed_query("warm up")  # load the model now, not on the first request

    def start(self) -> LocalGateway:
        self.warm()
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="hindsight-gateway", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (the CLI's foreground mode)."""
        try:
            self._server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self._server.server_close()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> LocalGateway:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def prepare_settings(
    host: str,
    data_dir: str | Path | None = None,
    allow_anonymous: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Settings, bool]:
    """Settings for the gateway and whether it serves keyless.

    Keyless (no keys configured) is allowed only on a loopback host; there anonymous
    access is on unless switched off explicitly (flag or HINDSIGHT_ALLOW_ANONYMOUS).
    """
    env = os.environ if environ is None else environ
    settings = Settings.from_env(env, data_dir=data_dir, allow_anonymous=allow_anonymous)
    if len(load_key_ring(settings)) > 0:
        return settings, False
    if not is_loopback(host):
        raise GatewayConfigError(
            f"refusing to serve without API keys on {host}: anyone who can reach the port "
            "could read every memory. Configure keys (HINDSIGHT_API_KEYS_FILE) or bind to "
            "127.0.0.1"
        )
    if allow_anonymous is None and "HINDSIGHT_ALLOW_ANONYMOUS" not in env:
        settings = Settings.from_env(env, data_dir=data_dir, allow_anonymous=True)
    return settings, settings.allow_anonymous


def banner(gateway: LocalGateway, settings: Settings, keyless: bool) -> str:
    lines = [
        f"Hindsight local gateway listening on {gateway.url}",
        f"  template : {gateway.template_path}",
        f"  backend  : {settings.backend}",
        f"  data dir : {Path(settings.data_dir).resolve()}",
        f"  routes   : {len(gateway.routes)}",
    ]
    auth = "" if keyless else ' -H "Authorization: Bearer $HINDSIGHT_KEY"'
    if keyless:
        lines.append("WARNING: " + KEYLESS_WARNING.format(host=gateway.host))
    elif not settings.allow_anonymous:
        lines.append("  auth     : API keys required (Authorization: Bearer <key>)")
    lines += [
        "Try:",
        f"  curl -s -X POST {gateway.url}/v1/memories{auth} -H 'Content-Type: application/json' "
        '-d \'{"user_id": "u1", "content": "用户对花生过敏", "category": "constraint"}\'',
        f"  curl -s -X POST {gateway.url}/v1/retrieve{auth} -H 'Content-Type: application/json' "
        '-d \'{"user_id": "u1", "query": "饮食禁忌"}\'',
    ]
    return "\n".join(lines)


def serve(
    host: str = "127.0.0.1",
    port: int = 8080,
    data_dir: str | Path | None = None,
    allow_anonymous: bool | None = None,
    template: str | Path | None = None,
) -> None:
    """Run the gateway in the foreground until interrupted."""
    settings, keyless = prepare_settings(host, data_dir, allow_anonymous)
    gateway = LocalGateway(host, port, template, settings=settings)
    gateway.warm()  # open the store, load the index and model before the first request
    print(banner(gateway, settings, keyless), flush=True)
    gateway.serve_forever()
    print("stopped", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve template.yaml's routes locally.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--template", default=None)
    parser.add_argument(
        "--allow-anonymous",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve without keys when none are configured (default on 127.0.0.1)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        serve(args.host, args.port, args.data_dir, args.allow_anonymous, args.template)
    except HindsightError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
