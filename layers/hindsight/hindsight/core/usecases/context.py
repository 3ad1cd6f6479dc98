"""Context: assemble working memory for a session as one prompt block within a budget.

The block has three parts, filled in this priority order until ``budget_tokens`` is
spent: the user's top approved facts, the last ``recent_turns`` turns of the session
verbatim, and a structured summary (intent, entities, open tasks, mood) of the
session's older turns made by the configured reflector. Tokens are estimated (one per
CJK character, about 1.3 per latin word) because the agent's own tokenizer is unknown.
"""

from __future__ import annotations

import re
from typing import Any

from hindsight.core.access import readable_scopes
from hindsight.core.commands import ContextCommand, RetrieveCommand
from hindsight.core.models import (
    EpisodicMemory,
    FactStatus,
    ListQuery,
    MemoryKind,
    Principal,
    SemanticMemory,
    SessionSummary,
)
from hindsight.core.ports import Clock, RecordStore, Reflector
from hindsight.core.results import ContextResult
from hindsight.core.usecases.retrieve import RetrieveMemories
from hindsight.core.views import iso

MAX_SESSION_TURNS = 500
_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z0-9]+|[^\sA-Za-z0-9\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_CONFIDENCE_ORDER = {"high": 0, "medium": 1, "low": 2}


def estimate_tokens(text: str) -> int:
    cjk = len(_CJK.findall(text))
    words = len(_WORD.findall(text))
    return cjk + int(words * 1.3 + 0.5)


def clip_to_tokens(text: str, tokens: int) -> str:
    """The longest prefix of ``text`` within ``tokens`` (estimated); found by bisection, so
    a 100,000-character memory costs a few dozen estimates, not thousands."""
    if estimate_tokens(text) <= tokens:
        return text
    low, high = 0, min(len(text), max(tokens, 1) * 8)
    while high - low > 1:
        middle = (low + high) // 2
        if estimate_tokens(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle
    return text[:low]


def _fit(lines: list[str], budget: int) -> tuple[list[str], int, bool]:
    """As many whole lines as fit, in order; the last may be cut with an ellipsis."""
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = estimate_tokens(line) + 1
        if used + cost <= budget:
            kept.append(line)
            used += cost
            continue
        remaining = budget - used - 2
        if remaining > 8:
            cut = clip_to_tokens(line, remaining - 1).rstrip()
            if cut:
                kept.append(cut + "…")
                used += estimate_tokens(kept[-1]) + 1
        return kept, used, True
    return kept, used, False


def _turn_line(turn: EpisodicMemory, max_tokens: int) -> tuple[str, bool]:
    """A turn as one line; a long one (a pasted document) cut to ``max_tokens`` and marked,
    so that it does not crowd every other turn out of the block."""
    when = turn.occurred_at.strftime("%Y-%m-%d %H:%M")
    who = turn.speaker or "user"
    content = clip_to_tokens(turn.content, max_tokens)
    if len(content) < len(turn.content):
        rest = len(turn.content) - len(content)
        content = f"{content.rstrip()}… [{rest:,} more characters: memory {turn.memory_id}]"
    line = f"[{when}] {who}: {content}"
    if turn.agent_action:
        line += f" (agent: {turn.agent_action})"
    return line, len(content) != len(turn.content)


class BuildContext:
    """The working-memory block of one session, within a token budget."""

    def __init__(
        self,
        records: RecordStore,
        reflector: Reflector,
        clock: Clock,
        retrieve: RetrieveMemories,
    ) -> None:
        self.records = records
        self.reflector = reflector
        self.clock = clock
        self.retrieve = retrieve

    def __call__(self, principal: Principal, command: ContextCommand) -> ContextResult:
        tenant_id, user_id = principal.tenant_id, command.user_id
        now = command.as_of or self.clock.now()
        scopes = readable_scopes(principal, None)

        turns_page = self.records.list(
            tenant_id,
            user_id,
            ListQuery(
                kinds=frozenset({MemoryKind.EPISODIC}),
                session_id=command.session_id,
                scopes=scopes,
                now=now,
            ),
            MAX_SESSION_TURNS,
        )
        turns: list[EpisodicMemory] = [t for t in turns_page.items if t.occurred_at <= now]
        turns.reverse()  # oldest first
        split = max(0, len(turns) - command.recent_turns)
        older, recent = turns[:split], turns[split:]

        facts = self._top_facts(principal, command, scopes, now)
        summary = self.reflector.summarize(older) if older else None

        budget = command.budget_tokens
        truncated = False
        sections: list[str] = []

        fact_lines = [f"- {f.content} ({f.confidence.value} confidence)" for f in facts]
        header = "## What you know about the user"
        if fact_lines:
            kept, used, cut = _fit(fact_lines, budget - estimate_tokens(header) - 1)
            truncated |= cut
            if kept:
                sections.append("\n".join([header, *kept]))
                budget -= used + estimate_tokens(header) + 1
            facts = facts[: len(kept)]

        # one turn takes at most half of what is left, so several recent turns fit
        lines_cut = [_turn_line(t, max(20, budget // 2)) for t in recent]
        recent_lines = [line for line, _ in lines_cut]
        header = "## Recent turns of this session"
        kept_turns: list[EpisodicMemory] = []
        if recent_lines and budget > 10:
            # keep the newest turns when they do not all fit
            kept, used, cut = _fit(
                list(reversed(recent_lines)), budget - estimate_tokens(header) - 1
            )
            truncated |= cut
            kept.reverse()
            if kept:
                sections.append("\n".join([header, *kept]))
                budget -= used + estimate_tokens(header) + 1
            kept_turns = recent[len(recent) - len(kept) :] if kept else []
            truncated |= any(cut for _, cut in lines_cut[len(recent) - len(kept) :])
        elif recent_lines:
            truncated = True

        summary_lines = _summary_lines(summary)
        header = "## Earlier in this session (summary)"
        if summary_lines and budget > 10:
            kept, used, cut = _fit(summary_lines, budget - estimate_tokens(header) - 1)
            truncated |= cut
            if kept:
                # the summary reads best before the recent turns
                position = 1 if fact_lines and sections else 0
                sections.insert(position, "\n".join([header, *kept]))
                budget -= used + estimate_tokens(header) + 1
        elif summary_lines:
            truncated = True

        self._note_hits(tenant_id, command, facts, kept_turns)
        text = "\n\n".join(sections)
        return ContextResult(
            context=text,
            tokens=estimate_tokens(text),
            budget_tokens=command.budget_tokens,
            recent_turns=[_turn_view(t, command.max_content_chars) for t in kept_turns],
            summary=ContextResult.summary_dict(summary),
            facts=[_fact_view(f) for f in facts],
            truncated=truncated,
        )

    def _note_hits(
        self,
        tenant_id: str,
        command: ContextCommand,
        facts: list[SemanticMemory],
        turns: list[EpisodicMemory],
    ) -> None:
        """Access tracking: the turns and facts shown (facts found by retrieve were
        counted there)."""
        hits = getattr(self.retrieve, "hits", None)  # None: a retrieve without tracking
        if hits is None:
            return
        searched = bool(command.query and command.query.strip())
        shown = [*([] if searched else facts), *turns]
        hits.note(tenant_id, [memory.memory_id for memory in shown])

    def _top_facts(
        self,
        principal: Principal,
        command: ContextCommand,
        scopes: frozenset[str] | None,
        now: Any,
    ) -> list[SemanticMemory]:
        if command.max_facts == 0:
            return []
        if command.query and command.query.strip():
            result = self.retrieve(
                principal,
                RetrieveCommand(
                    user_id=command.user_id,
                    query=command.query,
                    top_k=min(command.max_facts, 20),
                    kinds=[MemoryKind.SEMANTIC],
                    as_of=now,
                    min_score=command.min_score,
                ),
            )
            ids = [r.memory_id for r in result.results]
            found = self.records.get_many(principal.tenant_id, ids)
            return [f for f in found if isinstance(f, SemanticMemory)]
        page = self.records.list(
            principal.tenant_id,
            command.user_id,
            ListQuery(
                kinds=frozenset({MemoryKind.SEMANTIC}),
                statuses=frozenset({FactStatus.APPROVED}),
                scopes=scopes,
                now=now,
            ),
            200,
        )
        facts = [f for f in page.items if isinstance(f, SemanticMemory)]
        facts.sort(
            key=lambda f: (
                _CONFIDENCE_ORDER.get(f.confidence.value, 3),
                -f.mention_count,
                -f.updated_at.timestamp(),
            )
        )
        return facts[: command.max_facts]


def _summary_lines(summary: SessionSummary | None) -> list[str]:
    if summary is None:
        return []
    lines = []
    if summary.intent:
        lines.append(f"Intent: {summary.intent}")
    if summary.entities:
        lines.append(f"Key entities: {', '.join(summary.entities)}")
    if summary.open_tasks:
        lines.append("Open tasks: " + "; ".join(summary.open_tasks))
    if summary.mood:
        lines.append(f"Mood: {summary.mood}")
    return lines


def _turn_view(turn: EpisodicMemory, max_content_chars: int | None) -> dict[str, Any]:
    view = {
        "memory_id": turn.memory_id,
        "speaker": turn.speaker,
        "content": turn.content,
        "occurred_at": iso(turn.occurred_at),
    }
    if max_content_chars is not None and len(turn.content) > max_content_chars:
        view["content"] = turn.content[:max_content_chars] + "…"
        view["content_truncated"] = True
    return view


def _fact_view(fact: SemanticMemory) -> dict[str, Any]:
    return {
        "memory_id": fact.memory_id,
        "content": fact.content,
        "category": fact.category,
        "confidence": fact.confidence.value,
    }
