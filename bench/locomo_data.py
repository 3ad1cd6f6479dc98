"""LoCoMo data and metrics: conversations as turns, questions with their evidence turns.

Evidence ids that are malformed (not ``D<session>:<turn>``) or name no turn of the
conversation are skipped; questions left with no evidence are skipped and counted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DIA_ID = re.compile(r"D\d+:\d+")
SESSION_KEY = re.compile(r"session_(\d+)")
KS = tuple(range(1, 26))


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    when: datetime

    @property
    def content(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    last_session: datetime
    skipped_ids: int = 0
    skipped_questions: int = 0
    session_dates: dict[int, datetime] = field(default_factory=dict)


def parse_session_date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_locomo(path: Path) -> list[Conversation]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    conversations = []
    for sample in raw:
        body = sample["conversation"]
        turns: list[Turn] = []
        dates: dict[int, datetime] = {}
        for key, value in body.items():
            match = SESSION_KEY.fullmatch(key)
            if not match or not isinstance(value, list):
                continue
            number = int(match.group(1))
            dates[number] = parse_session_date(body[f"{key}_date_time"])
        for number in sorted(dates):
            for turn in body[f"session_{number}"]:
                text = turn["text"].strip()
                turns.append(Turn(turn["dia_id"], turn["speaker"], text, number, dates[number]))
        known = {t.dia_id for t in turns}
        questions, skipped_ids, skipped_questions = [], 0, 0
        for qa in sample["qa"]:
            evidence = []
            for item in qa.get("evidence", []):
                if DIA_ID.fullmatch(item) and item in known:
                    evidence.append(item)
                else:
                    skipped_ids += 1
            evidence = list(dict.fromkeys(evidence))
            if not evidence:
                skipped_questions += 1
                continue
            questions.append(Question(qa["question"], int(qa["category"]), tuple(evidence)))
        conversations.append(
            Conversation(
                sample_id=sample["sample_id"],
                turns=turns,
                questions=questions,
                last_session=max(dates.values()),
                skipped_ids=skipped_ids,
                skipped_questions=skipped_questions,
                session_dates=dates,
            )
        )
    return conversations


# --- metrics -------------------------------------------------------------------------------


def question_metrics(ranking: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """recall@1..25, NDCG@10 and MRR (over the top 25) of one ranked list of dia_ids."""
    gold = set(evidence)
    seen: list[str] = list(dict.fromkeys(ranking))[: max(KS)]
    hits = [d in gold for d in seen]
    out: dict[str, float] = {}
    running = 0
    for k in KS:
        if k <= len(hits) and hits[k - 1]:
            running += 1
        out[f"recall@{k}"] = running / len(gold)
    dcg = sum(1.0 / math.log2(i + 2) for i, hit in enumerate(hits[:10]) if hit)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), 10)))
    out["ndcg@10"] = dcg / ideal
    first = next((i for i, hit in enumerate(hits) if hit), None)
    out["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


def aggregate(per_question: Sequence[tuple[int, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Means overall and per category name; each group also has its question count."""
    groups: dict[str, list[dict[str, float]]] = {"overall": []}
    for category, metrics in per_question:
        groups["overall"].append(metrics)
        groups.setdefault(CATEGORIES.get(category, str(category)), []).append(metrics)
    summary: dict[str, dict[str, float]] = {}
    for name, rows in groups.items():
        keys = rows[0].keys()
        summary[name] = {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in keys}
        summary[name]["questions"] = len(rows)
    return summary
