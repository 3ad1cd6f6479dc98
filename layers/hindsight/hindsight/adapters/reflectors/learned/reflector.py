"""The learned reflector: statements scored by the trained classifier, merged like the rules'.

Each user turn is cut into statements (agent turns are skipped): clauses for the static
classifier (``segments.clauses``), whole statements for the one over e5; a sentence that
states a state of the speaker (``extractors/states.py``) stays whole and is the state
extractor's, whatever the classifier says. The statements no veto
rules out are embedded in one call (the last 4,096 statements' vectors are kept) and
scored. A statement becomes a candidate fact when its calibrated probability reaches the
model's threshold. The vetoes: a question, a hypothetical ("if I had a dog ..."), a
request or passing state ("I'd like a coffee", "I'm tired"), something said "for today"
(no lasting preference from "今天不想吃川菜"). Where a rule-based
extractor (allergies, diet, names, family, preferences, habits, plans) finds something in
a statement the classifier accepts, the rule's wording and topic are kept, so repeats and
contradictions line up with the rules' facts (supersession); otherwise, unless it is about
someone else, spoken to the listener or only points elsewhere (``precision.py``), the fact
is the statement in the third person (``normalise.py``), at low confidence when hedged.
Near-duplicate facts are folded into one (``precision.py``). Mood patterns and session summaries are
the rule-based reflector's. Candidates go through the same ``merge`` as the rules'.

Stored vectors (``reflect_with_vectors``): an episode's stored vector is the passage vector
of its search text (``core.indexing.index_text``). Where that text is exactly one of its
statements (a one-statement episode stored without the turn before it, an agent action or
an outcome), the statement is not embedded again: the stored vector is the very vector
the classifier reads. Embedding is nearly all of the learned reflector's time (~40 short
statements a second on two cores).

``static=True`` (``HINDSIGHT_REFLECTOR=learned``, the default) scores clauses over the
mean of e5's word embeddings instead (``static.py``, its own weights
``weights_static.npz``, trained on clauses): nothing goes through the transformer and no
embedder is needed, so 100 episodes take a tenth of a second; it finds more than the
classifier of whole statements over e5 at about its precision (``bench/extraction.py``).
``static=False`` (``learned-e5``) embeds the statements with the service's e5 embedder.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hindsight.adapters.reflectors.learned.model import (
    STATIC_WEIGHTS_FILE,
    WEIGHTS_FILE,
    StatementModel,
    shipped_model,
)
from hindsight.adapters.reflectors.learned.normalise import to_fact, without_opener
from hindsight.adapters.reflectors.learned.precision import (
    fold_near_duplicates,
    not_about_the_speaker,
)
from hindsight.adapters.reflectors.learned.segments import (
    clauses,
    conditional,
    momentary,
    statements,
)
from hindsight.adapters.reflectors.learned.static import StaticStatementVectors
from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.adapters.reflectors.rule_based.candidates import Candidate, Context
from hindsight.adapters.reflectors.rule_based.clauses import hedged, is_zh, question, temporary
from hindsight.adapters.reflectors.rule_based.extractors import extract
from hindsight.adapters.reflectors.rule_based.extractors.states import find_state, sentences
from hindsight.adapters.reflectors.rule_based.merge import merge
from hindsight.adapters.reflectors.rule_based.moods import mood_patterns
from hindsight.adapters.reflectors.rule_based.speakers import Subject, Turn, turns
from hindsight.core.embedding import embed_documents
from hindsight.core.errors import ConfigurationError
from hindsight.core.indexing import index_text
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    FactCategory,
    ReflectionOutput,
    SemanticMemory,
    SessionSummary,
    StoredVector,
)
from hindsight.core.ports import Embedder
from hindsight.core.retrieval.speakers import is_assistant
from hindsight.core.text import tokenize

logger = logging.getLogger(__name__)

LABEL = "learned (offline, no LLM)"  # over the mean word embeddings: the default
E5_LABEL = "learned over e5 vectors (offline, no LLM)"
_CATEGORY = {
    "preference": FactCategory.PREFERENCE,
    "constraint": FactCategory.CONSTRAINT,
    "plan": FactCategory.TASK,
}
_HIGH = 0.95  # calibrated probability from which a fact is stated with high confidence
_SURE = 0.6  # below this (and above the threshold) a fact is low confidence


@dataclass(frozen=True)
class _Statement:
    text: str
    turn: Turn
    subject: Subject
    whole: bool = False  # the statement is its episode's whole search text
    state: bool = False  # a sentence stating a state of the speaker, value included


class LearnedReflector:
    """Reflector over the trained statement classifier; offline, English and Chinese."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        model: StatementModel | None = None,
        threshold: float | None = None,
        min_mood_episodes: int = 2,
        static: bool = False,
    ) -> None:
        self._static = static
        self._model = model or shipped_model(STATIC_WEIGHTS_FILE if static else WEIGHTS_FILE)
        if not static and embedder is None:
            raise ConfigurationError(
                "HINDSIGHT_REFLECTOR=learned-e5 embeds statements with the service's embedder; "
                "none was given"
            )
        self._vectors: _StatementVectors | StaticStatementVectors = (
            _StatementVectors(embedder)
            if embedder is not None and not static
            else StaticStatementVectors()
        )
        if self._vectors.model_name != self._model.embedding_model:
            raise ConfigurationError(
                f"the learned reflector was trained on {self._model.embedding_model} vectors, "
                f"its statements would be read as {self._vectors.model_name}: use "
                "HINDSIGHT_EMBEDDER=e5 (the default) with HINDSIGHT_REFLECTOR=learned-e5, "
                "or HINDSIGHT_REFLECTOR=learned (any embedder)"
            )
        self._threshold = threshold  # one for both languages; None: the model's own
        self._min_mood_episodes = min_mood_episodes
        self._rules = RuleBasedReflector(min_mood_episodes)

    @property
    def label(self) -> str:
        return LABEL if self._static else E5_LABEL

    def reflect(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
    ) -> ReflectionOutput:
        """Facts the classifier finds in the user's statements; ``existing_facts`` are left
        to the merge."""
        return self.reflect_with_vectors(user_id, episodes, existing_facts, {})

    def reflect_with_vectors(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
        vectors: Mapping[str, StoredVector],
    ) -> ReflectionOutput:
        """``reflect``, reusing the stored vectors (by memory id) that are the embedding of
        a statement: only the other statements are embedded."""
        ordered = sorted(episodes, key=lambda e: (e.occurred_at, e.memory_id))
        every = self.statements_of(ordered, user_id)
        # a state sentence is the state extractor's, whatever the classifier says
        candidates: list[Candidate] = [
            c for s in every if s.state for c in extract(_turn_of(s), user_id)
        ]
        # what a veto rules out is never embedded (a question costs nothing)
        found = [s for s in every if not s.state and not _vetoed(s.text)]
        known = self._reusable(found, vectors)
        scored = self.score(found, known)
        for statement, probability, category in zip(found, *scored, strict=True):
            candidates.extend(self._candidates(statement, probability, category, user_id))
        candidates.extend(mood_patterns(ordered, user_id, self._min_mood_episodes))
        facts = fold_near_duplicates(merge(candidates))
        logger.info(
            "learned reflection episodes=%d statements_scored=%d vectors_reused=%d facts=%d",
            len(episodes),
            len(found),
            len(known),
            len(facts),
        )
        return ReflectionOutput(facts=facts, reflector=self.label)

    def summarize(self, episodes: Sequence[EpisodicMemory]) -> SessionSummary:
        """The rule-based reflector's session summary (intent, entities, tasks, mood)."""
        summary = self._rules.summarize(episodes)
        return SessionSummary(
            intent=summary.intent,
            entities=summary.entities,
            open_tasks=summary.open_tasks,
            mood=summary.mood,
            summarizer=self.label,
        )

    def statements_of(self, episodes: Sequence[EpisodicMemory], user_id: str) -> list[_Statement]:
        """The statements of every turn not said by the agent, in order: its clauses
        (``segments.clauses``) for the static classifier, which is trained on them; whole
        statements for the one over e5 vectors. A sentence that states a state of the
        speaker with its value ("I quit Northwind and joined Contoso", "我的经理是王强",
        "我跳槽了，现在在阿里巴巴工作": ``extractors/states.py``) stays one statement,
        marked ``state``: cut into clauses, the value would part from what it is the value
        of, and the old value's clause ("I quit Northwind") would read as current."""
        cut = clauses if self._static else statements
        found: list[_Statement] = []
        for episode in episodes:
            searched = index_text(episode)
            for turn in turns(episode):
                if is_assistant(turn.speaker):
                    continue
                subject = Subject.of(turn.speaker, user_id)
                for sentence in sentences(turn.text):
                    plain = without_opener(sentence)  # "Yeah, I live in Berlin"
                    if _states(plain, turn, subject):
                        found.append(_Statement(plain, turn, subject, plain == searched, True))
                        continue
                    found.extend(
                        _Statement(text, turn, subject, whole=text == searched)
                        for text in cut(sentence)
                    )
        return found

    def _reusable(
        self, found: Sequence[_Statement], vectors: Mapping[str, StoredVector]
    ) -> dict[int, np.ndarray]:
        """The stored vectors that are exactly the embedding of a statement, by position:
        the statement is its episode's whole search text, and the vector is this model's,
        of one row (not a long memory's chunks)."""
        known: dict[int, np.ndarray] = {}
        for position, statement in enumerate(found):
            vector = vectors.get(statement.turn.memory_id) if statement.whole else None
            if (
                vector is not None
                and vector.model == self._vectors.model_name
                and not vector.chunked
                and vector.dim == self._model.dimension
            ):
                known[position] = np.asarray(vector.values, dtype=np.float32)
        return known

    def score(
        self, found: Sequence[_Statement], known: Mapping[int, np.ndarray] | None = None
    ) -> tuple[np.ndarray, list[str]]:
        """Calibrated probabilities and categories of the statements: the vectors ``known``
        (by position) are used as given, the others embedded in one call."""
        texts = [s.text for s in found]
        if not texts:
            return np.zeros(0), []
        known = known or {}
        missing = [i for i in range(len(texts)) if i not in known]
        vectors = np.zeros((len(texts), self._model.dimension), dtype=np.float32)
        if missing:
            vectors[missing] = self._vectors.get([texts[i] for i in missing])
        for position, vector in known.items():
            vectors[position] = vector
        return self._model.probabilities(vectors, texts), self._model.categories(vectors, texts)

    def _candidates(
        self, statement: _Statement, probability: float, category: str, user_id: str
    ) -> list[Candidate]:
        text, turn = statement.text, statement.turn
        bar = self._model.threshold_of(text) if self._threshold is None else self._threshold
        if probability < bar or _vetoed(text):
            return []
        # a part of a sentence that states no state is no state either ("吃了一个月地中海饮食"
        # of "我室友为了挑战自己，吃了一个月地中海饮食" is the roommate's diet)
        ruled = [
            c for c in extract(_turn_of(statement), user_id) if not c.topic.startswith("state:")
        ]
        if ruled:
            return ruled
        if not_about_the_speaker(text):
            return []
        content = to_fact(text, statement.subject)
        subject = statement.subject
        words = sorted(
            set(tokenize(content)) - set(tokenize(f"user 用户 {subject.en} {subject.zh}"))
        )
        if not words:
            return []
        # a hedged statement keeps the user's words; its low confidence says it is unsure
        ctx = Context(text, statement.subject, turn.memory_id, turn.occurred_at, zh=is_zh(text))
        confidence = Confidence.LOW if hedged(text) else _confidence(probability)
        return [
            ctx.make(
                content,
                _CATEGORY.get(category, FactCategory.FACT),
                confidence,
                "statement:" + "-".join(words)[:80],
                "",
            )
        ]


class _StatementVectors:
    """Statement vectors, the last ``size`` kept: reflecting again on the same episodes (a
    dry run, then the real one; an overlapping batch) embeds nothing twice."""

    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        self._embedder = embedder
        self.model_name = embedder.model_name
        self._size = size
        self._known: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._known))
        if missing:
            fresh = embed_documents(self._embedder, missing)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    self._known[text] = np.asarray(vector.values, dtype=np.float32)
        with self._lock:
            rows = [self._known[t] for t in texts]
            for text in texts:
                self._known.move_to_end(text)
            while len(self._known) > self._size:
                self._known.popitem(last=False)
        return np.stack(rows)


def _turn_of(statement: _Statement) -> Turn:
    """The statement as a turn of its own (what the rule-based extractors read)."""
    turn = statement.turn
    return Turn(turn.memory_id, turn.occurred_at, turn.speaker, statement.text, None)


def _states(sentence: str, turn: Turn, subject: Subject) -> bool:
    """Whether the sentence states a state of the speaker, value included."""
    ctx = Context(sentence, subject, turn.memory_id, turn.occurred_at, zh=is_zh(sentence))
    return find_state(sentence, ctx) is not None


def _vetoed(text: str) -> bool:
    """A question, something hypothetical, momentary or said "for today" is no lasting fact
    whatever the classifier says (each measured on the dev dialogues not to cost
    precision; together they keep the rule-based reflector's promises)."""
    return question(text) or temporary(text) or conditional(text) or momentary(text)


def _confidence(probability: float) -> Confidence:
    if probability >= _HIGH:
        return Confidence.HIGH
    return Confidence.MEDIUM if probability >= _SURE else Confidence.LOW
