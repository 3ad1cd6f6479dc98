"""What every LLM reflector shares: prompts, output schema, validation and one retry.

A concrete reflector (Bedrock, OpenAI-compatible) only supplies a ``complete(system,
user)`` function answering a ``Completion`` (the text, the tokens used, and whether the
model stopped normally, was cut off at its output limit, or refused). The model's
answer must be one JSON object; it may come wrapped in a ```json fence or surrounded
by prose. Output that fails validation (or was cut off) is sent back once with the
reasons; if the second answer fails too, ``ReflectorOutputError`` is raised. A refusal
is not retried. A fact citing an episode it was not given is dropped, not the answer
(its other facts stand); ids of unknown candidates in ``refines`` / ``rejected`` are
ignored. What was dropped is listed in ``Refinement.dropped``.

The prompt follows the field report's reflection prompt: only what the user stated
explicitly (no inference), unfinished tasks with their due time, mood patterns, a
confidence per item and the source episode ids. Episodes are data: each one's text is
quoted as a JSON string inside ``<episodes>``, so no text can close the block or
pose as another episode, and the model is told never to follow instructions in them.
Candidate facts an offline extractor found may be shown too; the model then refines
them (``refines``), rejects them (``rejected``) or adds what they miss.

Every call is counted in a ``CallMeter`` (calls, input and output tokens), which may
carry a token budget: a call is made only while the budget is not spent, else
``TokenBudgetExhaustedError``. A call that timed out is charged too: its prompt, and the
longest answer the model may still be writing (a server goes on generating after the
reflector stopped waiting).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hindsight.adapters.reflectors.llm_prompts import (
    MAX_FACT_CHARS,
    MAX_FACTS,
    REFLECTION_SYSTEM_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    build_reflection_prompt,
    build_summary_prompt,
    candidate_ids,
)
from hindsight.core.errors import ReflectorOutputError, UnavailableError
from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    ExtractedFact,
    FactCategory,
    ReflectionOutput,
    ReflectorUsage,
    SemanticMemory,
    SessionSummary,
)
from hindsight.core.usecases.context import estimate_tokens

__all__ = [
    "REFLECTION_SYSTEM_PROMPT",
    "SUMMARY_SYSTEM_PROMPT",
    "CallMeter",
    "Completion",
    "Finish",
    "InvalidLlmOutputError",
    "LlmReflector",
    "LlmTimeoutError",
    "Refinement",
    "TokenBudgetExhaustedError",
    "build_reflection_prompt",
    "build_summary_prompt",
    "extract_json_object",
    "parse_refinement",
    "parse_reflection",
    "parse_summary",
]

logger = logging.getLogger(__name__)

Finish = Literal["stop", "length", "refused"]


@dataclass(frozen=True)
class Completion:
    """One answer of the model: its text, the tokens it cost (estimated where the endpoint
    does not say), and why it stopped ("length": cut off at the output limit)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    finish: Finish = "stop"
    refusal: str = ""
    max_tokens: int = 0


CompleteFunction = Callable[[str, str], "str | Completion"]
_T = TypeVar("_T")

# --- output schema ----------------------------------------

_CONFIDENCE_ALIASES = {"高": "high", "中": "medium", "低": "low"}


class LlmFact(BaseModel):
    """One item of the model's answer, before it becomes an ExtractedFact."""

    model_config = ConfigDict(extra="ignore")

    content: Annotated[str, Field(min_length=1, max_length=MAX_FACT_CHARS)]
    category: FactCategory
    confidence: Confidence
    topic: Annotated[str, Field(max_length=200)] = ""
    source_memory_ids: Annotated[list[str], Field(min_length=1, max_length=200)]
    due: Annotated[str, Field(max_length=40)] = ""
    refines: Annotated[list[str], Field(max_length=50)] = []

    @field_validator("due", mode="before")
    @classmethod
    def _none_is_no_due(cls, value: Any) -> Any:
        return "" if value is None else value.strip() if isinstance(value, str) else value

    @field_validator("refines", mode="before")
    @classmethod
    def _one_is_a_list(cls, value: Any) -> Any:
        if value is None:
            return []
        return [value] if isinstance(value, str) else value

    @field_validator("content", mode="before")
    @classmethod
    def _strip_content(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("category", mode="before")
    @classmethod
    def _lower_category(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("confidence", mode="before")
    @classmethod
    def _lower_confidence(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            return _CONFIDENCE_ALIASES.get(value, value)
        return value

    @field_validator("topic", mode="before")
    @classmethod
    def _normalise_topic(cls, value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, str):
            return re.sub(r"\s+", "-", value.strip().lower())
        return value


class LlmReflection(BaseModel):
    model_config = ConfigDict(extra="ignore")

    facts: Annotated[list[LlmFact], Field(max_length=MAX_FACTS)]
    rejected: Annotated[list[str], Field(max_length=MAX_FACTS)] = []

    @field_validator("rejected", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


@dataclass(frozen=True)
class Refinement:
    """The model's answer: its facts, the candidates it refined and those it rejected."""

    facts: list[ExtractedFact]
    refined: frozenset[str] = frozenset()
    rejected: frozenset[str] = frozenset()
    dropped: tuple[str, ...] = ()  # facts citing episodes they were not given


class LlmSummary(BaseModel):
    model_config = ConfigDict(extra="ignore")

    intent: Annotated[str, Field(max_length=MAX_FACT_CHARS)] = ""
    entities: Annotated[list[Annotated[str, Field(max_length=200)]], Field(max_length=50)] = []
    open_tasks: Annotated[
        list[Annotated[str, Field(max_length=MAX_FACT_CHARS)]], Field(max_length=50)
    ] = []
    mood: Annotated[str, Field(max_length=100)] = ""

    @field_validator("intent", "mood", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value


class InvalidLlmOutputError(ValueError):
    """The model's answer cannot be used; the message says why (it is sent back once)."""


class TokenBudgetExhaustedError(Exception):
    """The run's token budget is spent: no more calls are made."""


class LlmTimeoutError(UnavailableError):
    """The model did not answer within the reflector's timeout."""


@dataclass
class CallMeter:
    """Calls and tokens of one reflection run, against an optional token budget.

    A call is made only while the tokens spent plus its prompt's estimate fit in the
    budget; what it really cost is charged after, so a run may end above the budget by
    at most one answer."""

    budget: int | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    failures: list[str] = field(default_factory=list)
    exhausted: bool = False
    # batches in a row whose call timed out; at ``MAX_TIMEOUTS_IN_A_ROW`` the run stops
    # calling the model (a local server may still be busy with the abandoned answers)
    timeouts_in_a_row: int = 0
    unresponsive: bool = False

    @property
    def spent(self) -> int:
        return self.input_tokens + self.output_tokens

    def admit(self, prompt_tokens: int) -> None:
        if self.budget is not None and self.spent + prompt_tokens > self.budget:
            self.exhausted = True
            raise TokenBudgetExhaustedError(
                f"the token budget of {self.budget} tokens per run is spent ({self.spent} "
                "used); no more LLM calls this run (HINDSIGHT_REFLECTOR_TOKEN_BUDGET)"
            )

    def charge(self, completion: Completion) -> None:
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens

    def mark(self) -> tuple[int, int, int, int]:
        """Where the counts stand, for ``usage(since=...)``."""
        return (self.calls, self.input_tokens, self.output_tokens, len(self.failures))

    def usage(self, since: tuple[int, int, int, int] = (0, 0, 0, 0)) -> ReflectorUsage:
        """The calls, tokens and failures counted after the mark ``since``."""
        calls, input_tokens, output_tokens, failures = since
        return ReflectorUsage(
            calls=self.calls - calls,
            input_tokens=self.input_tokens - input_tokens,
            output_tokens=self.output_tokens - output_tokens,
            token_budget=self.budget,
            budget_exhausted=self.exhausted,
            failures=tuple(self.failures[failures:]),
        )


# --- parsing ----------------------------------------

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (bare, in a ``` fence, or inside prose)."""
    if not text or not text.strip():
        raise InvalidLlmOutputError("the answer was empty; expected one JSON object")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        stripped = candidate.strip()
        for start in [i for i, char in enumerate(stripped) if char == "{"][:50]:
            try:
                value, _ = decoder.raw_decode(stripped, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise InvalidLlmOutputError("no JSON object found in the answer; answer with one JSON object")


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors()[:10]:
        where = ".".join(str(p) for p in item["loc"]) or "answer"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


def _strangers(fact: LlmFact, allowed: set[str]) -> list[str]:
    return [i for i in fact.source_memory_ids if i not in allowed]


def _with_due(fact: LlmFact) -> str:
    """The content, with a task's due time added when the sentence does not say it."""
    if fact.category is FactCategory.TASK and fact.due and fact.due not in fact.content:
        return f"{fact.content.rstrip()} (due {fact.due})"
    return fact.content


def parse_refinement(
    text: str, allowed_ids: Sequence[str], candidates: Sequence[str] = ()
) -> Refinement:
    """Validated facts from the model's answer, with the candidates it refined and
    rejected; InvalidLlmOutputError says what is wrong."""
    data = extract_json_object(text)
    try:
        parsed = LlmReflection.model_validate(data)
    except ValidationError as exc:
        raise InvalidLlmOutputError(
            f"the JSON does not match the schema: {_describe(exc)}"
        ) from exc
    allowed, known = set(allowed_ids), set(candidates)
    cited = [f for f in parsed.facts if not _strangers(f, allowed)]
    dropped = tuple(
        f"{f.content[:80]!r} cites episodes it was not given {_strangers(f, allowed)[:5]}"
        for f in parsed.facts
        if _strangers(f, allowed)
    )
    merged: dict[tuple[str, str], ExtractedFact] = {}
    for fact in cited:
        content = _with_due(fact)
        key = (fact.topic, content)
        previous = merged.get(key)
        sources = list(
            dict.fromkeys(
                [*(previous.source_memory_ids if previous else []), *fact.source_memory_ids]
            )
        )
        merged[key] = ExtractedFact(
            content=content,
            category=fact.category,
            confidence=fact.confidence,
            source_memory_ids=sources,
            topic=fact.topic,
        )
    return Refinement(
        facts=list(merged.values()),
        refined=frozenset(i for f in cited for i in f.refines if i in known),
        rejected=frozenset(i for i in parsed.rejected if i in known),
        dropped=dropped,
    )


def parse_reflection(text: str, allowed_ids: Sequence[str]) -> list[ExtractedFact]:
    """Validated facts from the model's answer; InvalidLlmOutputError says what is wrong."""
    return parse_refinement(text, allowed_ids).facts


def parse_summary(text: str) -> LlmSummary:
    data = extract_json_object(text)
    try:
        return LlmSummary.model_validate(data)
    except ValidationError as exc:
        raise InvalidLlmOutputError(
            f"the JSON does not match the schema: {_describe(exc)}"
        ) from exc


def _retry_prompt(prompt: str, error: InvalidLlmOutputError) -> str:
    return (
        f"{prompt}\n\nYour previous answer was rejected: {error}\n"
        "Answer again with only the corrected JSON object."
    )


def _answer_text(completion: Completion) -> str:
    """The text to parse; a cut-off answer is invalid (and retried), a refusal is final."""
    if completion.finish == "refused":
        raise ReflectorOutputError(
            f"the model refused to answer ({completion.refusal[:200] or 'no reason given'}); "
            "refusals are not retried"
        )
    if completion.finish == "length":
        limit = f" ({completion.max_tokens} tokens)" if completion.max_tokens else ""
        raise InvalidLlmOutputError(
            f"your answer was cut off at the output limit{limit}; answer again with fewer "
            "and shorter items so that the JSON object is complete"
        )
    return completion.text


# --- the reflector ----------------------------------------


class LlmReflector:
    """A reflector driven by any ``complete(system, user)`` function."""

    def __init__(self, complete: CompleteFunction, label: str, max_output_tokens: int = 0) -> None:
        self._complete = complete
        self._label = label
        self._max_output_tokens = max_output_tokens  # charged for a call that timed out

    @property
    def label(self) -> str:
        return self._label

    def reflect(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
    ) -> ReflectionOutput:
        """The model's facts alone; an unusable answer raises (nothing is kept)."""
        meter = CallMeter()
        if not episodes:
            return ReflectionOutput(facts=[], reflector=self.label, usage=meter.usage())
        try:
            refinement = self.refine(user_id, episodes, existing_facts, (), meter)
        except ReflectorOutputError as exc:
            raise ReflectorOutputError(
                f"{exc.message}; nothing was stored. Try again later or switch to another "
                "model (HINDSIGHT_REFLECTOR)."
            ) from exc
        return ReflectionOutput(facts=refinement.facts, reflector=self.label, usage=meter.usage())

    def refine(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
        candidates: Sequence[ExtractedFact],
        meter: CallMeter,
    ) -> Refinement:
        """Ask the model about these episodes (and the offline candidates); raises
        ReflectorOutputError, UnavailableError or TokenBudgetExhaustedError."""
        prompt = build_reflection_prompt(user_id, episodes, existing_facts, candidates)
        allowed = [e.memory_id for e in episodes]
        ids = candidate_ids(candidates)
        refinement = self._ask(
            REFLECTION_SYSTEM_PROMPT, prompt, lambda t: parse_refinement(t, allowed, ids), meter
        )
        meter.failures.extend(f"dropped {note}" for note in refinement.dropped)
        logger.info(
            "llm reflection reflector=%s episodes=%d candidates=%d facts=%d calls=%d "
            "input_tokens=%d output_tokens=%d",
            self.label,
            len(episodes),
            len(candidates),
            len(refinement.facts),
            meter.calls,
            meter.input_tokens,
            meter.output_tokens,
        )
        return refinement

    def summarize(self, episodes: Sequence[EpisodicMemory]) -> SessionSummary:
        if not episodes:
            return SessionSummary(summarizer=self.label)
        summary = self._ask(
            SUMMARY_SYSTEM_PROMPT, build_summary_prompt(episodes), parse_summary, CallMeter()
        )
        return SessionSummary(
            intent=summary.intent.strip(),
            entities=[e.strip() for e in summary.entities if e.strip()],
            open_tasks=[t.strip() for t in summary.open_tasks if t.strip()],
            mood=summary.mood.strip(),
            summarizer=self.label,
        )

    def _call(self, system: str, prompt: str, meter: CallMeter) -> Completion:
        estimate = estimate_tokens(system) + estimate_tokens(prompt)
        meter.admit(estimate)
        meter.calls += 1  # counted when made, answered or not
        try:
            answer = self._complete(system, prompt)
        except LlmTimeoutError:
            meter.charge(Completion("", estimate, self._max_output_tokens))
            raise
        if isinstance(answer, str):  # an endpoint that reports no usage: estimated
            answer = Completion(answer, estimate, estimate_tokens(answer))
        meter.charge(answer)
        return answer

    def _ask(self, system: str, prompt: str, parse: Callable[[str], _T], meter: CallMeter) -> _T:
        completion = self._call(system, prompt, meter)
        try:
            return parse(_answer_text(completion))
        except InvalidLlmOutputError as first:
            logger.warning(
                "llm output invalid, retrying once reflector=%s error=%s", self.label, first
            )
            completion = self._call(system, _retry_prompt(prompt, first), meter)
            try:
                return parse(_answer_text(completion))
            except InvalidLlmOutputError as second:
                raise ReflectorOutputError(
                    f"the reflector {self.label} returned invalid output twice ({second})"
                ) from second
