"""Why MSC stays under plain dense retrieval (#12 part 1): the diagnostics behind the README's
"The speaker's name is not what MSC loses to".

``--cosines``: plain cosine ranking (numpy, the cached vectors) of each turn alone, of the
turn with the turn before (as the store embeds it: ``index_text``), and of the larger of
the two, on MSC and LoCoMo: recall@10 / hit@5 as ``devsets.py`` counts them (printed by
``turn_weight.py``, whose table also holds the mixes that session 11 chose from).

Otherwise ``devsets.py`` on the given sets with these policies besides its own variants:
the keyword share, pooling and speaker boost all off (``dense only``), the speaker boost
back on (``dense + speaker``), and pooling too (``dense + speaker + pooling``).
``--turn-vectors`` embeds each turn without the turn before (the keyword search still
reads it).

    python bench/decisions/msc_keywords.py --cosines
    python bench/decisions/msc_keywords.py --sets msc \
        --variants "default,dense only,dense + speaker,dense + speaker + pooling"
    python bench/decisions/msc_keywords.py --turn-vectors --sets msc --variants default

(``python`` is ``.venv/bin/python``; the report goes to /tmp/msc_keywords.{json,md}
unless ``--out`` says otherwise, never over bench/results/devsets.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import devsets

import hindsight.core.usecases.store as store_module

DENSE = {"vector_weight": 1.0, "session_pooling": 0.0, "speaker_boost": 1.0, "lexical_strength": 0}
EXTRA = (
    devsets.Variant("dense only", DENSE),
    devsets.Variant("dense + speaker", {**DENSE, "speaker_boost": 1.15}),
    devsets.Variant(
        "dense + speaker + pooling", {**DENSE, "speaker_boost": 1.15, "session_pooling": 0.5}
    ),
)


def turn_vectors() -> None:
    """The store embeds each turn without the turn before (the keyword search keeps it)."""
    embed = store_module.embed_memories

    def without_context(embedder: Any, memories: Any, *args: Any, **kwargs: Any) -> Any:
        return embed(
            embedder, [m.model_copy(update={"context": None}) for m in memories], *args, **kwargs
        )

    store_module.embed_memories = without_context  # type: ignore[assignment]


def main(argv: list[str]) -> int:
    if "--cosines" in argv:  # the table is turn_weight.py's (its first rows)
        from decisions import turn_weight

        turn_weight.cosines()
        return 0
    if "--turn-vectors" in argv:
        argv.remove("--turn-vectors")
        turn_vectors()
    devsets.VARIANTS = devsets.VARIANTS + EXTRA
    if "--out" not in argv:  # never over the committed report
        argv += ["--out", "/tmp/msc_keywords"]
    return devsets.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
