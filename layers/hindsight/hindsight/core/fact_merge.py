"""Merging extracted facts into a user's live facts: create, repeat or supersede.

* same topic (or near-identical wording) and the same meaning → a repeat: confidence
  rises one step, the new sources are added, mention_count grows;
* same topic, different content → a contradiction: the new fact supersedes the old one,
  which is kept with status ``superseded`` and linked both ways; the old one's
  ``valid_until`` is the new one's ``valid_from`` (its earliest source episode), so a read
  ``as_of`` a past moment finds the fact that held then. Of a state topic (one value at a
  time) only with evidence of a new value (``_state_changed``): not when the new fact says
  the same state again (``state_facts.restates``); when it says the state ended, or that
  something changed with a new value (``state_facts.changes_value``), or when its episodes
  state a new value of the older's (below);
* a new state: one of the new fact's source episodes states a new value of an attribute
  an older episode stated (the evidence retrieval marks an update by,
  ``states.updated_attributes``: the same person, a new value, the old one gone or ended),
  and both facts name that attribute → the new fact supersedes the older episode's fact,
  whatever their topics ("Got a Xperia 5 for my birthday" replaces "The user's phone is a
  Galaxy S22"); when the rule is unsure, both facts stay;
* after the run's facts are merged, an episode of the run that states a new value of an
  attribute a live fact names and says something changed, holds now, ended or is the only
  one, said after every source of that fact, supersedes the fact itself when no fact
  drawn from it did (``retire_outdated``: "I no longer follow Juventus, I'm a Barcelona fan
  now" gives no fact, yet "The user is a die-hard Juventus fan" no longer holds);
* otherwise a new fact, ``pending`` review unless policy auto-approves high confidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import numpy as np

from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    ExtractedFact,
    FactStatus,
    SemanticMemory,
    StoredVector,
)
from hindsight.core.retrieval.state_attributes import ATTRIBUTES
from hindsight.core.retrieval.state_facts import (
    attributes_named,
    changes_value,
    restates,
    statement_cosine,
)
from hindsight.core.retrieval.states import (
    MAX_STATEMENT_CHARS,
    Statement,
    is_state_topic,
    same_state,
    says_a_change,
    updated_attributes,
)
from hindsight.core.text import content_hash

REPEAT_SIMILARITY = 0.93  # cosine above which two facts say the same thing

# the episodes of some ids, with their stored vectors (those that exist)
SourceReader = Callable[[Sequence[str]], Mapping[str, tuple[EpisodicMemory, StoredVector | None]]]


class FactMerger:
    """Holds the user's live facts and decides create / repeat / supersede for new ones."""

    def __init__(
        self,
        tenant_id: str,
        user_id: str,
        now: datetime,
        live: Sequence[SemanticMemory],
        vectors: dict[str, StoredVector],
        new_fact_id: Callable[[], str],
        auto_approve_high_confidence: bool,
        sources: SourceReader | None = None,
    ) -> None:
        self.tenant_id = tenant_id
        self.user_id = user_id
        self.now = now
        self.facts: dict[str, SemanticMemory] = {f.memory_id: f for f in live}
        self.vectors: dict[str, StoredVector] = dict(vectors)
        self._new_fact_id = new_fact_id
        self._auto_approve = auto_approve_high_confidence
        self.created: dict[str, SemanticMemory] = {}
        self.updated: dict[str, SemanticMemory] = {}
        self.superseded: dict[str, SemanticMemory] = {}
        self.new_vectors: dict[str, StoredVector] = {}
        self._sources = sources
        self._episodes: dict[str, tuple[Statement, StoredVector | None] | None] = {}
        self._named: dict[str, frozenset[str]] = {}

    def live_facts(self, scope: str) -> list[SemanticMemory]:
        return [f for f in self.facts.values() if f.scope == scope]

    def _most_similar(
        self, scope: str, vector: StoredVector
    ) -> tuple[SemanticMemory | None, float]:
        best, best_sim = None, -1.0
        for fact in self.live_facts(scope):
            other = self.vectors.get(fact.memory_id)
            if other is None or other.model != vector.model or other.dim != vector.dim:
                continue
            sim = float(np.dot(other.values, vector.values))
            if sim > best_sim:
                best, best_sim = fact, sim
        return best, best_sim

    def merge(
        self,
        scope: str,
        extracted: ExtractedFact,
        vector: StoredVector,
        episodes: dict[str, EpisodicMemory],
        reflector: str,
    ) -> None:
        same_topic = [
            f for f in self.live_facts(scope) if extracted.topic and f.topic == extracted.topic
        ]
        similar, similarity = self._most_similar(scope, vector)
        repeat: SemanticMemory | None = None
        for fact in same_topic:
            other = self.vectors.get(fact.memory_id)
            same_text = content_hash(fact.content) == content_hash(extracted.content)
            close = other is not None and float(np.dot(other.values, vector.values)) >= (
                REPEAT_SIMILARITY
            )
            if close and is_state_topic(fact.topic):  # one attribute: the value must agree
                close = same_state(fact.content, extracted.content)
            if same_text or close:
                repeat = fact
                break
        # near-identical wording is a repeat unless the topics say otherwise: "I now like
        # Shanghai" is no repeat of "I like Beijing", however alike the sentences
        topic_agrees = not same_topic or (similar is not None and similar in same_topic)
        if similar is not None and similar.topic and extracted.topic:
            topic_agrees = topic_agrees and similar.topic == extracted.topic
        if (
            repeat is None
            and similar is not None
            and similarity >= REPEAT_SIMILARITY
            and (topic_agrees or not similar.topic)
            and (
                not is_state_topic(similar.topic) or same_state(similar.content, extracted.content)
            )
        ):
            repeat = similar
        if repeat is not None:
            self._repeat(repeat, extracted, episodes)
            return
        # a state said again with its value is no contradiction, whatever else it adds
        contradicted = [
            f
            for f in same_topic
            if not is_state_topic(f.topic) or self._state_changed(f, extracted)
        ]
        contradicted += self._replaced_states(scope, extracted, same_topic)
        fact = self._create(scope, extracted, vector, episodes, reflector, contradicted)
        for old in contradicted:
            self._supersede(old, fact.memory_id, fact.valid_from or fact.occurred_at)

    def retire_outdated(self, scope: str, episodes: Sequence[EpisodicMemory]) -> None:
        """Supersede the live facts of ``scope`` that one of ``episodes`` (this run's) shows
        outdated though no fact drawn from it replaced them: the episode is newer than
        every source of the fact, states a new value of an attribute the fact names (by the
        evidence of the module's docstring) and says so with a word of change, now, an end
        or "only". The fact's ``superseded_by`` is the episode."""
        if self._sources is None:
            return
        # no fact was drawn from the episode, so it must also say that something changed,
        # holds now, ended or is the only one: a remark with a value of an attribute is
        # not enough ("Camped at Folly Farm with the school" after a first day at school)
        said = [
            Statement.of(e)
            for e in episodes
            if len(e.content) <= MAX_STATEMENT_CHARS and says_a_change(e.content)
        ]
        cues = sorted(
            (s for s in said if s.ended or (s.attributes and (s.change or s.now or s.exclusive))),
            key=lambda s: (s.occurred_at, s.memory_id),
        )
        for fact in list(self.live_facts(scope)) if cues else []:
            by = self._outdated_by(fact, cues)
            if by is not None:
                self._supersede(fact, by.memory_id, by.occurred_at)

    def _outdated_by(self, fact: SemanticMemory, cues: Sequence[Statement]) -> Statement | None:
        """The first of ``cues`` that states a new value of an attribute ``fact`` names,
        said after every source of the fact; the fact is read for the attributes the later
        cues could change (any, after an end), the episodes only for those that could."""
        later = [
            s
            for s in cues
            if s.occurred_at > fact.occurred_at and s.memory_id not in fact.source_memory_ids
        ]
        if not later:
            return None
        ended = any(s.ended for s in later)
        asked = ATTRIBUTES.keys() if ended else {a for s in later for a in s.attributes}
        named = attributes_named(fact.content, asked)
        wanted = [s.memory_id for s in later if named & s.attributes or (named and s.ended)]
        if not wanted:
            return None
        older = self._statements(fact.source_memory_ids)
        for new, new_vector in self._statements(wanted):
            for old, old_vector in older:
                cosine = statement_cosine(old_vector, new_vector)
                if cosine is not None and updated_attributes(old, new, cosine) & named:
                    return new
        return None

    def _supersede(self, old: SemanticMemory, by: str, since: datetime) -> None:
        """``old`` superseded by the memory ``by`` (a fact, or an episode), from ``since``."""
        old_updated = old.model_copy(
            update={
                "status": FactStatus.SUPERSEDED,
                "superseded_by": by,
                "updated_at": self.now,
                "valid_until": max(since, _start(old)),
            }
        )
        self.facts.pop(old.memory_id, None)
        self.updated.pop(old.memory_id, None)
        if old.memory_id in self.created:
            self.created[old.memory_id] = old_updated  # made and replaced in one run
        else:
            self.superseded[old.memory_id] = old_updated

    def _replaced_states(
        self, scope: str, extracted: ExtractedFact, already: Sequence[SemanticMemory]
    ) -> list[SemanticMemory]:
        """The live facts an older episode stated that a source episode of ``extracted``
        states a new value of (the module's docstring), both facts naming the attribute."""
        named_new = self._attributes_named(extracted.content)
        if self._sources is None or not named_new:
            return []
        taken = {f.memory_id for f in already}
        candidates = [
            f
            for f in self.live_facts(scope)
            if f.memory_id not in taken
            and self._attributes_named(f.content, f.memory_id) & named_new
            and not set(f.source_memory_ids) & set(extracted.source_memory_ids)
        ]
        if not candidates:  # nothing to read the episodes for
            return []
        newer = [
            s
            for s in self._statements(extracted.source_memory_ids)
            if s[0].attributes or s[0].ended
        ]
        if not newer:
            return []
        replaced = []
        for fact in candidates:
            wanted = self._attributes_named(fact.content, fact.memory_id) & named_new
            if any(
                updated_attributes(old, new, cosine) & wanted
                for old, old_vector in self._statements(fact.source_memory_ids)
                for new, new_vector in newer
                if new.occurred_at > old.occurred_at
                and (cosine := statement_cosine(old_vector, new_vector)) is not None
            ):
                replaced.append(fact)
        return replaced

    def _state_changed(self, fact: SemanticMemory, extracted: ExtractedFact) -> bool:
        """Whether ``extracted``, of ``fact``'s state topic, gives that state a new value:
        not when it says the same state again (``restates``); yes when the facts say so
        (``changes_value``: an end, or a change with a new value) or a source episode of
        ``extracted`` states a new value of a source episode of ``fact``
        (``updated_attributes``). Two facts of one topic that show neither stay both:
        "their partner and they got back from a trip" does not replace "their partner
        gaming"."""
        if restates(fact.content, extracted.content):
            return False
        if changes_value(fact.content, extracted.content):
            return True
        newer = self._statements(extracted.source_memory_ids)
        return any(
            new.occurred_at > old.occurred_at
            and (cosine := statement_cosine(old_vector, new_vector)) is not None
            and updated_attributes(old, new, cosine)
            for old, old_vector in self._statements(fact.source_memory_ids)
            for new, new_vector in newer
        )

    def _statements(self, ids: Sequence[str]) -> list[tuple[Statement, StoredVector | None]]:
        """The statements of the episodes of ``ids`` with their stored vectors, each read
        once a run; long episodes (documents) and deleted ones give none."""
        missing = [i for i in dict.fromkeys(ids) if i not in self._episodes]
        if missing and self._sources is not None:
            found = self._sources(missing)
            for memory_id in missing:
                episode, vector = found.get(memory_id, (None, None))
                self._episodes[memory_id] = (
                    (Statement.of(episode), vector)
                    if episode is not None and len(episode.content) <= MAX_STATEMENT_CHARS
                    else None
                )
        return [known for i in ids if (known := self._episodes.get(i)) is not None]

    def _attributes_named(self, text: str, key: str | None = None) -> frozenset[str]:
        """The attributes ``text`` names or gives a value of (cached by ``key``)."""
        if key is not None and key in self._named:
            return self._named[key]
        named = attributes_named(text, ATTRIBUTES)
        if key is not None:
            self._named[key] = named
        return named

    def _repeat(
        self, fact: SemanticMemory, extracted: ExtractedFact, episodes: dict[str, EpisodicMemory]
    ) -> None:
        new_sources = [s for s in extracted.source_memory_ids if s not in fact.source_memory_ids]
        if not new_sources:
            return  # the same episodes said it again: nothing new
        latest = max([fact.occurred_at] + [episodes[s].occurred_at for s in new_sources])
        confidence = max(fact.confidence.raised(), extracted.confidence, key=_confidence_rank)
        changed = fact.model_copy(
            update={
                "source_memory_ids": [*fact.source_memory_ids, *new_sources],
                "confidence": confidence,
                "mention_count": fact.mention_count + 1,
                "occurred_at": latest,
                "updated_at": self.now,
            }
        )
        self.facts[fact.memory_id] = changed
        if fact.memory_id in self.created:
            self.created[fact.memory_id] = changed
        else:
            self.updated[fact.memory_id] = changed

    def _create(
        self,
        scope: str,
        extracted: ExtractedFact,
        vector: StoredVector,
        episodes: dict[str, EpisodicMemory],
        reflector: str,
        contradicted: Sequence[SemanticMemory],
    ) -> SemanticMemory:
        approved = self._auto_approve and extracted.confidence == Confidence.HIGH
        fact = SemanticMemory(
            memory_id=self._new_fact_id(),
            tenant_id=self.tenant_id,
            user_id=self.user_id,
            scope=scope,
            content=extracted.content,
            category=extracted.category.value,
            occurred_at=max(episodes[s].occurred_at for s in extracted.source_memory_ids),
            valid_from=min(episodes[s].occurred_at for s in extracted.source_memory_ids),
            created_at=self.now,
            updated_at=self.now,
            confidence=extracted.confidence,
            status=FactStatus.APPROVED if approved else FactStatus.PENDING,
            topic=extracted.topic,
            source_memory_ids=list(dict.fromkeys(extracted.source_memory_ids)),
            supersedes=[f.memory_id for f in contradicted],
            reflector=reflector,
        )
        self.facts[fact.memory_id] = fact
        self.vectors[fact.memory_id] = vector
        self.new_vectors[fact.memory_id] = vector
        self.created[fact.memory_id] = fact
        return fact


def _start(fact: SemanticMemory) -> datetime:
    """When a fact began to hold (facts from before validity was kept: when it occurred)."""
    return fact.valid_from or fact.occurred_at


def _confidence_rank(confidence: Confidence) -> int:
    return {Confidence.LOW: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}[confidence]
