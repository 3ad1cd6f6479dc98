"""Small stores for the calibration: users holding 1 to 20 memories.

A user with a handful of memories is where relative evidence misleads: the only memory is
the best candidate there is (scaled to 1), so the calibration must lean on what compares
across queries (the cosine's margin, the words held). Two sources:

- LoCoMo: for every second question with evidence, a store of ``SIZES[i % len(SIZES)]``
  turns. Alternately it holds the evidence turns plus other turns of the same
  conversation (an "own" query: the evidence is the positive) or turns of the next
  conversation only (a "cross" query: nothing answers it).
- ``PAIRS`` (``datasets/tables/calibration_small.json``): our own English and Chinese
  statements, each with a question it answers (written for this set, not taken from any
  dataset). Each statement alone asked its own question (positive) and, alone, the
  question of the pair half the list away (a lone unrelated memory: negative); and stores
  of 4 statements asked each of their questions.

Rows have the shape of training/calibration_data.py's (``set`` "small").
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from datasets.tables import load_tables
from harness import close_service, open_service

from hindsight.core.commands import BatchItem, RetrieveCommand, StoreBatchCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService

SIZES = (1, 2, 3, 5, 8, 12, 20)
PRINCIPAL = Principal(tenant_id="small", key_id="bench")
GROUP_SIZE = 4  # statements per mixed store of PAIRS

# (statement, a question it answers): one fact of a user each, topics kept apart
TABLES = load_tables("calibration_small")
PAIRS_EN = tuple((statement, question) for statement, question in TABLES["PAIRS_EN"])
PAIRS_ZH = tuple((statement, question) for statement, question in TABLES["PAIRS_ZH"])


def _store(service: MemoryService, user_id: str, items: list[BatchItem]) -> list[str]:
    command = StoreBatchCommand(user_id=user_id, items=items)
    return [o.memory_id for o in service.store_batch(PRINCIPAL, command)]


def _results(service: MemoryService, command: RetrieveCommand, owner: dict[str, list[str]]) -> Any:
    result = service.retrieve(PRINCIPAL, command)
    return [
        {
            "ids": owner.get(r.memory_id, []),
            "fused": r.why["fused_score"],
            "features": {k: v for k, v in r.why["calibration"].items() if k != "logit"},
        }
        for r in result.results
    ]


def _locomo_store(conversations: list[Any], number: int, index: int) -> tuple[str, list[Any]]:
    """The turns of one small store, and whether the question is asked of its own turns."""
    conversation = conversations[number]
    question = conversation.questions[index]
    size = SIZES[(index // 2) % len(SIZES)]
    stride = 7 + index % 5  # spread the distractors over the conversation
    if (index // 2) % 2 == 0:
        evidence = set(question.evidence)
        gold = [t for t in conversation.turns if t.dia_id in evidence][:size]
        others = [t for t in conversation.turns if t.dia_id not in evidence]
        return "own", gold + others[index % stride :: stride][: size - len(gold)]
    other = conversations[(number + 1) % len(conversations)].turns
    return "cross", other[index % stride :: stride][:size]


def collect_small_locomo(conversations: list[Any], embedder: Any) -> Iterator[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="calibrate-small-") as tmp:
        service = open_service(Path(tmp), embedder)
        for number, conversation in enumerate(conversations):
            for index, question in enumerate(conversation.questions):
                if index % 2 or not question.evidence:
                    continue
                kind, turns = _locomo_store(conversations, number, index)
                if not turns:
                    continue
                user_id = f"small-{conversation.sample_id}-{index}"
                items = [
                    BatchItem(content=t.content, speaker=t.speaker, occurred_at=t.when)
                    for t in turns
                ]
                ids = _store(service, user_id, items)
                owner = {m: [t.dia_id] for m, t in zip(ids, turns, strict=True)}
                as_of = max(t.when for t in turns) + timedelta(hours=1)
                command = RetrieveCommand(
                    user_id=user_id, query=question.text, top_k=20, as_of=as_of
                )
                yield {
                    "set": "small",
                    "language": "en",
                    "group": number,
                    "question": f"{conversation.sample_id}-{index}",
                    "category": f"locomo {len(turns)}",
                    "kind": kind,
                    "gold": list(question.evidence) if kind == "own" else [],
                    "results": _results(service, command, owner),
                }
            print(f"  small stores of locomo conversation {number} asked", flush=True)
        close_service(service)


def _pair_queries(
    service: MemoryService, language: str, pairs: tuple[tuple[str, str], ...]
) -> Iterator[dict[str, Any]]:
    half = len(pairs) // 2
    for number, (statement, question) in enumerate(pairs):
        unrelated = pairs[(number + half) % len(pairs)][0]
        for kind, content in (("own", statement), ("cross", unrelated)):
            user_id = f"pair-{language}-{number}-{kind}"
            ids = _store(service, user_id, [BatchItem(content=content)])
            key = f"{language}-{number}" if kind == "own" else f"{language}-other"
            command = RetrieveCommand(user_id=user_id, query=question, top_k=20)
            yield _pair_row(
                language, number, "pair 1", kind, key, _results(service, command, {ids[0]: [key]})
            )
    for start in range(0, len(pairs), GROUP_SIZE):
        chosen = list(enumerate(pairs))[start : start + GROUP_SIZE]
        user_id = f"pairs-{language}-{start}"
        ids = _store(service, user_id, [BatchItem(content=s) for _, (s, _) in chosen])
        owner = {m: [f"{language}-{n}"] for m, (n, _) in zip(ids, chosen, strict=True)}
        for number, (_, question) in chosen:
            command = RetrieveCommand(user_id=user_id, query=question, top_k=20)
            results = _results(service, command, owner)
            yield _pair_row(
                language, number, f"pair {len(chosen)}", "own", f"{language}-{number}", results
            )


def _pair_row(
    language: str, number: int, category: str, kind: str, key: str, results: list[Any]
) -> dict[str, Any]:
    return {
        "set": "small",
        "language": language,
        "group": f"pair-{number % 2}",  # even pairs are fitted, odd ones held out
        "question": f"pair-{language}-{number}",
        "category": category,
        "kind": kind,
        "gold": [key] if kind == "own" else [],
        "results": results,
    }


def collect_pairs(embedder: Any) -> Iterator[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="calibrate-pairs-") as tmp:
        service = open_service(Path(tmp), embedder)
        yield from _pair_queries(service, "en", PAIRS_EN)
        yield from _pair_queries(service, "zh", PAIRS_ZH)
        close_service(service)
