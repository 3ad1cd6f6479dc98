"""Chunking of long memories, highlights and cuts, pieces for reflection, the context block."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from hindsight.core import chunking
from hindsight.core.commands import ContextCommand
from hindsight.core.embedding import ChunkSizes, embed_memories
from hindsight.core.models import EpisodicMemory, Principal, StoredVector
from hindsight.core.retrieval.highlight import Match, cut_around, highlight, query_words
from hindsight.core.text import content_hash
from hindsight.core.usecases.context import BuildContext, estimate_tokens
from hindsight.core.usecases.reflect import in_pieces
from tests.fakes import HashingEmbedder

EMBEDDER = HashingEmbedder()
T0 = datetime(2026, 5, 1, 12, tzinfo=UTC)


def words(text: str) -> int:
    return EMBEDDER.count_tokens(text)


def english(sentences: int) -> str:
    return " ".join(
        f"Sentence {i} talks about the budget of project number {i % 17}." for i in range(sentences)
    )


def assert_tiles(text: str, spans: list[tuple[int, int]]) -> None:
    """Chunks start at 0, end at the end, and every character is in some chunk."""
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start <= end, "a gap between chunks"
    assert all(start < end for start, end in spans)


@pytest.mark.parametrize("budget", [24, 64, 256])
def test_chunks_stay_within_the_budget_and_cover_the_text(budget: int) -> None:
    text = english(400)
    spans = chunking.split(text, words, budget, overlap_tokens=8)
    assert_tiles(text, spans)
    assert all(words(text[s:e]) <= budget + 2 for s, e in spans)  # +2: tokens are not additive
    assert len(spans) > len(text) // (budget * 12)


def test_chunks_end_at_sentence_ends_and_overlap() -> None:
    text = english(200)
    spans = chunking.split(text, words, 64, overlap_tokens=16)
    for start, end in spans[:-1]:
        assert text[start:end].rstrip().endswith("."), text[start:end][-30:]
    overlaps = [previous[1] - start for previous, (start, _) in itertools.pairwise(spans)]
    assert all(overlap > 0 for overlap in overlaps), "consecutive chunks share a sentence"


def test_chinese_is_cut_at_chinese_punctuation() -> None:
    text = "".join(f"第{i}段讨论了预算和进度安排，大家都同意了。" for i in range(300))
    spans = chunking.split(text, words, 64)
    assert_tiles(text, spans)
    assert len(spans) > 5
    for start, end in spans[:-1]:
        assert text[start:end].endswith("。")


def test_a_code_block_is_kept_whole_when_it_fits() -> None:
    code = "```python\n" + "\n".join(f"x{i} = compute({i})" for i in range(12)) + "\n```\n"
    text = english(30) + "\n\n" + code + english(30)
    spans = chunking.split(text, words, 128)
    fence = text.index("```")
    assert any(s <= fence and text.index("```\n", fence + 3) + 4 <= e for s, e in spans)


def test_a_unit_longer_than_a_chunk_is_cut_by_tokens() -> None:
    text = "word " * 2_000  # no sentence ends at all
    spans = chunking.split(text, words, 50)
    assert_tiles(text, spans)
    assert all(words(text[s:e]) <= 50 for s, e in spans)
    no_spaces = "字" * 3_000
    spans = chunking.split(no_spaces, words, 100)
    assert_tiles(no_spaces, spans)
    assert all(words(no_spaces[s:e]) <= 100 for s, e in spans)


def test_splitting_is_deterministic_and_short_text_is_one_chunk() -> None:
    text = english(120)
    assert chunking.split(text, words, 64) == chunking.split(text, words, 64)
    assert chunking.split("hello there.", words, 64) == [(0, 12)]
    with pytest.raises(ValueError, match="fewer than 8 tokens"):
        chunking.split(text, words, 5)


def episode(content: str, memory_id: str = "m1", **fields: object) -> EpisodicMemory:
    fields.setdefault("occurred_at", T0)
    return EpisodicMemory(
        memory_id=memory_id,
        tenant_id="t1",
        user_id="u1",
        content=content,
        created_at=T0,
        updated_at=T0,
        content_hash=content_hash(content),
        **fields,  # type: ignore[arg-type]
    )


def test_embed_memories_chunks_only_what_does_not_fit() -> None:
    short, long = episode("the user likes tea", "m1"), episode(english(300), "m2")
    vectors = embed_memories(EMBEDDER, [short, long], ChunkSizes(tokens=64, overlap=8))
    assert not vectors[0].chunked and vectors[0].values.shape == (EMBEDDER.dimension,)
    assert vectors[1].chunked
    assert vectors[1].values.shape == (len(vectors[1].spans), EMBEDDER.dimension)
    assert np.allclose(np.linalg.norm(vectors[1].values, axis=1), 1.0, atol=1e-5)


def test_a_session_turn_is_embedded_as_a_mix_of_itself_and_itself_in_context() -> None:
    before = "Did you ever go back to Portugal after the wedding?"
    reply = episode("Yes, twice, both times in Lisbon.", "m1", context=before)
    lone = episode("The user likes green tea.", "m2")
    long = episode(english(300), "m3", context=before)
    sizes = ChunkSizes(tokens=64, overlap=8, turn_weight=0.3)
    mixed, single, chunked = embed_memories(EMBEDDER, [reply, lone, long], sizes)
    alone = EMBEDDER.embed_documents([reply.content])[0]
    in_context = EMBEDDER.embed_documents([f"{before}\n{reply.content}"])[0]
    assert np.allclose(mixed.values, 0.3 * alone + 0.7 * in_context, atol=1e-6)
    query = EMBEDDER.embed_query("trips to Lisbon")
    # its inner product with a query is the same mix of the two cosines, not their cosine
    assert float(mixed.values @ query) == pytest.approx(
        0.3 * float(alone @ query) + 0.7 * float(in_context @ query), abs=1e-6
    )
    assert np.linalg.norm(mixed.values) < 1.0
    # a memory without a turn before it is embedded as it always was
    assert np.allclose(single.values, EMBEDDER.embed_documents([lone.content])[0], atol=1e-6)
    # a long turn: only its first chunk holds the turn before, so only that row is mixed
    first = chunked.spans[0]
    chunk = long.content[first[0] : first[1]]
    expected = 0.3 * EMBEDDER.embed_documents([chunk])[0]
    expected += 0.7 * EMBEDDER.embed_documents([f"{before}\n{chunk}"])[0]
    assert np.allclose(chunked.values[0], expected, atol=1e-6)
    assert np.allclose(np.linalg.norm(chunked.values[1:], axis=1), 1.0, atol=1e-5)
    # weight 0: the turn with the turn before, unmixed
    plain = embed_memories(EMBEDDER, [reply], ChunkSizes(tokens=64, overlap=8))[0]
    assert np.allclose(plain.values, in_context, atol=1e-6)


def test_a_stored_vector_refuses_rows_that_do_not_match_its_spans() -> None:
    with pytest.raises(ValueError, match="one row per span"):
        StoredVector("m", np.zeros((3, 4), dtype=np.float32), spans=((0, 1), (1, 2)))
    with pytest.raises(ValueError, match="one dimension"):
        StoredVector("m", np.zeros((3, 4), dtype=np.float32))


def test_highlight_excerpt_is_short_and_holds_the_query_words() -> None:
    text = english(100) + " The spare key is under the blue flowerpot. " + english(100)
    at = text.index("blue flowerpot")
    span = (max(0, at - 600), min(len(text), at + 600))
    found = highlight(text, Match(3, span, "keyword"), query_words("where is the spare key"))
    assert found["chunk"] == 3 and (found["start"], found["end"]) == span
    assert "spare key" in str(found["excerpt"]) and len(str(found["excerpt"])) <= 300


def test_cut_around_keeps_the_match_and_marks_the_cut() -> None:
    text = english(500) + " The spare key is under the blue flowerpot. " + english(500)
    at = text.index("blue flowerpot")
    cut, (start, end) = cut_around(text, (at - 100, at + 200), query_words("blue flowerpot"), 400)
    assert cut.startswith("…") and cut.endswith("…")
    assert "blue flowerpot" in cut and cut.strip("…") == text[start:end]
    assert end - start == 400
    whole, kept = cut_around("short", None, [], 400)
    assert (whole, kept) == ("short", (0, 5))


def test_long_episodes_reach_the_reflector_in_pieces_with_their_id() -> None:
    long, short = episode(english(400), "long"), episode("I like tea.", "short")
    pieces = in_pieces([long, short], 2_000)
    assert all(len(p.content) <= 2_000 for p in pieces)
    assert [p.memory_id for p in pieces].count("long") == len(pieces) - 1
    assert pieces[-1] == short
    joined = re.sub(r"\s+", " ", " ".join(p.content for p in pieces[:-1]))
    assert "Sentence 399 talks" in joined and "Sentence 0 talks" in joined


class _Records:
    """Just enough of a record store for the context use case: one session's turns."""

    def __init__(self, turns: list[EpisodicMemory]) -> None:
        self.turns = turns

    def list(self, tenant_id, user_id, query, limit, cursor=None):  # type: ignore[no-untyped-def]
        from hindsight.core.models import Page

        return Page(items=sorted(self.turns, key=lambda t: t.occurred_at, reverse=True))


class _Retrieve:
    def __call__(self, principal, command):  # type: ignore[no-untyped-def]
        from hindsight.core.results import RetrieveResult

        return RetrieveResult(results=[], has_more=False, next_cursor=None, partial=False)


def test_the_context_block_stays_within_budget_with_a_pasted_document() -> None:
    from tests.fakes import FixedClock, ScriptedReflector

    pasted = english(5_000)
    turns = [
        episode("hello, I will paste our contract", "t1", session_id="s1"),
        episode(pasted, "t2", session_id="s1", occurred_at=T0 + timedelta(minutes=1)),
        episode(
            "what does clause 4 say?", "t3", session_id="s1", occurred_at=T0 + timedelta(minutes=2)
        ),
    ]
    use_case = BuildContext(
        _Records(turns),  # type: ignore[arg-type]
        ScriptedReflector(),
        FixedClock(T0 + timedelta(days=3)),
        _Retrieve(),  # type: ignore[arg-type]
    )
    command = ContextCommand(
        user_id="u1", session_id="s1", budget_tokens=300, max_content_chars=500
    )
    result = use_case(Principal(tenant_id="t1"), command)
    assert result.tokens <= 300 and estimate_tokens(result.context) <= 300
    assert "what does clause 4 say?" in result.context  # the pasted turn did not crowd it out
    assert "more characters: memory t2" in result.context
    views = {view["memory_id"]: view for view in result.recent_turns}
    assert views["t2"]["content_truncated"] and len(views["t2"]["content"]) == 501
