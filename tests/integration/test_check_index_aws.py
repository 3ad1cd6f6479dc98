"""``hindsight check-index`` on the AWS backend (DynamoDB on moto, OpenSearch, ``make
services``): in agreement after stores, and naming the memory whose OpenSearch document was
lost (exit 1) as a soak's final check would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight import bootstrap
from hindsight.cli import app
from hindsight.core.commands import BatchItem, StoreBatchCommand
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.service import MemoryService
from hindsight.settings import Settings
from tests.contract.conftest import service_on
from tests.fakes import HashingEmbedder, ScriptedReflector

OWNER = Principal(tenant_id="acme")


@pytest.fixture
def aws_service(tmp_path: Path) -> Iterator[MemoryService]:
    with service_on("aws", tmp_path, HashingEmbedder(), ScriptedReflector(), Policy()) as built:
        bootstrap.configure(Settings(backend="aws", data_dir=tmp_path), built)
        yield built
        bootstrap.configure()


def check(*options: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(app, ["--tenant", "acme", "check-index", *options])
    return result.exit_code, json.loads(result.stdout)


def test_check_index_compares_dynamodb_with_opensearch(aws_service: MemoryService) -> None:
    items = [BatchItem(content=f"note {n} about the orchard") for n in range(4)]
    stored = aws_service.store_batch(OWNER, StoreBatchCommand(user_id="u1", items=items))
    ids = [result.memory_id for result in stored]
    aws_service.store_batch(OWNER, StoreBatchCommand(user_id="u2", items=items[:1]))

    code, body = check()
    assert code == 0, body
    assert (body["searchable"], body["indexed"], body["tenant_id"]) == (5, 5, "acme")

    aws_service.ports.index.delete("acme", [ids[0]])  # a document the stream never wrote
    code, body = check("--user", "u1")
    assert code == 1
    assert body["missing"] == [{"tenant_id": "acme", "memory_id": ids[0]}]
    assert (body["searchable"], body["indexed"], body["extra"]) == (4, 3, [])
