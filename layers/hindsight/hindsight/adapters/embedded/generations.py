"""Generations of the embedded search index: one served, at most one being built beside it.

A data directory holds its search index in ``index/`` (the first generation) or in
``index-<n>/`` for later ones; ``index.json`` (the manifest) names the generation served and
the embedding model its vectors are of::

    {"generation": "index-2", "embedding_model": "...", "dimension": 384,
     "embedder": "minilm", "switched_at": "2026-...Z"}

Without a manifest the served generation is ``index/`` and its model is whatever its
vectors are of. ``hindsight reindex --re-embed`` (``core/usecases/reembed.py``) builds
``index-<n+1>/`` with ``EmbeddedIndexMigration`` while the server keeps serving the old one
(the new directory has its own writer lock, so the CLI may build it while ``hindsight
serve`` runs); ``migration.json`` in it is the checkpoint that lets a killed run resume.
The switch replaces the manifest in one ``os.replace``: readers see the old file or the
new one, never a half-written one.

``GenerationalSearchIndex`` is what the embedded service searches: it serves the
manifest's generation and looks at the manifest again (one ``stat``) at most once a second.
When it names a new generation, that one is opened and loaded on a background thread while
the old keeps answering, then swapped in at once; ``on_switch`` (the bootstrap's repair of
memories written with the old model during the switch) runs, the old generation is closed
and its directory removed. The embedder follows the same manifest
(``adapters/embedders/serving.py``), so queries are embedded with the served generation's
model.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hindsight.adapters.embedded.search_index import EmbeddedSearchIndex
from hindsight.adapters.embedded.vector_index import ANN_THRESHOLD
from hindsight.adapters.embedders.serving import ServingEmbedder, reembed_hint
from hindsight.core.embedding import ChunkSizes
from hindsight.core.errors import ConfigurationError, UnavailableError
from hindsight.core.models import IndexDocument, SearchFilter, SearchHit, StoredVector
from hindsight.core.ports import Clock, Embedder, RecordStore
from hindsight.core.usecases.reembed import Key, MigrationState, repair_after_switch

logger = logging.getLogger(__name__)

MANIFEST = "index.json"
CHECKPOINT = "migration.json"
FIRST = "index"
_NAME = re.compile(r"^index-(\d+)$")


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    """Write beside, flush to disk, then ``os.replace``: the old file or the new one."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        json.dump(data, handle, ensure_ascii=False, indent=1)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    try:
        directory = os.open(path.parent, os.O_RDONLY)
    except OSError:  # some platforms cannot open a directory; the rename is done anyway
        return
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UnavailableError(
            f"{path} cannot be read ({exc}); restore it from a backup, or delete it to serve "
            f"{path.parent / FIRST}"
        ) from exc
    return data if isinstance(data, dict) else None


def generation_number(name: str) -> int:
    match = _NAME.match(name)
    return int(match.group(1)) if match else 1


class GenerationFiles:
    """The manifest and generation directories of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.manifest_path = self.data_dir / MANIFEST

    def manifest(self) -> dict[str, Any] | None:
        return read_json(self.manifest_path)

    def serving(self) -> str:
        manifest = self.manifest()
        return str(manifest["generation"]) if manifest else FIRST

    def stamp(self) -> int | None:
        """Changes whenever the manifest is replaced (its inode and time)."""
        try:
            status = self.manifest_path.stat()
        except FileNotFoundError:
            return None
        return hash((status.st_ino, status.st_mtime_ns, status.st_size))

    def generations(self) -> list[str]:
        names = [p.name for p in self.data_dir.iterdir() if p.is_dir()]
        return sorted((n for n in names if n == FIRST or _NAME.match(n)), key=generation_number)

    def next_name(self) -> str:
        numbers = [generation_number(n) for n in self.generations()] or [1]
        return f"index-{max(numbers) + 1}"

    def switch_to(
        self, name: str, model: str, dimension: int, spec: str, since: datetime | None = None
    ) -> None:
        """Serve ``name`` from now on; ``since``: when its migration began (a server that
        switches indexes again what changed from then on)."""
        now = datetime.now(UTC)
        manifest = {
            "generation": name,
            "embedding_model": model,
            "dimension": dimension,
            "embedder": spec,
            "switched_at": now.isoformat(),
            "migration_started_at": (since or now).isoformat(),
        }
        write_json_atomically(self.manifest_path, manifest)


class EmbeddedIndexMigration:
    """``IndexMigration`` of the embedded store: a new generation directory, a manifest."""

    def __init__(self, data_dir: Path, ann_threshold: int = ANN_THRESHOLD) -> None:
        self.files = GenerationFiles(data_dir)
        self.ann_threshold = ann_threshold
        self._state: MigrationState | None = None
        self._spec = ""
        self._index: EmbeddedSearchIndex | None = None
        self._switched = False

    def serving_model(self) -> str | None:
        manifest = self.files.manifest()
        if manifest:
            return str(manifest["embedding_model"])
        keyword_db = self.files.data_dir / FIRST / "keyword.db"
        if not keyword_db.exists():
            return None
        connection = sqlite3.connect(f"file:{keyword_db}?mode=ro", uri=True)
        try:
            row = connection.execute("SELECT model FROM docs LIMIT 1").fetchone()
        except sqlite3.Error:
            row = None
        finally:
            connection.close()
        return None if row is None else str(row[0])

    def begin(
        self, model: str, dimension: int, embedder_spec: str, now: datetime
    ) -> MigrationState:
        serving = self.files.serving()
        for name in self.files.generations():
            checkpoint = read_json(self.files.data_dir / name / CHECKPOINT)
            if checkpoint is None or name == serving:
                continue
            if (
                checkpoint.get("embedding_model") == model
                and checkpoint.get("dimension") == dimension
            ):
                return self._open(name, _state_from(name, checkpoint), embedder_spec)
            logger.info("dropping unfinished generation generation=%s", name)
            shutil.rmtree(self.files.data_dir / name)
        name = self.files.next_name()
        state = MigrationState(name, model, dimension, now)
        return self._open(name, state, embedder_spec, fresh=True)

    def _open(
        self, name: str, state: MigrationState, spec: str, fresh: bool = False
    ) -> MigrationState:
        directory = self.files.data_dir / name
        if fresh and directory.exists():
            shutil.rmtree(directory)
        self._index = EmbeddedSearchIndex(directory, ann_threshold=self.ann_threshold)
        self._state, self._spec = state, spec
        self._save(state)
        logger.info(
            "re-embedding generation=%s model=%s resumed_after=%s",
            name,
            state.model,
            state.cursor,
        )
        return state

    def _save(self, state: MigrationState) -> None:
        checkpoint = {
            "embedding_model": state.model,
            "dimension": state.dimension,
            "embedder": self._spec,
            "started_at": state.started_at.isoformat(),
            "cursor": list(state.cursor) if state.cursor else None,
            "done": state.done,
        }
        write_json_atomically(self.files.data_dir / state.generation / CHECKPOINT, checkpoint)

    def target(self) -> EmbeddedSearchIndex | None:
        if self._switched:
            return None  # served now: its server completes it when it loads it
        if self._index is None:
            raise RuntimeError("begin() first")
        return self._index

    def save_progress(self, cursor: Key, done: int) -> None:
        if self._state is None:
            raise RuntimeError("begin() first")
        self._state = MigrationState(
            self._state.generation,
            self._state.model,
            self._state.dimension,
            self._state.started_at,
            cursor,
            done,
        )
        self._save(self._state)

    def target_keys(self) -> set[Key]:
        index = self.target()
        return set() if index is None else index.keys()

    def switch(self) -> None:
        state, index = self._state, self._index
        if state is None or index is None:
            raise RuntimeError("begin() first")
        index.close()  # its HNSW graphs saved and its writer lock released for the server
        files = self.files
        files.switch_to(
            state.generation, state.model, state.dimension, self._spec, state.started_at
        )
        (self.files.data_dir / state.generation / CHECKPOINT).unlink(missing_ok=True)
        self._switched = True
        logger.info(
            "index generation switched generation=%s model=%s", state.generation, state.model
        )

    def close(self) -> None:
        if self._index is not None and not self._switched:
            self._index.close()


def _state_from(name: str, checkpoint: dict[str, Any]) -> MigrationState:
    cursor = checkpoint.get("cursor")
    return MigrationState(
        generation=name,
        model=str(checkpoint["embedding_model"]),
        dimension=int(checkpoint["dimension"]),
        started_at=datetime.fromisoformat(str(checkpoint["started_at"])),
        cursor=(str(cursor[0]), str(cursor[1])) if cursor else None,
        done=int(checkpoint.get("done", 0)),
    )


class GenerationalSearchIndex:
    """The SearchIndex of the embedded service: the generation the manifest names."""

    def __init__(
        self,
        data_dir: Path,
        records: RecordStore,
        ann_threshold: int = ANN_THRESHOLD,
        check_every: float = 1.0,
    ) -> None:
        self.files = GenerationFiles(data_dir)
        self.records = records
        self.ann_threshold = ann_threshold
        self.check_every = check_every
        # called with when the migration began: what changed since is indexed again
        self.on_switch: list[Callable[[datetime], None]] = []
        self.retire_after = 2.0  # seconds the old generation stays open after the switch
        self.spec = ""  # the configured embedder's spec, for a first manifest
        self._guard = threading.Lock()
        self._stamp = self.files.stamp()
        self._manifest = self.files.manifest()
        self._name = self._manifest["generation"] if self._manifest else FIRST
        self._index = EmbeddedSearchIndex(data_dir / self._name, ann_threshold)
        self._checked = time.monotonic()
        self._loading: threading.Thread | None = None
        self._remove_retired()

    # --- following the manifest ------------------------------------------------------------
    @property
    def generation(self) -> str:
        return self._name

    def serving(self) -> tuple[str, str] | None:
        """(model, embedder spec) of the served generation, from the manifest (None: the
        first generation, whose model is the configured one)."""
        self.follow()
        manifest = self._manifest
        if not manifest:
            return None
        return str(manifest["embedding_model"]), str(manifest.get("embedder") or "")

    def follow(self, wait: bool = False) -> None:
        """Look at the manifest (at most every ``check_every`` s); load a new generation in
        the background (``wait``: here, now)."""
        now = time.monotonic()
        if not wait and now - self._checked < self.check_every:
            return
        self._checked = now
        stamp = self.files.stamp()
        if stamp == self._stamp:
            return
        manifest = self.files.manifest()
        if not manifest or manifest["generation"] == self._name:
            self._stamp, self._manifest = stamp, manifest
            return
        with self._guard:
            if self._loading is not None:
                return
            self._loading = threading.Thread(
                target=self._load, args=(stamp, manifest), name="index-switch", daemon=True
            )
            self._loading.start()
        if wait:
            self._loading.join()

    def _load(self, stamp: int | None, manifest: dict[str, Any]) -> None:
        name = str(manifest["generation"])
        began = manifest.get("migration_started_at")
        started = datetime.fromisoformat(str(began)) if began else datetime.now(UTC)
        try:
            loaded = EmbeddedSearchIndex(self.files.data_dir / name, self.ann_threshold)
            loaded.rebuild_from(self.records)
        except Exception:
            logger.exception("index generation not loaded generation=%s", name)
            with self._guard:
                self._loading = None
            return
        with self._guard:
            old, old_name = self._index, self._name
            self._index, self._name = loaded, name
            self._stamp, self._manifest = stamp, manifest
            self._loading = None
        logger.info("serving index generation generation=%s previous=%s", name, old_name)
        for hook in self.on_switch:
            hook(started)
        time.sleep(self.retire_after)  # requests that took the old generation finish first
        old.close()
        self._remove(old_name)

    def _remove_retired(self) -> None:
        """Generations neither served nor being built (a switch this process did not see)."""
        for name in self.files.generations():
            building = (self.files.data_dir / name / CHECKPOINT).exists()
            if name != self._name and not building:
                self._remove(name)

    def _remove(self, name: str) -> None:
        shutil.rmtree(self.files.data_dir / name, ignore_errors=True)
        logger.info("retired index generation removed generation=%s", name)

    def _current(self) -> EmbeddedSearchIndex:
        self.follow()
        return self._index

    # --- SearchIndex -----------------------------------------------------------------------
    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        self._current().upsert(documents)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        self._current().delete(tenant_id, memory_ids)

    def delete_user(self, tenant_id: str, user_id: str) -> None:
        self._current().delete_user(tenant_id, user_id)

    def vector_search(
        self, search_filter: SearchFilter, vector: StoredVector, k: int
    ) -> list[SearchHit]:
        return self._current().vector_search(search_filter, vector, k)

    def keyword_search(self, search_filter: SearchFilter, text: str, k: int) -> list[SearchHit]:
        return self._current().keyword_search(search_filter, text, k)

    def count(self, tenant_id: str | None = None) -> int:
        return self._current().count(tenant_id)

    # --- what the embedded index offers besides ---------------------------------------------
    def rebuild_from(self, records: RecordStore, force: bool = False) -> int:
        return self._current().rebuild_from(records, force)

    def compact(self) -> dict[str, int]:
        return self._current().compact()

    def keys(self) -> set[Key]:
        return self._current().keys()

    def indexed_ids(
        self, tenant_id: str | None = None, user_id: str | None = None
    ) -> set[tuple[str, str]]:
        return self._current().indexed_ids(tenant_id, user_id)

    def close(self) -> None:
        """Close the served generation; a first generation that got its first vectors
        meanwhile gets its manifest now (see ``follow_served_model``)."""
        with self._guard:
            loading = self._loading
        if loading is not None:
            loading.join()
        held = self._index.vectors.model
        if self.spec and held is not None and self.files.manifest() is None:
            self.files.switch_to(self._name, held[0], held[1], self.spec)
        self._index.close()

    @property
    def vectors(self) -> Any:
        return self._current().vectors

    @property
    def path(self) -> Path:
        return self._current().path


def follow_served_model(
    index: GenerationalSearchIndex,
    configured: Embedder,
    spec: str,
    build: Callable[[str], Embedder],
) -> ServingEmbedder:
    """The service's embedder: the served generation's model, whatever is configured.

    A first generation has no manifest: its vectors' model is read from the index. When it
    is the configured one, a manifest is written recording the spec, so a later change of
    ``HINDSIGHT_EMBEDDER`` still serves (with a warning) until ``hindsight reindex
    --re-embed`` has moved the index; when it is another model, there is no spec to build
    it from and the start is refused with what to do.
    """
    index.spec = spec
    if index.serving() is None:
        held = index.vectors.model
        if held is not None and held[0] != configured.model_name:
            raise ConfigurationError(reembed_hint(held[0], configured.model_name))
        if held is not None:
            index.files.switch_to(index.generation, held[0], held[1], spec)
            index.follow(wait=True)
    return ServingEmbedder(configured, index.serving, build)


def repair_on_switch(
    index: GenerationalSearchIndex,
    records: RecordStore,
    embedder: ServingEmbedder,
    clock: Clock,
    chunk_sizes: ChunkSizes,
) -> None:
    """When the server switches generation: embed with the new model what was written with
    the old one meanwhile, and index again what changed while the new one was loading
    (``core/usecases/reembed.py``)."""

    def repair(since: datetime) -> None:
        served = embedder.refresh()
        repaired = repair_after_switch(records, index, served, clock, chunk_sizes, since)
        logger.info("switch repaired memories=%d generation=%s", repaired, index.generation)

    index.on_switch.append(repair)
