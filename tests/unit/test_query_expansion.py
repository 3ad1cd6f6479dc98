"""Query expansion (core/query_expansion.py): each technique brings in the memories it
exists for, through the real retrieve use case on in-memory adapters, and the spec is
validated with a message saying what to write.

The candidate pool is kept tiny (1-3 hits per search) so that what a plain search leaves
out is known, and what the expansion adds is visible in the results.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hindsight.bootstrap import rewire
from hindsight.core.commands import ReflectCommand, RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ConfigurationError
from hindsight.core.models import HitFacts, MemoryKind, SearchFilter, StoredVector
from hindsight.core.query_expansion import (
    Expander,
    Expansion,
    feedback_terms,
    parse_expansion,
    query_names,
    sub_queries,
)
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder


def store(service, principal, content, **fields):
    command = StoreMemoryCommand(**{"user_id": "u1", "content": content, **fields})
    return service.store(principal, command).memory_id


def found(service, principal, query, **policy):
    tuned = rewire(service, policy=dataclasses.replace(service.policy, **policy))
    result = tuned.retrieve(principal, RetrieveCommand(user_id="u1", query=query, top_k=20))
    return [r.content for r in result.results]


# --- the spec -------------------------------------------------------------------------------


def test_spec_is_parsed_with_defaults_and_values():
    assert parse_expansion("") == Expansion()
    assert not parse_expansion(" , ").enabled
    both = parse_expansion("rm3=4, sessions")
    assert (both.rm3_terms, both.sessions, both.decompose) == (4, 3, False)
    assert parse_expansion("rocchio").rocchio_beta == 0.5
    assert parse_expansion("ROCCHIO=0.2,fact_sources").fact_sources


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("bm25", "unknown query expansion 'bm25'"),
        ("rm3=many", "must be a number"),
        ("sessions=0", "must be > 0"),
        ("decompose=2", "takes no value"),
    ],
)
def test_a_bad_spec_says_what_to_write(spec, says):
    with pytest.raises(ValueError, match=says):
        parse_expansion(spec)


def test_a_bad_setting_names_the_variable():
    with pytest.raises(ConfigurationError, match="HINDSIGHT_QUERY_EXPANSION"):
        Settings.from_env({"HINDSIGHT_QUERY_EXPANSION": "rm3,telepathy"})
    assert Settings.from_env({"HINDSIGHT_QUERY_EXPANSION": "rm3=5"}).query_expansion == "rm3=5"


# --- the pure pieces ------------------------------------------------------------------------


def test_sub_queries_split_on_conjunctions_in_both_languages():
    assert sub_queries("Where did Anna camp and what did she cook?") == [
        "Where did Anna camp",
        "what did she cook?",
    ]
    assert sub_queries("我喜欢的水果和运动") == ["我喜欢的水果", "运动"]
    assert sub_queries("What does Anna like?") == []
    assert sub_queries("cats, dogs and the") == ["cats", "dogs"]


def test_query_names_skip_the_opening_word_and_stopwords():
    assert query_names("What did Anna buy in New York?") == ["Anna", "New York"]
    assert query_names('Did I mention "blue lagoon"?') == ["blue lagoon"]
    assert query_names("When is it?") == []


def test_feedback_terms_prefer_terms_rare_among_the_candidates():
    documents = [
        (["epipen", "drawer", "kitchen"], 1.0),
        (["epipen", "kitchen"], 0.9),
        *[(["kitchen", "weather"], 0.1) for _ in range(10)],
    ]
    terms = feedback_terms(documents, {"peanut"}, 2)
    assert terms[0] == "epipen"
    assert "kitchen" not in terms  # in every candidate: says nothing
    assert feedback_terms(documents, {"epipen", "drawer"}, 1) != ["epipen"]
    assert feedback_terms([], set(), 3) == []


# --- each technique, through the use case ---------------------------------------------------


def test_sessions_bring_in_the_other_turns_of_the_top_session(service, principal):
    store(service, principal, "Do you still have the peanut allergy?", session_id="s1")
    store(service, principal, "Yes, I carry my injector everywhere", session_id="s1")
    store(service, principal, "The weather was lovely at the coast", session_id="s2")
    plain = found(service, principal, "peanut allergy", candidate_pool=1)
    assert plain == ["Do you still have the peanut allergy?"]
    expanded = found(
        service, principal, "peanut allergy", candidate_pool=1, query_expansion="sessions=1"
    )
    assert "Yes, I carry my injector everywhere" in expanded
    assert "The weather was lovely at the coast" not in expanded


def test_rm3_scores_a_memory_by_feedback_terms_alone(service, principal):
    store(service, principal, "peanut allergy: the epipen is in the drawer")
    store(service, principal, "bought a new epipen for the drawer")
    store(service, principal, "we watched a film about sharks")

    def keyword_of_refill(**policy):
        tuned = rewire(service, policy=dataclasses.replace(service.policy, **policy))
        command = RetrieveCommand(user_id="u1", query="peanut allergy", top_k=20)
        results = tuned.retrieve(principal, command).results
        return {r.content: r.why["keyword_bm25"] for r in results}

    assert keyword_of_refill()["bought a new epipen for the drawer"] == 0.0
    expanded = keyword_of_refill(query_expansion="rm3=2")
    assert expanded["bought a new epipen for the drawer"] > 0.0  # found by "epipen drawer"
    assert expanded["we watched a film about sharks"] == 0.0


def test_decompose_searches_each_part(service, principal):
    store(service, principal, "my favourite colour is teal")
    store(service, principal, "the cat is called Miso")
    store(service, principal, "I play squash on Mondays")
    query = "favourite colour, cat called and squash Mondays"
    assert len(found(service, principal, query, candidate_pool=1)) <= 2
    expanded = found(service, principal, query, candidate_pool=1, query_expansion="decompose")
    assert len(expanded) == 3


def test_entities_bring_in_every_memory_naming_a_rare_name(service, principal):
    # the pastry memories outscore the Lisbon ones on both searches and fill the pool
    for pastry in ["cake", "tart", "eclair"]:
        store(service, principal, f"which pastry did you eat? a {pastry}")
    for n in range(5):
        store(service, principal, f"weather report {n}")
    store(service, principal, "the tram ride in Lisbon")
    store(service, principal, "sunset over Lisbon harbour")
    query = "Which pastry did Alice eat in Lisbon?"
    plain = found(service, principal, query, candidate_pool=3)
    assert not any("Lisbon" in text for text in plain)
    expanded = found(service, principal, query, candidate_pool=3, query_expansion="entities")
    assert {"the tram ride in Lisbon", "sunset over Lisbon harbour"} <= set(expanded)


def test_rocchio_moves_the_query_towards_its_top_hits(service, principal):
    store(service, principal, "peanut allergy epipen")
    store(service, principal, "epipen refill order")
    store(service, principal, "sunny weather forecast")
    # centering off: with three memories it changes which two the first pass finds (the
    # one least like the others gains), and this is about the feedback's move
    expanded = found(
        service,
        principal,
        "peanut allergy",
        candidate_pool=2,
        query_expansion="rocchio=1",
        centering=0.0,
    )
    assert expanded[:2] == ["peanut allergy epipen", "epipen refill order"]


def test_fact_sources_bring_in_the_episodes_of_an_approved_fact(service, principal, reflector):
    reflector.when("zzz", "The user is allergic to peanuts", "constraint", "high")
    source = "zzz my throat itches after satay"
    store(service, principal, source)
    for n in range(10):
        store(service, principal, f"allergic to peanuts, note {n}")
    created = service.reflect(principal, ReflectCommand(user_id="u1")).created
    service.approve(principal, created[0]["memory_id"])
    query = "allergic to peanuts"
    assert source not in found(service, principal, query, candidate_pool=2)
    expanded = found(service, principal, query, candidate_pool=2, query_expansion="fact_sources")
    assert expanded[0] == "The user is allergic to peanuts"
    assert source in expanded


# --- with query centring: one scale for every vector score -----------------------------------


def _scores(service, principal, query, **policy):
    tuned = rewire(service, policy=dataclasses.replace(service.policy, **policy))
    result = tuned.retrieve(principal, RetrieveCommand(user_id="u1", query=query, top_k=20))
    return {r.content: (r.why["similarity"], r.why["similarity_scaled"]) for r in result.results}


CAMPING = [
    "we hiked to the waterfall and swam",
    "the tent leaked on the second night",
    "my sister brought her new puppy",
    "we grilled fish over the campfire",
]


def test_sessions_that_find_nothing_new_change_no_score(service, principal):
    # every turn is a candidate already; the searches are centred (the default), and a
    # score the expansion adds must be on the centred search's scale: a plain cosine is
    # larger and made every hit it touched look best
    assert service.policy.centering > 0.0
    for text in CAMPING:
        store(service, principal, text, session_id="s1")
    plain = _scores(service, principal, "camping by the waterfall")
    assert len(plain) == 4
    expanded = _scores(service, principal, "camping by the waterfall", query_expansion="sessions")
    assert expanded == plain


def test_a_fact_less_like_the_query_than_its_source_changes_no_score(service, principal, reflector):
    reflector.when("puppy", "Dog owner in the family", "fact", "high")
    for text in CAMPING:
        store(service, principal, text)
    created = service.reflect(principal, ReflectCommand(user_id="u1")).created
    service.approve(principal, created[0]["memory_id"])
    query = "my sister brought her new puppy"  # the source, word for word
    plain = _scores(service, principal, query)
    assert len(plain) == 5  # the fact is a candidate too
    assert _scores(service, principal, query, query_expansion="fact_sources") == plain


# --- the budget -----------------------------------------------------------------------------


@dataclasses.dataclass
class _Search:
    tenant_id: str = "acme"
    filter: SearchFilter = dataclasses.field(
        default_factory=lambda: SearchFilter(tenant_id="acme", user_id="u1")
    )
    keyword_hits: dict[str, float] = dataclasses.field(default_factory=lambda: {"m1": 1.0})
    vector_hits: dict[str, float] = dataclasses.field(default_factory=dict)
    facts: dict[str, HitFacts | None] = dataclasses.field(
        default_factory=lambda: {"m1": HitFacts(MemoryKind.EPISODIC, "s1")}
    )
    query_vector: StoredVector | None = None
    candidate_ids: list[str] = dataclasses.field(default_factory=list)
    partial: bool = False


class _Refusing:
    """Ports that fail the test if expansion searches or reads after the budget ran out."""

    def __getattr__(self, name):
        raise AssertionError(f"{name} called after the time budget ran out")


def test_no_expansion_runs_once_the_budget_is_spent():
    search = _Search()
    refusing = _Refusing()
    expander = Expander(
        parse_expansion("rm3,sessions,decompose"),
        refusing,
        refusing,
        refusing,
        pool=10,
        vector_weight=0.6,
        time_left=lambda: False,
    )
    expander.expand(search, "peanuts and cats")
    assert search.partial
    assert search.candidate_ids == ["m1"]


class _CentringSearch(_Search):
    """A search whose vector searches are centred: records what expansion asks of it."""

    def __init__(self, **fields):
        super().__init__(**fields)
        self.centred: list[StoredVector] = []  # what ``searched`` returned
        self.searched_again: list[StoredVector] = []

    def searched(self, vector):
        centred = StoredVector(model=vector.model, values=vector.values - 0.25)
        self.centred.append(centred)
        return centred

    def search_vectors(self, query):
        self.searched_again.append(query)


class _Index:
    def __init__(self):
        self.vectors: list[StoredVector] = []

    def keyword_search(self, search_filter, text, pool):
        return []

    def vector_search(self, search_filter, vector, pool):
        self.vectors.append(vector)
        return []


class _Vectors:
    def get_vectors(self, tenant_id, memory_ids):
        return {
            i: StoredVector(model="test-hashing-64", values=np.ones(64, np.float32) / 8)
            for i in memory_ids
        }


def _expander(spec, index, records=None):
    return Expander(
        parse_expansion(spec), records, index, HashingEmbedder(), 10, 0.6, time_left=lambda: True
    )


def test_each_part_of_a_decomposed_query_is_searched_centred():
    index = _Index()
    query = StoredVector(model="test-hashing-64", values=np.full(64, 0.125, np.float32))
    search = _CentringSearch(query_vector=query)
    _expander("decompose", index).expand(search, "peanut allergy and the cat's name")
    assert len(index.vectors) == 2
    assert all(any(v is c for c in search.centred) for v in index.vectors)


def test_rocchio_searches_again_through_the_search_with_the_moved_query():
    index = _Index()
    query = StoredVector(model="test-hashing-64", values=np.eye(64, dtype=np.float32)[0])
    search = _CentringSearch(query_vector=query, vector_hits={"m1": 0.4, "m2": 0.3})
    _expander("rocchio=1", index, _Vectors()).expand(search, "peanut allergy")
    assert index.vectors == []  # not searched around the search's centring
    (moved,) = search.searched_again
    assert moved.values[0] > moved.values[1] > 0.0
    assert np.linalg.norm(moved.values) == pytest.approx(1.0)
    assert search.vector_hits == {"m1": 0.4, "m2": 0.3}  # left to the search


def test_diversify_lets_a_second_session_into_the_top(service, principal):
    for n in range(5):
        store(service, principal, f"camping trip by the lake, day {n}", session_id="s1")
    store(service, principal, "camping gear: a new tent", session_id="s2")
    store(service, principal, "unrelated note about taxes", session_id="s3")
    plain = found(service, principal, "camping trip lake")
    assert plain.index("camping gear: a new tent") >= 5
    expanded = found(service, principal, "camping trip lake", query_expansion="diversify=2")
    assert expanded[2] == "camping gear: a new tent"
    assert sorted(expanded) == sorted(plain)  # reordered, nothing lost


def test_diversified_pages_neither_repeat_nor_skip(service, principal):
    for n in range(12):
        store(service, principal, f"camping trip by the lake, day {n}", session_id=f"s{n % 3}")
    tuned = rewire(
        service, policy=dataclasses.replace(service.policy, query_expansion="diversify=1")
    )
    command = RetrieveCommand(user_id="u1", query="camping trip lake", top_k=20)
    whole = [r.memory_id for r in tuned.retrieve(principal, command).results]
    paged, cursor = [], None
    while True:
        page = tuned.retrieve(principal, command.model_copy(update={"top_k": 5, "cursor": cursor}))
        paged += [r.memory_id for r in page.results]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert paged == whole and len(whole) == 12
