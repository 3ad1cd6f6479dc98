"""Query expansion: more candidates for questions whose evidence one query misses.

Multi-hop questions ("What activities does Melanie partake in?") have evidence spread
over sessions, open-domain ones need words the question does not hold. Each technique
below is opt-in (``Policy.query_expansion``, a comma-separated list such as
``"rm3=8,sessions=3"``) and runs between the first searches and ranking: it adds hits to
the search's keyword and vector hits (or re-weights them), so ranking, paging and ``why``
are unchanged. None uses a language model; every added search is checked against the
time budget first.

- ``decompose``: a query joined by "and", commas, "和", "、"... is split into sub-queries;
  each is searched by keywords and by meaning, and a memory keeps the best of its scores
  (keyword scores scaled to the whole query's best).
- ``rm3=N``: pseudo-relevance feedback on keywords: the N terms that weigh most in the
  first pass's top memories (term frequency x the first-pass score x rarity among the
  candidates) are added to the query, searched again, and interpolated with the first
  keyword scores.
- ``rocchio=B``: dense pseudo-relevance feedback: the query vector moves towards the mean
  of its top hits' vectors (q + B x centroid, normalised) and the vector search runs again
  with it; the new vector is the query's from then on (similarities, the floor).
- ``entities``: names in the query (capitalised words, quoted phrases) are searched on
  their own; every memory mentioning one joins the candidates, unless the name is in
  so many memories that the search fills its pool (a speaker's name, say).
- ``sessions=N``: the other turns of the sessions of the first pass's top hits (the N
  best sessions) join the candidates, with their own similarity to the query; session
  pooling in ranking then lifts them.
- ``fact_sources``: the source episodes of the semantic facts among the top hits join the
  candidates, with at least the similarity of the fact they support.
- ``diversify=N``: after ranking, at most N turns of one session lead the top
  ``DIVERSITY_WINDOW`` results (the rest of that session's turns follow): evidence spread
  over sessions is not crowded out by one session that session pooling lifted whole.

None is on by default: none wins on every dev set. Measured in session 17 on the default
ranking (query centring 0.5), ``bench/devsets.py`` (its ``EXPANSIONS`` rows), R@10 / H@5
with every evidence turn counted; long-memory unchanged unless given:

                   LoCoMo         MSC            events zh      events en
    off (default)  0.763 / 0.782  0.560 / 0.621  0.853 / 0.867  0.800 / 0.733
    decompose      0.757 / 0.771  0.565 / 0.605  0.840 / 0.853  0.787 / 0.733
    rm3=8          0.760 / 0.780  0.552 / 0.621  unchanged      0.800 / 0.747
                   (long-memory zh H@5 1.000 -> 0.974)
    rocchio=0.2    0.761 / 0.783  0.560 / 0.625  0.867 / 0.853  0.787 / 0.747
                   (long-memory H@5 en 0.872 -> 0.846, zh 1.000 -> 0.974)
    entities       unchanged on every set
    sessions=1     0.761 / 0.788  0.556 / 0.625  unchanged      0.813 / 0.747
    diversify=4    0.729 / 0.767  0.609 / 0.621  unchanged      unchanged

diversify=4 is the one that helps where evidence is spread (LoCoMo multi-hop R@10 0.192 ->
0.228, MSC R@10 +0.048) and it costs the questions answered by one session (LoCoMo
adversarial 0.877 -> 0.780, single-hop 0.911 -> 0.877). Lifting only a session's n best
turns by pooling instead (n = 2, 3, 5, 8) loses LoCoMo at every n (-0.028 ... -0.003 R@10;
multi-hop 0.192 -> 0.203 ... 0.221); not built. With the offline reflector's facts
approved (``bench/decisions/facts_first.py``, LoCoMo conversations 0-1: 72 facts), a fact
counting as its source turns: facts first 0.829 -> 0.662 R@10 (share of evidence), with
``fact_sources`` 0.711, facts ranked as episodes 0.810: the offline facts are one turn
each, restated, and take the places of the turns that answer.

Every vector score an expansion adds is on the scale of the search's own: with query
centring the vector hits score by the centred query, so a part of the query, a session's
turns and a fact's sources are scored by centred vectors too (``searched``), and rocchio
searches again through the search (``search_vectors``). Before session 17 they added plain
cosines (larger) to centred scores, so what they touched looked best; rocchio failed with
a KeyError. The figures measured before query centring (session 9, LoCoMo share of
evidence recall@10 0.8031 off) were: decompose 0.7891, rm3 0.7964, rocchio=0.2 0.8000,
entities 0.8029, sessions 0.7983, diversify=4 0.7676; each added +0.1 to +10 ms. Why they
lose: of LoCoMo's multi-hop evidence turns (conversations 0-2) 43% rank in the top 10, 10%
at 11-20, 32% lower among the candidates and 15% are no candidate (open-domain: 31%, 11%,
17%, 42%): what is missed is mostly already a candidate, ranked low because it shares
few words or little meaning with the question, and feedback terms and vectors drift
towards the first pass's topic instead; the evidence found sits in one session with its
neighbours, which session pooling already lifts (more of the session adds noise, fewer of
it in the top 20 loses single-hop and temporal questions); names in LoCoMo questions are
the speakers', in half the turns.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from hindsight.core.embedding import embed_query
from hindsight.core.models import (
    HitFacts,
    MemoryKind,
    SearchFilter,
    SearchHit,
    SemanticMemory,
    StoredVector,
)
from hindsight.core.ports import Embedder, RecordStore, SearchIndex
from hindsight.core.text import tokenize

TECHNIQUES = (
    "decompose",
    "rm3",
    "rocchio",
    "entities",
    "sessions",
    "fact_sources",
    "diversify",
)
DEFAULT_RM3_TERMS = 8
DEFAULT_ROCCHIO_BETA = 0.5
DEFAULT_SESSIONS = 3
DEFAULT_PER_SESSION = 2
DIVERSITY_WINDOW = 20  # the top results diversify reorders (always ranked exactly)
FEEDBACK_DOCS = 5  # top first-pass memories that give feedback terms or vectors
BACKGROUND_DOCS = 50  # first-pass memories whose terms tell common from rare
FEEDBACK_CHARS = 4_000  # a long memory gives feedback terms from its start only
RM3_ORIGINAL_WEIGHT = 0.7  # keyword = 0.7 x first pass + 0.3 x expanded (scaled alike)
SUB_QUERY_WEIGHT = 0.8  # a sub-query's best keyword hit weighs this much of the query's
MAX_SUB_QUERIES = 4
SESSION_TURNS = 60  # turns read per expanded session at most
FACTS_EXPANDED = 10  # facts among the top hits whose sources join

Row = tuple[int, float, Any, Any]  # (tier, score, memory, parts) as ranking returns them

_SPLIT = re.compile(
    r"\s*(?:[,;，；、]|\band\b|\bor\b|\bas well as\b|以及|还有|并且|和|与|及|或者)\s*",
    re.IGNORECASE,
)
_NAME = re.compile(r"[\"“'‘「]([^\"”'’」]{2,40})[\"”'’」]|\b([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)")


@dataclass(frozen=True)
class Expansion:
    """The techniques switched on, with their parameters (0: off)."""

    decompose: bool = False
    rm3_terms: int = 0
    rocchio_beta: float = 0.0
    entities: bool = False
    sessions: int = 0
    fact_sources: bool = False
    per_session: int = 0  # diversify: at most this many turns of one session lead the window

    @property
    def enabled(self) -> bool:
        return self != Expansion()


@lru_cache(maxsize=64)
def parse_expansion(spec: str) -> Expansion:
    """``"rm3=8,sessions"`` → an ``Expansion``; a bad spec raises ValueError saying what to
    write."""
    values: dict[str, object] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, _, raw = item.partition("=")
        name = name.strip().lower()
        if name not in TECHNIQUES:
            raise ValueError(
                f"unknown query expansion {name!r}: use a comma-separated list of "
                f"{', '.join(TECHNIQUES)} (rm3, rocchio, sessions and diversify take "
                "=<number>), or ''"
            )
        values.update(_technique(name, raw.strip()))
    return Expansion(**values)  # type: ignore[arg-type]


def _technique(name: str, raw: str) -> dict[str, object]:
    if name in {"decompose", "entities", "fact_sources"}:
        if raw:
            raise ValueError(f"query expansion {name!r} takes no value; write just {name}")
        return {name: True}
    try:
        number = float(raw) if raw else None
    except ValueError:
        raise ValueError(f"query expansion {name}={raw!r}: the value must be a number") from None
    if number is not None and (number <= 0 or number > 100):
        raise ValueError(f"query expansion {name}={raw}: the value must be > 0 and <= 100")
    if name == "rm3":
        return {"rm3_terms": int(number or DEFAULT_RM3_TERMS)}
    if name == "rocchio":
        return {"rocchio_beta": number or DEFAULT_ROCCHIO_BETA}
    if name == "diversify":
        return {"per_session": int(number or DEFAULT_PER_SESSION)}
    return {"sessions": int(number or DEFAULT_SESSIONS)}


class ExpandableSearch(Protocol):
    """What expansion reads and extends of one query's search (``usecases/retrieve``)."""

    tenant_id: str
    filter: SearchFilter
    keyword_hits: dict[str, float]
    vector_hits: dict[str, float]
    facts: dict[str, HitFacts | None]
    query_vector: StoredVector | None
    candidate_ids: list[str]
    partial: bool

    def searched(self, vector: StoredVector) -> StoredVector:
        """The vector a search for ``vector`` runs with (centred when the query is):
        ``vector_hits`` hold scores by searched vectors only."""
        ...

    def search_vectors(self, query: StoredVector) -> None:
        """The vector search again, with ``query`` as the query's vector."""
        ...


@dataclass
class Expander:
    """Runs the switched-on techniques on one search, while ``time_left()``."""

    expansion: Expansion
    records: RecordStore
    index: SearchIndex
    embedder: Embedder
    pool: int
    vector_weight: float
    time_left: Callable[[], bool]

    def expand(self, search: ExpandableSearch, query: str) -> None:
        steps: list[tuple[bool, Callable[[ExpandableSearch, str], None]]] = [
            (self.expansion.fact_sources, self._fact_sources),
            (self.expansion.decompose, self._decompose),
            (self.expansion.entities, self._entities),
            (self.expansion.rm3_terms > 0, self._rm3),
            (self.expansion.rocchio_beta > 0.0, self._rocchio),
            (self.expansion.sessions > 0, self._sessions),
        ]
        for enabled, step in steps:
            if not enabled:
                continue
            if not self.time_left():
                search.partial = True
                break
            step(search, query)
        search.candidate_ids = list(dict.fromkeys([*search.keyword_hits, *search.vector_hits]))

    # --- techniques ----------------------------------------------------------------------

    def _decompose(self, search: ExpandableSearch, query: str) -> None:
        parts = sub_queries(query)
        if len(parts) < 2:
            return
        best = max(search.keyword_hits.values(), default=0.0)
        for part in parts:
            if not self.time_left():
                return
            hits = self.index.keyword_search(search.filter, part, self.pool)
            top = max((hit.score for hit in hits), default=0.0)
            scale = SUB_QUERY_WEIGHT * best / top if best > 0.0 and top > 0.0 else 1.0
            _merge_max(search, search.keyword_hits, hits, scale)
            if search.query_vector is not None:
                vector = search.searched(embed_query(self.embedder, part))
                _merge_max(search, search.vector_hits, self._vector(search, vector), 1.0)

    def _entities(self, search: ExpandableSearch, query: str) -> None:
        for name in query_names(query):
            if not self.time_left():
                return
            hits = self.index.keyword_search(search.filter, name, self.pool)
            if len(hits) >= self.pool:  # in too many memories to say which are meant
                continue
            _merge_max(search, search.keyword_hits, hits, 1.0)

    def _rm3(self, search: ExpandableSearch, query: str) -> None:
        ranked = first_pass(search, self.vector_weight)[:BACKGROUND_DOCS]
        if not ranked:
            return
        memories = self.records.get_many(search.tenant_id, [i for i, _ in ranked])
        contents = {m.memory_id: m.content[:FEEDBACK_CHARS] for m in memories}
        documents = [(tokenize(contents[i]), w) for i, w in ranked if i in contents]
        terms = feedback_terms(documents, set(tokenize(query)), self.expansion.rm3_terms)
        if not terms:
            return
        hits = self.index.keyword_search(search.filter, f"{query} {' '.join(terms)}", self.pool)
        _interpolate(search, hits)

    def _rocchio(self, search: ExpandableSearch, query: str) -> None:
        query_vector = search.query_vector
        if query_vector is None or not search.vector_hits:
            return
        top = sorted(search.vector_hits, key=lambda i: -search.vector_hits[i])[:FEEDBACK_DOCS]
        stored = self.records.get_vectors(search.tenant_id, top)
        rows = [
            _best_row(v, query_vector.values)
            for v in stored.values()
            if v.model == query_vector.model
        ]
        if not rows:
            return
        moved = query_vector.values + self.expansion.rocchio_beta * np.mean(rows, axis=0)
        values = (moved / np.linalg.norm(moved)).astype(np.float32)
        search.search_vectors(StoredVector(model=query_vector.model, values=values))

    def _sessions(self, search: ExpandableSearch, query: str) -> None:
        if search.query_vector is None:
            return
        vector = search.searched(search.query_vector)
        sessions: list[str] = []
        for memory_id, _ in first_pass(search, self.vector_weight):
            facts = search.facts.get(memory_id)
            session = facts.session_id if facts is not None else None
            if session and session not in sessions:
                sessions.append(session)
            if len(sessions) >= self.expansion.sessions:
                break
        for session in sessions:
            if not self.time_left():
                return
            within = replace(search.filter, session_id=session)
            hits = self.index.vector_search(within, vector, SESSION_TURNS)
            _merge_max(search, search.vector_hits, hits, 1.0)

    def _fact_sources(self, search: ExpandableSearch, query: str) -> None:
        vector = search.searched(search.query_vector) if search.query_vector else None
        facts = [
            memory_id
            for memory_id, _ in first_pass(search, self.vector_weight)
            if (f := search.facts.get(memory_id)) is not None and f.kind == MemoryKind.SEMANTIC
        ][:FACTS_EXPANDED]
        if vector is None or not facts:
            return
        inherited: dict[str, float] = {}
        for fact in self.records.get_many(search.tenant_id, facts):
            if isinstance(fact, SemanticMemory):
                own = search.vector_hits.get(fact.memory_id, 0.0)
                for source in fact.source_memory_ids:
                    inherited[source] = max(inherited.get(source, 0.0), own)
        episodes = self.records.get_many(search.tenant_id, list(inherited))
        admitted = {m.memory_id: m for m in episodes if search.filter.admits(m)}
        stored = self.records.get_vectors(search.tenant_id, list(admitted))
        for memory_id, memory in admitted.items():
            own = (
                float(np.max(_rows(stored[memory_id]) @ vector.values))
                if memory_id in stored
                else 0.0
            )
            score = max(own, inherited[memory_id])
            search.vector_hits[memory_id] = max(search.vector_hits.get(memory_id, 0.0), score)
            session = getattr(memory, "session_id", None)
            search.facts[memory_id] = HitFacts(memory.kind, session or None)

    def _vector(self, search: ExpandableSearch, vector: StoredVector) -> list[SearchHit]:
        return self.index.vector_search(search.filter, vector, self.pool)


# --- pieces (pure) -----------------------------------------------------------------------


def diversified(ranked: list[Row], per_session: int) -> list[Row]:
    """The ranked rows with, within the top ``DIVERSITY_WINDOW``, at most ``per_session``
    episodes of one session ahead of the others: the rest of a session's turns follow the
    window's other rows in their order (evidence spread over sessions reaches the top).
    The window is ranked exactly whatever the page, so pages stay consistent."""
    head, tail = ranked[:DIVERSITY_WINDOW], ranked[DIVERSITY_WINDOW:]
    counts: Counter[str] = Counter()
    kept: list[Row] = []
    deferred: list[Row] = []
    for row in head:
        session = getattr(row[2], "session_id", None)
        if session and counts[session] >= per_session:
            deferred.append(row)
            continue
        if session:
            counts[session] += 1
        kept.append(row)
    return kept + deferred + tail


def sub_queries(query: str) -> list[str]:
    """The parts of a query joined by conjunctions or list separators that hold a search
    term each (at most ``MAX_SUB_QUERIES``); fewer than two: nothing to decompose."""
    parts = [part.strip() for part in _SPLIT.split(query)]
    kept = [part for part in parts if part and tokenize(part)]
    return kept[:MAX_SUB_QUERIES] if len(kept) >= 2 else []


def query_names(query: str) -> list[str]:
    """Names a query mentions: quoted phrases and runs of capitalised words, less those
    that are only stopwords ("What", "I") or open the query."""
    names: list[str] = []
    for match in _NAME.finditer(query):
        quoted, capitalised = match.groups()
        name = (quoted or capitalised or "").strip()
        if capitalised and match.start() == 0 and " " not in name:
            continue  # the question's first word is capitalised whatever it is
        if name and tokenize(name) and name not in names:
            names.append(name)
    return names


def first_pass(search: ExpandableSearch, vector_weight: float) -> list[tuple[str, float]]:
    """The hits ordered by a plain fusion (scaled cosine and BM25), best first."""
    sims, keywords = search.vector_hits, search.keyword_hits
    low, high = (min(sims.values()), max(sims.values())) if sims else (0.0, 1.0)
    spread = high - low if high - low > 1e-9 else 1.0
    best = max(keywords.values(), default=0.0)
    weight = vector_weight if sims and best > 0.0 else (1.0 if sims else 0.0)
    scores: dict[str, float] = {}
    for memory_id in dict.fromkeys([*keywords, *sims]):
        similarity = (sims[memory_id] - low) / spread if memory_id in sims else 0.0
        keyword = keywords.get(memory_id, 0.0) / best if best > 0.0 else 0.0
        scores[memory_id] = weight * similarity + (1.0 - weight) * keyword
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def feedback_terms(
    documents: Sequence[tuple[list[str], float]], query_terms: set[str], count: int
) -> list[str]:
    """The ``count`` terms that weigh most in the feedback documents (the first
    ``FEEDBACK_DOCS``): frequency in each (by its length) x its first-pass weight x how
    rare the term is among all the given documents; the query's own terms left out."""
    if not documents:
        return []
    frequency: Counter[str] = Counter()
    for tokens, _ in documents:
        frequency.update(set(tokens))
    total = len(documents)
    weights: dict[str, float] = {}
    for tokens, weight in documents[:FEEDBACK_DOCS]:
        if not tokens:
            continue
        for term, n in Counter(tokens).items():
            if term in query_terms or term.isdigit():
                continue
            rarity = math.log((total + 1.0) / (frequency[term] + 0.5))
            gain = max(weight, 1e-3) * n / len(tokens) * rarity
            weights[term] = weights.get(term, 0.0) + gain
    ranked = sorted(weights.items(), key=lambda item: (-item[1], item[0]))
    return [term for term, weight in ranked[:count] if weight > 0.0]


def _interpolate(search: ExpandableSearch, hits: list[SearchHit]) -> None:
    """Keyword scores = original share x first pass + the rest x expanded, each scaled to
    its best, on the first pass's scale."""
    first = search.keyword_hits
    best = max(first.values(), default=0.0)
    top = max((hit.score for hit in hits), default=0.0)
    if top <= 0.0:
        return
    scale = best if best > 0.0 else top
    expanded = {hit.memory_id: hit.score / top for hit in hits}
    for hit in hits:
        search.facts[hit.memory_id] = search.facts.get(hit.memory_id) or hit.facts
    merged: dict[str, float] = {}
    for memory_id in dict.fromkeys([*first, *expanded]):
        old = first.get(memory_id, 0.0) / best if best > 0.0 else 0.0
        new = expanded.get(memory_id, 0.0)
        merged[memory_id] = scale * (RM3_ORIGINAL_WEIGHT * old + (1 - RM3_ORIGINAL_WEIGHT) * new)
    search.keyword_hits = merged


def _merge_max(
    search: ExpandableSearch, scores: dict[str, float], hits: list[SearchHit], scale: float
) -> None:
    for hit in hits:
        score = hit.score * scale
        if score > scores.get(hit.memory_id, float("-inf")):
            scores[hit.memory_id] = score
        search.facts[hit.memory_id] = search.facts.get(hit.memory_id) or hit.facts


def _rows(vector: StoredVector) -> np.ndarray:
    return vector.values.reshape(1, -1) if vector.values.ndim == 1 else vector.values


def _best_row(vector: StoredVector, query: np.ndarray) -> np.ndarray:
    """A memory's vector, or for a chunked one its chunk closest to the query."""
    rows = _rows(vector)
    return np.asarray(rows[int(np.argmax(rows @ query))])
