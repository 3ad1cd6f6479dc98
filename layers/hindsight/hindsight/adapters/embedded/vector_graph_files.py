"""The embedded vector index's saved HNSW graphs: one ``p_<digest>.hnsw`` file and its
``.json`` description (owner, model, ids, labels, a fingerprint of the vectors) per
partition, written atomically, and the check that a saved graph still fits its partition
before it is attached (``vector_index.py`` decides when to save and load)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from hindsight.adapters.embedded.hnsw_graph import Graph
from hindsight.adapters.embedded.vector_partition import Partition
from hindsight.core.errors import UnavailableError

logger = logging.getLogger(__name__)


def partition_file(tenant_id: str, user_id: str) -> str:
    digest = hashlib.sha256(f"{tenant_id}\x00{user_id}".encode()).hexdigest()[:24]
    return f"p_{digest}"


def remove_saved_graph(directory: Path, owner: tuple[str, str]) -> None:
    """Delete the owner's saved graph, if any; UnavailableError when a file cannot be
    removed, so an erase is retried."""
    name = partition_file(*owner)
    for suffix in (".hnsw", ".json", ".hnsw.tmp", ".json.tmp"):
        try:
            (directory / f"{name}{suffix}").unlink(missing_ok=True)
        except OSError as exc:
            raise UnavailableError(
                f"the saved search graph {name}{suffix} in {directory} cannot be "
                f"removed ({exc.strerror}); check the directory's permissions and retry"
            ) from exc


def save_graph(
    directory: Path, owner: tuple[str, str], part: Partition, model: tuple[str, int] | None
) -> None:
    assert part.graph is not None
    directory.mkdir(parents=True, exist_ok=True)
    name = partition_file(*owner)
    part.graph.save(directory / f"{name}.hnsw.tmp")
    os.replace(directory / f"{name}.hnsw.tmp", directory / f"{name}.hnsw")
    meta = {
        "tenant_id": owner[0],
        "user_id": owner[1],
        "model": list(model) if model else None,
        "ids": part.ids[: part.size],
        "labels": [int(x) for x in part.columns["labels"][: part.size]],
        "next_label": part.next_label,
        "fingerprint": part.fingerprint(),
    }
    (directory / f"{name}.json.tmp").write_text(json.dumps(meta))
    os.replace(directory / f"{name}.json.tmp", directory / f"{name}.json")


def read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def attach_saved_graph(
    partition: Partition, meta: dict[str, Any], meta_path: Path, model: tuple[str, int] | None
) -> bool:
    """Give the partition its saved graph if the graph still matches it."""
    if not _matches(partition, meta, model):
        return False
    graph_path = meta_path.with_name(meta_path.name[: -len(".json")] + ".hnsw")
    try:
        graph = Graph.load(graph_path, partition.dim, live=partition.size)
    except (OSError, RuntimeError) as exc:
        logger.warning("ann graph unreadable path=%s error=%s", graph_path, exc)
        return False
    saved = dict(zip(meta["ids"], meta["labels"], strict=True))
    for row, memory_id in enumerate(partition.ids[: partition.size]):
        partition.columns["labels"][row] = saved[memory_id]
    partition.next_label = int(meta["next_label"])
    labels = partition.columns["labels"][: partition.size]
    partition.row_of_label = np.full(max(16, partition.next_label), -1, dtype=np.int64)
    partition.row_of_label[labels] = np.arange(partition.size)
    partition.graph = graph
    return True


def _matches(partition: Partition, meta: dict[str, Any], model: tuple[str, int] | None) -> bool:
    if not model or meta.get("model") != list(model):
        return False
    ids, labels = meta.get("ids", []), meta.get("labels", [])
    if len(ids) != partition.size or len(labels) != partition.size:
        return False
    if set(ids) != set(partition.ids[: partition.size]) or "next_label" not in meta:
        return False
    saved = np.asarray(meta.get("fingerprint", []), dtype=np.float64)
    current = np.asarray(partition.fingerprint(), dtype=np.float64)
    return saved.shape == current.shape and bool(np.allclose(saved, current, atol=1e-3))
