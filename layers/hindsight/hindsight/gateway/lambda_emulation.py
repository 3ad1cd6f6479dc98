"""Lambda emulation: what the Lambda runtime and API Gateway hand a handler, in-process.

One home for the three things every in-process caller of a real handler needs (the
local gateway, the functional, integration and e2e tests, the benchmarks):

- ``load_handler`` / ``load_function`` / ``load_function_module``: import a function's
  code by file path (``functions/<name>/app.py``), as the Lambda runtime would, once
  per process under a module name of the caller's choosing;
- ``LocalLambdaContext``: the context attributes handlers and Powertools read;
- ``proxy_event``: an API Gateway REST proxy event (payload v1).

Nothing here knows about template.yaml or HTTP servers.
"""

from __future__ import annotations

import base64
import importlib.util
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs

from hindsight.gateway.errors import GatewayConfigError

Handler = Callable[[dict[str, Any], Any], Any]


# --- code ------------------------------------------------------------------------------
def load_module(source: Path, module_name: str) -> ModuleType:
    """Import ``source`` as ``module_name``; later calls return the module already loaded.

    The module is registered in ``sys.modules`` before it runs (dataclasses and
    pickling look it up there) and removed again if running it fails.
    """
    module = sys.modules.get(module_name)
    if module is not None:
        return module
    loader_spec = importlib.util.spec_from_file_location(module_name, source)
    if loader_spec is None or loader_spec.loader is None:
        raise GatewayConfigError(f"cannot import {source}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def load_handler(code_dir: Path, handler: str, module_name: str) -> Handler:
    """The callable a SAM ``Handler`` (``<module path>.<function>``) names under ``code_dir``.

    ``<code_dir>/<module path>.py`` is imported as ``<module_name>_<module path>``.
    """
    module_path, _, attribute = handler.rpartition(".")
    source = code_dir / (module_path.replace(".", "/") + ".py")
    module = load_module(source, f"{module_name}_{module_path.replace('.', '_')}")
    found = getattr(module, attribute, None)
    if not callable(found):
        raise GatewayConfigError(f"{source} has no callable {attribute!r}")
    return found


def load_function_module(functions_dir: Path, name: str, module_name: str) -> ModuleType:
    """``<functions_dir>/<name>/app.py`` imported by path as ``module_name``."""
    return load_module(functions_dir / name / "app.py", module_name)


def load_function(functions_dir: Path, name: str, module_name: str) -> Handler:
    """The ``lambda_handler`` of ``<functions_dir>/<name>/app.py``."""
    module = load_function_module(functions_dir, name, module_name)
    handler = getattr(module, "lambda_handler", None)
    if not callable(handler):
        raise GatewayConfigError(f"{functions_dir / name / 'app.py'} has no lambda_handler")
    return handler


# --- context ---------------------------------------------------------------------------
class LocalLambdaContext:
    """The attributes of a Lambda context object that handlers and Powertools read.

    Defaults are Lambda's own (128 MB, 3 s); the remaining time counts down from the
    timeout like the real one.
    """

    def __init__(
        self,
        function_name: str,
        *,
        memory_mb: int = 128,
        timeout_seconds: float = 3.0,
        region: str = "local",
        account_id: str = "000000000000",
        request_id: str | None = None,
        log_stream_name: str = "local",
    ) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{account_id}:function:{function_name}"
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = request_id or str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = log_stream_name
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


# --- API Gateway proxy event -----------------------------------------------------------
def concrete_path(resource: str, path_parameters: Mapping[str, str]) -> str:
    """``/v1/memories/{memory_id}`` with its parameters filled in."""
    path = resource
    for name, value in path_parameters.items():
        path = path.replace("{" + name + "+}", value).replace("{" + name + "}", value)
    return path


def _query(query: str | Mapping[str, str] | None) -> dict[str, list[str]]:
    if query is None:
        return {}
    if isinstance(query, str):
        return parse_qs(query, keep_blank_values=True)
    return {name: [value] for name, value in query.items()}


def _body(body: bytes | str | None, base64_body: bool) -> tuple[str | None, bool]:
    """(text, isBase64Encoded): text as is; bytes as UTF-8 text unless they are not."""
    if body is None:
        return None, False
    if isinstance(body, str):
        if not base64_body:
            return body, False
        body = body.encode("utf-8")
    if base64_body:
        return base64.b64encode(body).decode("ascii"), True
    if not body:
        return None, False
    try:
        return body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), True


def proxy_event(
    method: str,
    resource: str,
    *,
    path: str | None = None,
    path_parameters: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    query: str | Mapping[str, str] | None = None,
    body: bytes | str | None = None,
    base64_body: bool = False,
    stage: str = "local",
    source_ip: str = "127.0.0.1",
    authorizer: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An API Gateway REST proxy event (payload v1) for ``method`` on ``resource``.

    ``path`` defaults to ``resource`` with ``path_parameters`` filled in; ``query`` is a
    raw query string or a mapping; ``body`` bytes that are not UTF-8 are sent base64
    (``base64_body`` forces it). ``authorizer`` is what an API Gateway authorizer would
    add; a client can never set it.
    """
    params = dict(path_parameters or {})
    path = concrete_path(resource, params) if path is None else path
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in pairs:
        single[name] = value
        multi.setdefault(name, []).append(value)
    parsed = _query(query)
    text, encoded = _body(body, base64_body)
    request_id = str(uuid.uuid4())
    now = time.time()
    context: dict[str, Any] = {
        "accountId": "000000000000",
        "apiId": "local",
        "resourceId": "local",
        "resourcePath": resource,
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
    }
    if authorizer is not None:
        context["authorizer"] = dict(authorizer)
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": single or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": {k: v[-1] for k, v in parsed.items()} or None,
        "multiValueQueryStringParameters": parsed or None,
        "pathParameters": params or None,
        "stageVariables": None,
        "requestContext": context,
        "body": text,
        "isBase64Encoded": encoded,
    }
