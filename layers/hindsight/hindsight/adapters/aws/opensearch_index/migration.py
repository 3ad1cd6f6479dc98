"""Generations of the OpenSearch index: versioned indexes behind one alias.

Readers and writers (the API's functions, the stream indexer) use the configured name,
``HINDSIGHT_OPENSEARCH_INDEX``: a concrete index in a deployment that never migrated, an
alias afterwards. ``hindsight reindex --re-embed`` on the AWS backend
(``core/usecases/reembed.py``) fills ``<name>-v<n>`` from DynamoDB while the name keeps
serving the old index, then moves the name in one ``POST /_aliases`` request, which
OpenSearch applies atomically: a search sees the old index or the new one, never neither.

- First migration of a concrete index ``<name>``: the new index is ``<name>-v2`` and the
  request adds the alias ``<name>`` to it and deletes the concrete index (``remove_index``)
  together; an alias cannot share its name with an index, so both must happen at once.
- Later migrations: ``<name>-v<n+1>``; the request removes the alias from the old index and
  adds it to the new one. The new index's ``_meta.hindsight.previous`` names the old one,
  and a query still embedded with the old model (a service that has not looked at the
  served model again yet: at most every 30 s) is answered from it; after
  ``grace_seconds`` (60) the old index is deleted (``keep_old=True`` keeps it; it is not
  written any more). The first migration cannot keep the concrete index (the alias takes
  its name), so for up to 30 s after it such a query is answered 409.

The index being built records its progress in its mapping's ``_meta.hindsight.migration``
(the cursor, the count, the start): a run killed at any point resumes there. The served
index's ``_meta.hindsight`` records the model and the embedder spec; the services embed
their queries with that model (``adapters/embedders/serving.py``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from hindsight.adapters.aws.opensearch_index.errors import translated_errors
from hindsight.adapters.aws.opensearch_index.index import OpenSearchSearchIndex, Refresh
from hindsight.adapters.aws.opensearch_index.mapping import create_index_body, index_meta
from hindsight.adapters.embedders.serving import ServingEmbedder
from hindsight.core.ports import Embedder
from hindsight.core.usecases.reembed import Key, MigrationState

logger = logging.getLogger(__name__)


def hindsight_meta(client: Any, name: str) -> tuple[str, dict[str, Any]] | None:
    """(concrete index, its ``_meta.hindsight``) of an index or alias; None if absent."""
    if not client.indices.exists(index=name):
        return None
    response = client.indices.get_mapping(index=name)
    concrete, body = next(iter(response.items()))
    return concrete, dict(body.get("mappings", {}).get("_meta", {}).get("hindsight", {}))


class OpenSearchIndexMigration:
    """``IndexMigration`` of the AWS backend (see the module's description)."""

    def __init__(
        self,
        client: Any,
        name: str,
        shards: int | None = 1,
        replicas: int | None = 0,
        refresh: Refresh = False,
        keep_old: bool = False,
        grace_seconds: float = 60.0,
    ) -> None:
        self.client = client
        self.name = name
        self.shards = shards
        self.replicas = replicas
        self.refresh = refresh
        self.keep_old = keep_old
        self.grace_seconds = grace_seconds
        self._pattern = re.compile(rf"^{re.escape(name)}-v(\d+)$")
        self._state: MigrationState | None = None
        self._spec = ""
        self._switched = False

    # --- what is served ------------------------------------------------------------------
    def serving_model(self) -> str | None:
        with translated_errors(self.name, "reading the mapping"):
            found = hindsight_meta(self.client, self.name)
        return None if found is None else found[1].get("model")

    def served_indexes(self) -> list[str]:
        """The concrete indexes the name stands for (itself, when it is not an alias)."""
        with translated_errors(self.name, "reading the alias"):
            if self.client.indices.exists_alias(name=self.name):
                return sorted(self.client.indices.get_alias(name=self.name))
            if self.client.indices.exists(index=self.name):
                return [self.name]
        return []

    def _versions(self) -> dict[str, int]:
        response = self.client.indices.get(index=f"{self.name}-v*", ignore_unavailable=True)
        found = {}
        for concrete in response:
            match = self._pattern.match(concrete)
            if match:
                found[concrete] = int(match.group(1))
        return found

    # --- building --------------------------------------------------------------------------
    def begin(
        self, model: str, dimension: int, embedder_spec: str, now: datetime
    ) -> MigrationState:
        self._spec = embedder_spec
        with translated_errors(self.name, "starting a migration"):
            served = set(self.served_indexes())
            versions = self._versions()
            for concrete in sorted(set(versions) - served, key=versions.__getitem__):
                state = self._unfinished(concrete, model, dimension)
                if state is not None:
                    self._state = state
                    logger.info("re-embedding resumed index=%s cursor=%s", concrete, state.cursor)
                    return state
                logger.info("dropping unfinished index index=%s", concrete)
                self.client.indices.delete(index=concrete, ignore_unavailable=True)
            number = max([1, *(v for k, v in versions.items() if k in served)]) + 1
            concrete = f"{self.name}-v{number}"
            body = create_index_body(dimension, self.shards, self.replicas, "lucene", model)
            self.client.indices.create(index=concrete, body=body)
            self._state = MigrationState(concrete, model, dimension, now)
            self._save(self._state)
        logger.info("re-embedding into index=%s model=%s", concrete, model)
        return self._state

    def _unfinished(self, concrete: str, model: str, dimension: int) -> MigrationState | None:
        found = hindsight_meta(self.client, concrete)
        meta = {} if found is None else found[1]
        progress = meta.get("migration")
        if not progress or (meta.get("model"), meta.get("dimension")) != (model, dimension):
            return None
        cursor = progress.get("cursor")
        return MigrationState(
            generation=concrete,
            model=model,
            dimension=dimension,
            started_at=datetime.fromisoformat(str(progress["started_at"])),
            cursor=(str(cursor[0]), str(cursor[1])) if cursor else None,
            done=int(progress.get("done", 0)),
        )

    def _save(
        self, state: MigrationState, finished: bool = False, previous: dict[str, Any] | None = None
    ) -> None:
        meta = {**index_meta(state.model, state.dimension), "embedder": self._spec}
        if previous:
            meta["previous"] = previous
        if not finished:
            meta["migration"] = {
                "started_at": state.started_at.isoformat(),
                "cursor": list(state.cursor) if state.cursor else None,
                "done": state.done,
            }
        self.client.indices.put_mapping(index=state.generation, body={"_meta": {"hindsight": meta}})

    def _require(self) -> MigrationState:
        if self._state is None:
            raise RuntimeError("begin() first")
        return self._state

    def target(self) -> OpenSearchSearchIndex:
        state = self._require()
        name = self.name if self._switched else state.generation
        return OpenSearchSearchIndex(self.client, name, state.dimension, refresh=self.refresh)

    def save_progress(self, cursor: Key, done: int) -> None:
        state = self._require()
        self._state = MigrationState(
            state.generation, state.model, state.dimension, state.started_at, cursor, done
        )
        with translated_errors(state.generation, "saving progress"):
            self._save(self._state)

    def target_keys(self) -> set[Key]:
        from opensearchpy import helpers

        index = self.name if self._switched else self._require().generation
        query = {"query": {"term": {"chunk": 0}}, "_source": ["tenant_id", "memory_id"]}
        with translated_errors(index, "listing documents"):
            self.client.indices.refresh(index=index)
            return {
                (str(hit["_source"]["tenant_id"]), str(hit["_source"]["memory_id"]))
                for hit in helpers.scan(self.client, index=index, query=query)
            }

    # --- the switch --------------------------------------------------------------------------
    def _previous(self, old: list[str]) -> dict[str, Any] | None:
        if len(old) != 1:
            return None
        found = hindsight_meta(self.client, old[0])
        if found is None:
            return None
        meta = found[1]
        return {"index": old[0], "model": meta.get("model"), "dimension": meta.get("dimension")}

    def switch(self) -> None:
        """Move the name to the new index in one ``_aliases`` request."""
        state = self._require()
        new = state.generation
        with translated_errors(self.name, "switching the alias"):
            old = self.served_indexes()
            is_alias = bool(self.client.indices.exists_alias(name=self.name))
            previous = self._previous(old) if is_alias else None
            self._save(state, previous=previous)  # for readers a step behind (see above)
            self.client.indices.refresh(index=new)
            actions: list[dict[str, Any]] = [{"add": {"index": new, "alias": self.name}}]
            if old and not is_alias:  # a concrete index of the name: it goes in the same step
                actions.append({"remove_index": {"index": self.name}})
            else:
                actions = [{"remove": {"index": o, "alias": self.name}} for o in old] + actions
            self.client.indices.update_aliases(body={"actions": actions})
            self._switched = True
            self._save(state, finished=True, previous=previous)
            retired = [o for o in old if o not in (self.name, new)]  # never the one served
            if retired and not self.keep_old:
                # readers that embedded a query with the old model just before the switch
                # are answered from the old index (``OpenSearchSearchIndex``) until it goes
                time.sleep(self.grace_seconds)
                self.client.indices.delete(index=",".join(retired), ignore_unavailable=True)
        logger.info(
            "opensearch alias switched alias=%s index=%s retired=%s kept=%s",
            self.name,
            new,
            old,
            self.keep_old,
        )


def follow_alias_model(
    index: Any, configured: Embedder, build: Callable[[str], Embedder], check_every: float = 30.0
) -> Embedder:
    """The AWS service's embedder: the model of the index the name serves now (looked up
    at most every ``check_every`` s), so queries match it before and after a migration's
    switch. An index that is not OpenSearch (tests) keeps the configured embedder."""
    client, name = getattr(index, "client", None), getattr(index, "index_name", None)
    if client is None or not isinstance(name, str):
        return configured

    def serving() -> tuple[str, str] | None:
        with translated_errors(name, "reading the mapping"):
            found = hindsight_meta(client, name)
        if found is None or not found[1].get("model"):
            return None
        return str(found[1]["model"]), str(found[1].get("embedder") or "")

    return ServingEmbedder(configured, serving, build, check_every=check_every)
