"""The remarks dev set (bench/data/remarks) is what bench/remarks_devset.py promises: the
committed files are what the seeded build makes of the sources, both languages with six
users and at least 60 remarks each, every evidence and decoy its own user's memory, the
evidence at least 90 days before the remark; the checks refuse a remark with a date word or
a question (English and Chinese) or a too recent evidence, and pass a clean one."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import remarks_devset  # noqa: E402
from datasets import remarks_data  # noqa: E402


def test_the_committed_files_are_the_seeded_build_of_the_sources() -> None:
    for language in remarks_data.LANGUAGES:
        users = remarks_data.sources(language)
        assert remarks_data.problems(language, users) == []
        built = remarks_data.build_language(language, users)
        path = remarks_data.DATA_DIR / f"remarks_{language}.json"
        assert json.loads(path.read_text(encoding="utf-8")) == built


def test_six_users_a_language_and_their_own_old_evidence() -> None:
    dataset = remarks_devset.load()
    assert Counter(u.language for u in dataset.users) == {"zh": 6, "en": 6}
    remarks = Counter(dataset.language_of(q.user_id) for q in dataset.questions)
    assert min(remarks.values()) >= 60
    owner = {e.memory_id: (u.user_id, e) for u in dataset.users for e in u.memories}
    decoys = remarks_devset.decoys()
    for q in dataset.questions:
        for memory_id in q.evidence:
            user_id, event = owner[memory_id]
            assert user_id == q.user_id
            assert q.asked_at - event.occurred_at >= timedelta(days=90), q.question_id
        assert all(owner[d][0] == q.user_id for d in decoys[q.question_id])
        assert not set(q.evidence) & set(decoys[q.question_id])


SOURCE = {
    "en": (
        "@ t-1 2026-06-01 | a test user\n"
        + "".join(
            f"2025-01-{d:02d} Walked the dog round the park, lap {d}.\n" for d in range(1, 29)
        )
        + "".join(f"2025-02-{d:02d} Fed the ducks at the pond, day {d}.\n" for d in range(1, 29))
        + "2025-03-01 {kite} Flew the green kite on the hill.\n"
        + "2025-03-02 Bought a bag of bird seed.\n"
        + "2025-03-03 Cleaned the car windows.\n"
        + "2026-05-20 {fresh} Bought new wellies.\n"
    ),
    "zh": (
        "@ t-1 2026-06-01 | 测试用户\n"
        + "".join(f"2025-01-{d:02d} 去公园遛狗，第{d}圈。\n" for d in range(1, 29))
        + "".join(f"2025-02-{d:02d} 在湖边喂鸭子，第{d}天。\n" for d in range(1, 29))
        + "2025-03-01 {kite} 在山坡上放了绿色的风筝。\n"
        + "2025-03-02 买了一袋鸟食。\n"
        + "2025-03-03 擦了车窗。\n"
        + "2026-05-20 {fresh} 买了一双新雨靴。\n"
    ),
}
CLEAN = {"en": "The wind's just right for that hill again.", "zh": "风正好，又想去山坡上了。"}
DATED = {"en": "Last week the wind was just right for that hill.", "zh": "上周风正好，想去山坡上。"}
ASKED = {"en": "Shall we go up that hill again?", "zh": "要不要再去山坡上？"}


def _problems(language: str, remarks: list[str]) -> list[str]:
    text = SOURCE[language] + "".join(f"> {r}\n" for r in remarks)
    users = remarks_data.parse(text)
    return [p for p in remarks_data.problems(language, users) if "fewer than" not in p]


def test_the_checks_refuse_date_words_questions_and_recent_evidence() -> None:
    for language in remarks_data.LANGUAGES:
        clean = [f"kite | {CLEAN[language]}"] * 8
        assert _problems(language, clean) == [], language
        dated = _problems(language, [*clean[:7], f"kite | {DATED[language]}"])
        assert [p for p in dated if "date word" in p], language
        asked = _problems(language, [*clean[:7], f"kite | {ASKED[language]}"])
        assert [p for p in asked if "question" in p], language
        recent = _problems(language, [*clean[:7], f"fresh | {CLEAN[language]}"])
        assert [p for p in recent if "under 90 days" in p], language
        unknown = _problems(language, [*clean[:7], f"kite ~nothing | {CLEAN[language]}"])
        assert [p for p in unknown if "unknown tags" in p], language


def test_the_date_word_rule_spares_ordinary_remarks_in_the_set() -> None:
    # the rule's negative cases: every remark of the committed set passes it
    for language in remarks_data.LANGUAGES:
        for user in remarks_data.sources(language):
            for remark in user.remarks:
                assert not remarks_data.DATE_WORDS[language].search(remark.text), remark.text


def test_a_ranking_is_read_as_a_hit_a_decoy_first_or_a_miss() -> None:
    newer = {"m5", "m9"}
    assert remarks_devset.shape(["m1", "m5"], ("m1",), ("m5",), newer) == "hit"
    assert remarks_devset.shape(["m5", "m1"], ("m1",), ("m5",), newer) == "decoy first"
    assert remarks_devset.shape(["m9", "m1"], ("m1",), ("m5",), newer) == "newer first"
    assert remarks_devset.shape(["m0", "m1"], ("m1",), ("m5",), newer) == "older first"
    assert remarks_devset.shape(["m5", "m9"], ("m1",), ("m5",), newer) == "missed"
