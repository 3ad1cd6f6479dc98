"""The embedded product with nothing configured reflects with the learned reflector, in
English and Chinese: it finds what users reveal about themselves, keeps their words, waits
for review, and auto-approves only what it is sure of when asked to."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from hindsight.adapters.reflectors.learned import LABEL
from hindsight.bootstrap import build_embedded_service
from hindsight.core.commands import ListMemoriesCommand, ReflectCommand, StoreMemoryCommand
from hindsight.core.errors import ConflictError
from hindsight.core.models import MemoryKind, Principal
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


def test_a_later_episode_that_gives_no_fact_still_retires_the_fact_it_changes(
    tmp_path: Path,
) -> None:
    """A team, then a change of team said with a cue; a car, then the car sold and another
    driven now: the older fact is superseded whether or not the reflector made a fact of
    the newer episode, in both languages; a remark about the same team or car retires
    nothing."""
    service = build_embedded_service(Settings.from_env({"HINDSIGHT_DATA_DIR": str(tmp_path)}))
    now = service.now()
    cases = [  # (user, older, newer, whether the newer changes the older's attribute)
        ("en", "I'm a die-hard Juventus fan.",
         "I no longer follow Juventus, I'm a Barcelona fan now.", True),
        ("zh", "我开的是比亚迪秦。", "我把比亚迪秦卖了，现在开本田思域。", True),
        ("en-same", "I'm a die-hard Juventus fan.",
         "Juventus won again last night, what a game.", False),
        ("zh-same", "我开的是比亚迪秦。", "我的比亚迪秦今天去做了保养。", False),
    ]  # fmt: skip
    for user, older, newer, changes in cases:
        ids = []
        for text, days in ((older, 90), (newer, 0)):
            command = StoreMemoryCommand(
                user_id=user, content=text, occurred_at=now - timedelta(days=days)
            )
            ids.append(service.store(PRINCIPAL, command).memory_id)
            if days:  # the older is reflected on and approved before the newer comes
                first = service.reflect(PRINCIPAL, ReflectCommand(user_id=user))
                (fact,) = first.created
                service.approve(PRINCIPAL, fact["memory_id"])
        service.reflect(PRINCIPAL, ReflectCommand(user_id=user))
        listed = service.list_memories(
            PRINCIPAL, ListMemoriesCommand(user_id=user, kind=MemoryKind.SEMANTIC)
        ).results
        old = next(f for f in listed if f["memory_id"] == fact["memory_id"])
        expected = ("superseded", ids[1]) if changes else ("approved", None)
        assert (old["status"], old["superseded_by"]) == expected, (user, listed)
        if changes:
            with pytest.raises(ConflictError, match="superseded by " + ids[1]):
                service.approve(PRINCIPAL, fact["memory_id"])
