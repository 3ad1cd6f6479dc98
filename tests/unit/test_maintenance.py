"""Reindex and re-embed: the index is rebuilt from the record store."""

from __future__ import annotations

from hindsight.bootstrap import rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from tests.fakes import HashingEmbedder


def test_reindex_rebuilds_a_lost_index(service, principal):
    from hindsight.adapters.memory import InMemorySearchIndex

    service.store(principal, StoreMemoryCommand(user_id="u1", content="用户对花生过敏"))
    service = rewire(service, index=InMemorySearchIndex())  # the index was lost
    assert service.retrieve(principal, RetrieveCommand(user_id="u1", query="花生")).results == []
    counts = service.reindex()
    assert counts["indexed"] == 1
    result = service.retrieve(principal, RetrieveCommand(user_id="u1", query="花生"))
    assert [r.content for r in result.results] == ["用户对花生过敏"]


def test_re_embed_moves_every_vector_to_the_new_model(service, principal):
    stored = service.store(principal, StoreMemoryCommand(user_id="u1", content="likes tea"))
    service = rewire(service, embedder=HashingEmbedder(dimension=32, model_name="test-hashing-32"))
    counts = service.reindex(re_embed=True)
    assert counts["re_embedded"] == 1
    vector = service.ports.records.get_vectors("acme", [stored.memory_id])[stored.memory_id]
    assert (vector.model, vector.dim) == ("test-hashing-32", 32)
    result = service.retrieve(principal, RetrieveCommand(user_id="u1", query="tea"))
    assert result.results[0].why["similarity"] is not None
