"""Retrieve: hybrid (vector + keyword) search, ranked by ``hindsight.core.retrieval.ranking``.

The use case runs the two searches within the time budget, reads the records that can
still reach the requested page (re-checking on the source of truth what the index
filtered), and pages the ranked results with an opaque cursor
(``hindsight.core.retrieval.cursor``). Results are computed up to ``policy.max_results``.
"""

from __future__ import annotations

import logging
from datetime import datetime

import numpy as np

from hindsight.core.commands import RetrieveCommand, RetrieveResult
from hindsight.core.embedding import embed_query, neutral_vector
from hindsight.core.hit_log import HitLog
from hindsight.core.lifecycle import archived_hits
from hindsight.core.models import (
    HitFacts,
    ListQuery,
    Memory,
    MemoryKind,
    Principal,
    SearchFilter,
    SearchHit,
    SemanticMemory,
    StoredVector,
    TimeRange,
)
from hindsight.core.policy import CALIBRATION, Policy
from hindsight.core.ports import Clock, Embedder, RecordStore, SearchIndex
from hindsight.core.retrieval.centering import UserMeans, centred
from hindsight.core.retrieval.cursor import decode_cursor, encode_cursor, fingerprint
from hindsight.core.retrieval.echoes import with_echo_factors
from hindsight.core.retrieval.highlight import Match, query_words
from hindsight.core.retrieval.parallel import started
from hindsight.core.retrieval.ranking import (
    Candidate,
    Centred,
    Row,
    Scoring,
    calibrate,
    rank,
)
from hindsight.core.retrieval.rerank import Reranking, page_rows, reranked_page, rows_read
from hindsight.core.retrieval.score_cut import with_state_groups
from hindsight.core.retrieval.search_filter import checks_validity, query_reference, search_filter
from hindsight.core.retrieval.shaping import Shaping
from hindsight.core.retrieval.state_factor import with_state_factors
from hindsight.core.retrieval.states import (
    MAX_STATEMENT_CHARS,
    STATE_WINDOW,
    marked_updated,
    order_states,
    reference_time,
)
from hindsight.core.retrieval.subjects import (
    SPEAKERS_LISTED,
    SPEAKERS_READ,
    unknown_names,
    written_in,
)
from hindsight.core.retrieval.subjects import check_mode as check_subjects_mode
from hindsight.core.temporal import parse_query_time
from hindsight.core.text import tokenize

logger = logging.getLogger(__name__)


class RetrieveMemories:
    """Hybrid search over one user's memories, ranked and paged."""

    def __init__(
        self,
        records: RecordStore,
        index: SearchIndex,
        embedder: Embedder,
        clock: Clock,
        policy: Policy,
        hits: HitLog | None = None,
        rerank: Reranking | None = None,
    ) -> None:
        self.records = records
        self.index = index
        self.embedder = embedder
        self.clock = clock
        self.policy = policy
        self.hits = hits  # access tracking: counted here, written behind (core/hit_log.py)
        # the second stage, if a reranker is configured (core/retrieval/rerank.py)
        self.rerank = rerank
        self.unknown_names = check_subjects_mode(policy.unknown_names)
        # each user's mean memory vector, for query centering (core/retrieval/centering.py)
        self.means = UserMeans(records, clock.monotonic)

    def __call__(self, principal: Principal, command: RetrieveCommand) -> RetrieveResult:
        policy = self.policy
        # the first call loads the embedding model (seconds); that is start-up, not search,
        # so it happens before the time budget starts
        neutral = neutral_vector(self.embedder)
        deadline = self.clock.monotonic() + policy.retrieve_budget_seconds
        query_fingerprint = fingerprint(command)
        offset, as_of = 0, command.as_of or self.clock.now()
        if command.cursor:
            offset, as_of = decode_cursor(command.cursor, query_fingerprint)
        search = _Search(self, principal, command, search_filter(principal, command, as_of))
        search.validity = checks_validity(command)
        search.run(deadline)
        if unknown := self._unknown_names(search, command):  # core/retrieval/subjects.py
            return RetrieveResult(
                results=[],
                has_more=False,
                next_cursor=None,
                partial=search.partial,
                unknown_names=unknown,
            )
        query_terms = frozenset(tokenize(command.query))
        candidates = search.candidates()
        search.complete_similarities(candidates, deadline)
        candidates = search.at_least(command.min_similarity, candidates)

        query_vector = search.query_vector
        floor = float(np.dot(neutral, query_vector.values)) if query_vector is not None else 0.0
        query_time = parse_query_time(command.query, as_of)
        scoring = Scoring(
            search.similarities,
            search.keyword_hits,
            as_of,
            command,
            query_time,
            floor,
            query_terms,
            min_score=self._min_score(command),
            centred=_centred_scale(search, neutral),
        )
        wanted = min(offset + command.top_k, policy.max_results)
        exact = max(wanted, STATE_WINDOW)  # the states' window is ordered whatever the page
        exact = max(exact, rows_read(self.rerank))  # the rerank's N are ordered exactly too
        held: list[Row] = []
        ranked, total = rank(policy, candidates, scoring, search.fetched, search.fetch, exact, held)
        if held:  # min_score: what it left out comes back with a state of its group
            shown = len(ranked)
            ranked = with_state_groups(
                ranked,
                held,
                lambda ids: self.records.get_vectors(principal.tenant_id, ids),
                query_reference(command, as_of, query_time),
                command.query,
            )
            total += len(ranked) - shown
        ranked, updated_by = self._newest_states(principal, command, ranked, as_of, query_time)
        ranked = with_echo_factors(ranked[:STATE_WINDOW], command.query) + ranked[STATE_WINDOW:]
        shaping = Shaping(
            query_words(command.query), command.max_content_chars, policy.vector_weight
        )
        rows = page_rows(self.rerank, ranked, offset, wanted)  # reranked: from the first
        for row in rows:
            calibrate(row.memory, row.parts, scoring)  # why["probability"], for the rows shown
        page = [
            marked_updated(
                shaping.result(
                    row.memory,
                    row.parts.score,
                    row.parts.why(),
                    search.matches.get(row.memory.memory_id, []),
                ),
                updated_by.get(row.memory.memory_id),
            )
            for row in rows
        ]
        memories = [row.memory for row in rows]
        page = reranked_page(self.rerank, command.query, page, memories, offset, wanted)
        if self.hits is not None:
            self.hits.note(principal.tenant_id, [result.memory_id for result in page])
        has_more = offset + command.top_k < min(total, policy.max_results)
        next_cursor = (
            encode_cursor(offset + command.top_k, as_of, query_fingerprint) if has_more else None
        )
        logger.info(
            "retrieve tenant=%s candidates=%d read=%d results=%d partial=%s",
            principal.tenant_id,
            len(search.candidate_ids),
            len(search.fetched),
            len(page),
            search.partial,
        )
        return RetrieveResult(
            results=page,
            has_more=has_more,
            next_cursor=next_cursor,
            partial=search.partial,
            query_time=query_time,
        )

    def _unknown_names(self, search: _Search, command: RetrieveCommand) -> list[str]:
        """The names that leave the query unanswerable here (``core/retrieval/subjects.py``); none
        when the gate is off or the request's min_score is 0 (rank whatever there is)."""
        if self.unknown_names == "off" or command.min_score == 0.0:
            return []
        return unknown_names(command.query, search.holds, search.speakers, search.recent_speakers)

    def _min_score(self, command: RetrieveCommand) -> float:
        """The request's min_score; by default the policy's, when the scores are calibrated
        for this embedding model (with another model they rank but mean less: no cut)."""
        if command.min_score is not None:
            return command.min_score
        calibrated = self.embedder.model_name == CALIBRATION.model
        return self.policy.min_score if calibrated else 0.0

    def _newest_states(
        self,
        principal: Principal,
        command: RetrieveCommand,
        ranked: list[Row],
        as_of: datetime,
        query_time: TimeRange | None,
    ) -> tuple[list[Row], dict[str, Memory]]:
        """The top ``STATE_WINDOW`` with the members of each group of memories stating one
        attribute of the user taking the group's scores newest first (``core/retrieval/states.py``,
        ``core/retrieval/state_factor.py``), and each updated memory's newest state."""
        window = ranked[:STATE_WINDOW]
        shown = [row.memory for row in window]
        short = [m.memory_id for m in shown if len(m.content) <= MAX_STATEMENT_CHARS]
        if len(short) < 2:
            return ranked, {}
        vectors = self.records.get_vectors(principal.tenant_id, short)
        start, end = (query_time.start, query_time.end) if query_time else (None, None)
        reference, reorder = reference_time(command.query, as_of, start, end)
        states = order_states(
            shown,
            vectors,
            reference,
            reorder and command.current_only,
            command.query,
        )
        memories = {m.memory_id: m for m in shown}
        updated_by = {old: memories[new] for old, new in states.updated_by.items()}
        rescored = with_state_factors(window, states.order, updated_by)
        return rescored + ranked[STATE_WINDOW:], updated_by


class _Search:
    """One query's hits, and the records read for them (read lazily, see ``rank``)."""

    def __init__(
        self,
        use_case: RetrieveMemories,
        principal: Principal,
        command: RetrieveCommand,
        search_filter: SearchFilter,
    ) -> None:
        self.use_case = use_case
        self.tenant_id = principal.tenant_id
        self.command = command
        self.filter = search_filter
        self.keyword_hits: dict[str, float] = {}  # BM25-like score, as the index computed it
        self.vector_hits: dict[str, float] = {}  # cosine similarity, as the index computed it
        self.facts: dict[str, HitFacts | None] = {}
        self.similarities: dict[str, float] = {}
        self.query_vector: StoredVector | None = None
        self.centred_vector: StoredVector | None = None  # core/retrieval/centering.py
        # the candidates' similarities to the centred vector, when there is one
        self.centred_similarities: dict[str, float] | None = None
        self.plain_hits: dict[str, float] = {}  # the plain query's vector hits, if centred
        self.candidate_ids: list[str] = []
        self.fetched: dict[str, Memory | None] = {}  # None: gone from the store, or filtered
        self.matches: dict[str, list[Match]] = {}  # the chunks long memories were found by
        self.partial = False
        self.validity = False  # facts kept to those valid at the filter's ``now``

    def _matched(self, hit: SearchHit, by: str) -> None:
        if hit.chunk is not None and hit.span is not None:
            self.matches.setdefault(hit.memory_id, []).append(Match(hit.chunk, hit.span, by))

    def run(self, deadline: float) -> None:
        """Keyword search (the query embedded meanwhile), then within the budget vector search."""
        clock, index, embedder = self.use_case.clock, self.use_case.index, self.use_case.embedder
        pool, parallel = self.use_case.policy.candidate_pool, self.use_case.policy.parallel_searches
        text = self.command.query
        keyword = started(parallel, index.keyword_search, self.filter, text, pool)
        query = embed_query(embedder, text) if parallel else None
        for hit in keyword():
            self.keyword_hits[hit.memory_id] = hit.score
            self.facts[hit.memory_id] = hit.facts
            self._matched(hit, "keyword")
        if clock.monotonic() < deadline:
            self.search_vectors(embed_query(embedder, text) if query is None else query)
        else:
            self.partial = True
        if self.command.include_archived and self.query_vector is not None:
            self.vector_hits.update(archived_hits(self, pool))
        self.candidate_ids = list(dict.fromkeys([*self.keyword_hits, *self.vector_hits]))
        if clock.monotonic() >= deadline:
            self.partial = True

    def search_vectors(self, query: StoredVector) -> None:
        """Search by meaning with ``query`` as the query's vector: every score in
        ``vector_hits`` is by the searched vector (``searched``)."""
        search, policy = self.use_case.index.vector_search, self.use_case.policy
        parallel, pool = policy.parallel_searches, policy.candidate_pool
        self.query_vector, self.centred_vector = query, self._centred(query)
        self.vector_hits = {}
        searched = started(parallel, search, self.filter, self.searched(query), pool)
        # the plain cosines of the same neighbourhood: a second search costs less than
        # reading every candidate's vector (those it misses are read)
        centred = self.centred_vector is not None
        plain = started(parallel, search, self.filter, query, pool) if centred else None
        for hit in searched():
            self.vector_hits[hit.memory_id] = hit.score
            self.facts[hit.memory_id] = self.facts.get(hit.memory_id) or hit.facts
            self._matched(hit, "vector")
        if plain is not None:
            self.plain_hits = {hit.memory_id: hit.score for hit in plain()}

    def searched(self, vector: StoredVector) -> StoredVector:
        """The vector a search for the query's ``vector`` runs with: the centred one, if any."""
        return self.centred_vector or vector

    def _centred(self, query: StoredVector) -> StoredVector | None:
        """The query less ``Policy.centering`` times the user's mean memory vector (None
        when centering is off or the user has no vector of the model): what the vector
        search and the dense part of relevance use. The cosines (the floor, ``why``,
        ``min_similarity``, the calibration) stay the query's own."""
        weight = self.use_case.policy.centering
        if weight <= 0.0:
            return None
        user = self.filter.user_id
        mean = self.use_case.means.mean(self.tenant_id, user, query, self.filter.now)
        return None if mean is None else centred(query, mean, weight)

    def holds(self, name: str) -> bool:
        """Whether a memory the query may read holds ``name`` as written (the keyword
        search stems: "Tim" finds "time"), or names it as its speaker: the query's own
        best keyword hits first (the name is one of its words), then the name alone."""
        best = _best(self.keyword_hits, SPEAKERS_READ)
        if any(written_in(name, memory) for memory in self._read(best)):
            return True
        found = self.use_case.index.keyword_search(self.filter, name, SPEAKERS_READ)
        alone = [hit.memory_id for hit in found if hit.memory_id not in best]
        return any(written_in(name, memory) for memory in self._read(alone))

    def speakers(self) -> list[str | None]:
        """The speakers of the best keyword and vector hits (``core/retrieval/subjects.py``)."""
        best = _best(self.keyword_hits, SPEAKERS_READ) + _best(self.vector_hits, SPEAKERS_READ)
        return [getattr(memory, "speaker", None) for memory in self._read(best)]

    def recent_speakers(self) -> list[str | None]:
        """The speakers of the user's newest episodes the query may read."""
        records, user = self.use_case.records, self.filter.user_id
        recent = ListQuery(
            kinds=frozenset({MemoryKind.EPISODIC}), scopes=self.filter.scopes, now=self.filter.now
        )
        page = records.list(self.tenant_id, user, recent, SPEAKERS_LISTED)
        return [getattr(memory, "speaker", None) for memory in page.items]

    def _read(self, memory_ids: list[str]) -> list[Memory | None]:
        """The memories (None: gone or filtered), read once."""
        if unread := [i for i in dict.fromkeys(memory_ids) if i not in self.fetched]:
            self.fetch(unread)
        return [self.fetched.get(i) for i in memory_ids]

    def fetch(self, memory_ids: list[str]) -> None:
        """Read memories and re-check on the source of truth what the index filtered."""
        records = self.use_case.records
        found = {m.memory_id: m for m in records.get_many(self.tenant_id, memory_ids)}
        for memory_id in memory_ids:
            memory = found.get(memory_id)
            allowed = memory is not None and _allowed(memory, self.filter, self.filter.now)
            if allowed and self.validity and isinstance(memory, SemanticMemory):
                allowed = self.filter.now is None or memory.valid_at(self.filter.now)
            self.fetched[memory_id] = memory if allowed else None

    def candidates(self) -> list[Candidate]:
        """The hits as ranking sees them; records are read here only when the index did not
        describe every hit (otherwise only those that can reach the page are, in ``rank``)."""
        described = {i: self.facts.get(i) for i in self.candidate_ids}
        if all(facts is not None for facts in described.values()):
            return [Candidate.of_hit(i, facts) for i, facts in described.items() if facts]
        self.fetch(self.candidate_ids)
        read = (self.fetched[i] for i in self.candidate_ids)
        return [Candidate.of_memory(memory) for memory in read if memory is not None]

    def at_least(self, least: float | None, candidates: list[Candidate]) -> list[Candidate]:
        """The candidates whose cosine is at least ``least`` (the request's min_similarity)."""
        if least is None:
            return candidates
        return [c for c in candidates if self.similarities.get(c.memory_id, -1.0) >= least]

    def complete_similarities(self, candidates: list[Candidate], deadline: float) -> None:
        """Cosines of every candidate: the vector search's, and for keyword hits it did not
        return, from their stored vectors (while the budget lasts)."""
        ids = [c.memory_id for c in candidates]
        query, centred_query = self.query_vector, self.centred_vector
        # centred: the vector hits' scores are the centred query's (``searched``), the plain
        # cosines come from the second search; those it missed are read from their vectors
        plain = self.vector_hits if centred_query is None else self.plain_hits
        centred = self.vector_hits.keys()
        self.similarities = {i: plain[i] for i in ids if i in plain}
        if centred_query is not None:
            self.centred_similarities = {i: self.vector_hits[i] for i in ids if i in centred}
        unread = [i for i in ids if i not in plain or i not in centred]
        if query is None or not unread:
            return
        if self.use_case.clock.monotonic() >= deadline:
            self.partial = True
            return
        stored = self.use_case.records.get_vectors(self.tenant_id, unread)
        for memory_id, vector in stored.items():
            if vector.model == query.model and vector.dim == query.dim:
                scores = vector.rows @ query.values
                best = int(np.argmax(scores))
                self.similarities[memory_id] = float(scores[best])  # its best piece's cosine
                if centred_query is not None and self.centred_similarities is not None:
                    centred_scores = vector.rows @ centred_query.values
                    best = int(np.argmax(centred_scores))  # the piece the ranking reads
                    self.centred_similarities[memory_id] = float(centred_scores[best])
                if vector.chunked and memory_id not in self.vector_hits:
                    hit = SearchHit(memory_id, float(scores[best]), None, best, vector.spans[best])
                    self._matched(hit, "vector")


def _best(hits: dict[str, float], count: int) -> list[str]:
    """The ids of the ``count`` best-scored hits, best first."""
    return sorted(hits, key=lambda memory_id: -hits[memory_id])[:count]


def _centred_scale(search: _Search, neutral: np.ndarray) -> Centred | None:
    """The candidates' similarities to the centred query and its floor, if centred."""
    if search.centred_vector is None or search.centred_similarities is None:
        return None
    floor = float(np.dot(neutral, search.centred_vector.values))
    return Centred(search.centred_similarities, floor)


def _allowed(memory: Memory, search_filter: SearchFilter, as_of: datetime | None) -> bool:
    """Re-check on the source of truth what the index filtered (it may lag behind); an
    episode that occurred after ``as_of`` had not happened yet."""
    if as_of is not None and memory.occurred_at > as_of and memory.kind == MemoryKind.EPISODIC:
        return False
    return search_filter.admits(memory)
