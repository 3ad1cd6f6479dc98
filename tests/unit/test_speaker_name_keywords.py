"""Speaker names as keywords (Policy.speaker_name_keywords, core/speakers.py): kept, dropped
from the keyword evidence, kept out of session pooling or of the lexical coverage only; and
the lexical coverage weighed by each term's rarity (Policy.lexical_idf, core/lexical.py)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight.bootstrap import rewire
from hindsight.core.commands import RetrieveCommand, StoreMemoryCommand
from hindsight.core.errors import ConfigurationError
from hindsight.core.lexical import coverage, rarity, term_weights, uncued, weighted_coverage
from hindsight.core.policy import Policy
from hindsight.core.speakers import check_mode, named_speakers, scaled_keywords
from hindsight.core.temporal import parse_query_time
from hindsight.core.text import term_words, tokenize, without_terms
from hindsight.settings import Settings
from tests.fakes import numbered_episode

QUESTION = "How does Avery earn a living?"


def test_the_terms_of_a_speaker_the_query_names_are_found():
    terms = frozenset(tokenize(QUESTION))
    avery = numbered_episode(1, "Avery: hi", speaker="Avery")
    jordan = numbered_episode(2, "Jordan: hi", speaker="Jordan")
    assert named_speakers(terms, [avery, jordan, None]) == frozenset({"avery"})
    # every word of the speaker must be in the query
    full = numbered_episode(3, "hi", speaker="Avery Stone")
    assert named_speakers(terms, [full]) == frozenset()
    # a query that is only the name keeps it: nothing else would match
    assert named_speakers(frozenset({"avery"}), [avery]) == frozenset()
    assert named_speakers(terms, [numbered_episode(4, "hi", speaker=None)]) == frozenset()


@pytest.mark.parametrize(
    ("query", "names"),
    [
        (QUESTION, {"avery"}),
        ("What did Caroline's dogs do at Avery's?", {"carolin", "avery"}),
        ("张伟平时喜欢吃什么？", {"张伟"}),
        ("Where does 张伟 work?", {"张伟"}),
    ],
)
def test_the_query_less_the_names_tokenizes_to_its_other_terms(query, names):
    names = frozenset(names)
    assert names <= set(tokenize(query))
    left = tokenize(without_terms(query, names))
    assert left == [t for t in tokenize(query) if t not in names]


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.sampled_from(["Avery", "earns", "living", "the", "dog's", "Jordan", "2024"])),
    dropped=st.sets(st.sampled_from(["avery", "earn", "jordan", "dog", "2024"])),
)
def test_without_terms_removes_exactly_those_terms(words, dropped):
    query = " ".join(words)
    dropped = frozenset(dropped)
    assert tokenize(without_terms(query, dropped)) == [
        t for t in tokenize(query) if t not in dropped
    ]
    assert without_terms(query, frozenset()) == query


def test_scaled_keywords_divide_by_the_best_of_the_ids():
    assert scaled_keywords(["a", "b", "c"], {"a": 2.0, "b": 1.0, "z": 9.0}) == {
        "a": 1.0,
        "b": 0.5,
        "c": 0.0,
    }
    assert scaled_keywords(["a"], {}) == {"a": 0.0}


def test_each_term_comes_with_a_word_that_makes_it():
    words = term_words("Which houses did 张伟 like?")
    assert set(words) == set(tokenize("Which houses did 张伟 like?"))
    for term, word in words.items():
        assert tokenize(word) == [term]
    assert words["hous"] == "houses"


def test_an_unknown_mode_is_refused():
    assert check_mode("drop") == "drop"
    with pytest.raises(ValueError, match="speaker_name_keywords"):
        check_mode("ignore")
    assert Policy().speaker_name_keywords == "keep"
    variable = "HINDSIGHT_SPEAKER_NAME_KEYWORDS"
    assert Settings.from_env({variable: "pool"}).speaker_name_keywords == "pool"
    with pytest.raises(ConfigurationError, match="SPEAKER_NAME_KEYWORDS"):
        Settings.from_env({variable: "ignore"})


# --- through the retrieve use case -----------------------------------------------------

TURNS = [  # (session, speaker, content)
    ("s1", "Avery", "Avery: nice weather today"),  # holds only the name asked about
    ("s1", "Jordan", "Jordan: it is sunny"),
    ("s2", "Jordan", "Jordan: what do you do for a living?"),
    ("s2", "Avery", "Avery: I earn my money as a nurse"),
]


def _ask(service, principal, clock, mode):
    for session, speaker, text in TURNS:
        command = StoreMemoryCommand(
            user_id="u1", content=text, speaker=speaker, session_id=session
        )
        service.store(principal, command)
        clock.advance(minutes=1)
    variant = rewire(service, dataclasses.replace(service.policy, speaker_name_keywords=mode))
    command = RetrieveCommand(user_id="u1", query=QUESTION, time_decay=1.0, top_k=10)
    return {r.content: r for r in variant.retrieve(principal, command).results}


def test_kept_the_name_alone_is_keyword_evidence(service, principal, clock):
    results = _ask(service, principal, clock, "keep")
    assert results["Avery: nice weather today"].why["keyword_bm25"] > 0.0


def test_dropped_the_name_is_no_keyword_evidence_but_still_boosts(service, principal, clock):
    results = _ask(service, principal, clock, "drop")
    name_only = results["Avery: nice weather today"].why
    assert name_only["keyword_bm25"] == 0.0  # found by the model only
    assert name_only["speaker_boost"] == service.policy.speaker_boost
    answer = results["Avery: I earn my money as a nurse"].why
    assert answer["keyword_bm25"] > 0.0 and answer["keyword"] == 1.0
    # the coverage counts the terms other than the name: earn and living, both held by
    # the answer with its turn-before context
    assert answer["fusion"]["lexical_coverage"] == 1.0
    # Jordan's turn of the first session matched only "Avery" in its context: gone too
    assert results["Jordan: it is sunny"].why["keyword_bm25"] == 0.0


def test_pooled_the_session_is_lifted_only_by_relevance_without_the_name(service, principal, clock):
    results = _ask(service, principal, clock, "pool")
    name_only = results["Avery: nice weather today"].why
    assert name_only["keyword_bm25"] > 0.0  # its own relevance keeps the name
    # its session's best is fused without it: only the model's part
    weight = name_only["fusion"]["vector_weight"]
    session = [results["Avery: nice weather today"].why, results["Jordan: it is sunny"].why]
    best = max(weight * why["similarity_scaled"] for why in session)
    assert name_only["session_relevance"] == pytest.approx(best, abs=1e-3)
    assert name_only["own_relevance"] > best


# --- rarity-weighted lexical coverage (Policy.lexical_idf, core/lexical.py) --------------


def test_a_rarer_term_weighs_more_and_one_the_whole_pool_holds_almost_nothing():
    assert rarity(1, 100) > rarity(10, 100) > rarity(100, 100) > 0.0
    assert rarity(100, 100) == rarity(500, 100) < 0.01
    with pytest.raises(ValueError, match="positive pool"):
        rarity(1, 0)
    weights = term_weights(["lik", "screen"], {"lik": 100, "screen": 2}.__getitem__, 100)
    assert weights["screen"] > 10 * weights["lik"]


def test_the_weighted_coverage_is_the_share_of_the_weight_held():
    weights = {"lik": 1.0, "screen": 3.0}  # the terms of "like" and "screen"
    assert weighted_coverage(weights, "I like wine") == pytest.approx(0.25)
    assert weighted_coverage(weights, "a big screen, I like it") == pytest.approx(1.0)
    assert weighted_coverage({"lik": 0.0}, "I like wine") == 0.0
    # a long content is searched as text, as coverage does
    long = "filler " * 400 + "screens everywhere"
    assert weighted_coverage(weights, long) == pytest.approx(0.75)
    assert coverage(frozenset(weights), long) == pytest.approx(0.5)


def test_with_rarity_weights_a_hit_holding_only_common_words_is_a_weak_match(
    service, principal, clock
):
    for day in range(6):  # "like" in six memories, "screen" in one, "cat" in none
        command = StoreMemoryCommand(user_id="u1", content=f"I like thing {day}")
        service.store(principal, command)
        clock.advance(minutes=1)
    service.store(principal, StoreMemoryCommand(user_id="u1", content="my screen broke"))
    idf = rewire(service, dataclasses.replace(service.policy, lexical_idf=True))

    def coverages(query):
        command = RetrieveCommand(user_id="u1", query=query, time_decay=1.0)
        plain = service.retrieve(principal, command).results[0].why["fusion"]
        weighted = idf.retrieve(principal, command).results[0].why["fusion"]
        return plain["lexical_coverage"], weighted["lexical_coverage"]

    # half of the terms held either way plainly; weighed, the rare one held counts more
    # and the common one alone less
    plain, weighted = coverages("Do I like my screen?")
    assert plain == 0.5 and weighted > 0.6
    plain, weighted = coverages("Do I like my cat?")
    assert plain == 0.5 and weighted < 0.4


# --- the coverage without the terms other factors read (Policy.lexical_cues) ---------------


def test_the_cue_terms_are_the_named_speakers_and_the_time_cues_words():
    query = "What setback did Melanie face in October?"
    terms = frozenset(tokenize(query))
    when = parse_query_time(query, datetime(2024, 1, 1, tzinfo=UTC))
    assert uncued(terms, frozenset({"melani"}), when) == frozenset({"melani", "october"})
    assert uncued(terms, frozenset(), None) == frozenset()
    # a query of cues alone keeps them all: nothing else would be matched
    only = frozenset(tokenize("Melanie in October"))
    assert uncued(only, frozenset({"melani"}), when) == frozenset()


def test_with_cues_left_out_the_coverage_counts_the_other_terms(service, principal, clock):
    for text in ["Avery: the roof leaked again", "Jordan: my cat sleeps all day"]:
        speaker = text.split(":")[0]
        command = StoreMemoryCommand(user_id="u1", content=text, speaker=speaker)
        service.store(principal, command)
        clock.advance(minutes=1)
    command = RetrieveCommand(user_id="u1", query="What leaked at Avery's in May?", time_decay=1.0)
    plain = service.retrieve(principal, command).results[0].why["fusion"]
    cued = rewire(service, dataclasses.replace(service.policy, lexical_cues=True))
    without = cued.retrieve(principal, command).results[0].why["fusion"]
    # terms: leak, avery, may; the roof turn holds leak and avery: 2/3 plainly, and
    # leak of leak alone once the name and the month are left out
    assert plain["lexical_coverage"] == pytest.approx(2 / 3, abs=1e-3)
    assert without["lexical_coverage"] == 1.0
