"""The embedded product with nothing configured reflects with the learned reflector, in
English and Chinese: it finds what users reveal about themselves, keeps their words, waits
for review, and auto-approves only what it is sure of when asked to."""

from __future__ import annotations

from pathlib import Path

from hindsight.adapters.reflectors.learned import LABEL
from hindsight.bootstrap import build_embedded_service
from hindsight.core.commands import ReflectCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.settings import Settings

PRINCIPAL = Principal(tenant_id="acme")


def test_the_default_reflector_of_the_embedded_service(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"HINDSIGHT_DATA_DIR": str(tmp_path), "HINDSIGHT_AUTO_APPROVE_HIGH_CONFIDENCE": "true"}
    )
    service = build_embedded_service(settings)
    said = {
        "I'm allergic to peanuts.": "peanuts",
        "I volunteer at the animal shelter every Saturday.": "animal shelter",
        "我养了一只猫，叫馒头。": "猫",
        "今天不想吃川菜": None,  # for today only: no lasting dislike
        "He is a firefighter.": None,  # someone else
        "Do you like pizza?": None,
    }
    ids = {
        text: service.store(
            PRINCIPAL, StoreMemoryCommand(user_id="u1", content=text, speaker="user")
        ).memory_id
        for text in said
    }
    result = service.reflect(PRINCIPAL, ReflectCommand(user_id="u1"))
    assert result.reflector == LABEL
    by_source = {f["source_memory_ids"][0]: f for f in result.created}
    for text, words in said.items():
        if words is None:
            assert ids[text] not in by_source, text
        else:
            assert words in by_source[ids[text]]["content"], text
    allergy = by_source[ids["I'm allergic to peanuts."]]
    assert (allergy["confidence"], allergy["status"]) == ("high", "approved")
    others = [f for f in result.created if f is not allergy]
    assert others and all(f["status"] == "pending" for f in others)
