"""The long-memory benchmark's committed dataset is what bench/longmem.py promises to measure.

Every needle is stated exactly once, inside its turn at the recorded offset and position;
no question gives its needle or answer away; lengths are in range; both languages and
every position are there; and the file is what its generator builds.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import longmem_data  # noqa: E402
from datasets import longmem_chat  # noqa: E402
from longmem_data import Dataset, load_dataset  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return load_dataset()


def whole_word_count(text: str, answer: str) -> int:
    return len(re.findall(rf"(?<![0-9A-Za-z]){re.escape(answer)}(?![0-9A-Za-z])", text))


def test_the_dataset_has_both_languages_every_position_and_enough_needles(
    dataset: Dataset,
) -> None:
    languages = Counter(q.language for q in dataset.questions)
    positions = Counter(q.position for q in dataset.questions)
    assert 60 <= sum(positions[p] for p in ("start", "middle", "end")) <= 100
    assert positions["short"] >= 10
    assert min(positions["start"], positions["middle"], positions["end"]) >= 10
    assert abs(languages["en"] - languages["zh"]) <= 0.1 * len(dataset.questions)
    assert len({q.question_id for q in dataset.questions}) == len(dataset.questions)
    for user in dataset.users:
        short = [t for t in user.turns if not t.long]
        assert len(short) >= 24  # "a few dozen" ordinary chat turns
        assert sum(t.long for t in user.turns) >= 2
        assert [t.occurred_at for t in user.turns] == sorted(t.occurred_at for t in user.turns)


def test_every_needle_is_stated_exactly_once_in_its_turn_and_nowhere_else(
    dataset: Dataset,
) -> None:
    users = {u.user_id: u for u in dataset.users}
    for question in dataset.questions:
        turn = dataset.turn(question.turn_id)
        assert turn.content.count(question.needle) == 1, question.question_id
        start, end = question.offset, question.offset + len(question.needle)
        assert turn.content[start:end] == question.needle, question.question_id
        history = users[question.user_id]
        elsewhere = [
            t.turn_id for t in history.turns if t is not turn and question.needle in t.content
        ]
        assert elsewhere == [], question.question_id
        assert question.answer in question.needle, question.question_id
        text = "\n".join(t.content for t in history.turns)
        assert whole_word_count(text, question.answer) == 1, (question.question_id, question.answer)


def test_questions_ask_in_other_words_and_in_the_needles_language(dataset: Dataset) -> None:
    for question in dataset.questions:
        assert question.needle not in question.text, question.question_id
        assert question.answer not in question.text, question.question_id
        assert question.text.rstrip("？?") not in question.needle, question.question_id
        assert bool(CJK.search(question.text)) == (question.language == "zh"), question.text
        assert bool(CJK.search(question.needle)) == (question.language == "zh"), question.needle


def test_long_turns_are_5k_to_60k_characters_and_short_turns_are_short(dataset: Dataset) -> None:
    for user in dataset.users:
        for turn in user.turns:
            if turn.long:
                assert 5_000 <= len(turn.content) <= 60_000, turn.turn_id
                assert turn.documents, turn.turn_id
            else:
                assert 0 < len(turn.content) <= 1_000, turn.turn_id
    beyond = [q for q in dataset.questions if q.position != "short" and q.offset >= 8_000]
    assert len(beyond) >= 30  # enough needles that a cut at 8,000 characters loses


def test_each_needle_sits_where_its_position_says(dataset: Dataset) -> None:
    bounds = {"start": (0.0, 0.1), "middle": (0.25, 0.75), "end": (0.88, 1.0)}
    for question in dataset.questions:
        turn = dataset.turn(question.turn_id)
        if question.position == "short":
            assert not turn.long, question.question_id
            continue
        low, high = bounds[question.position]
        assert turn.long and low <= question.offset / len(turn.content) <= high, question


def test_the_committed_file_is_what_the_generator_builds() -> None:
    if not longmem_chat.MSC_DIR.is_dir():  # pragma: no cover - the shared data is absent
        pytest.skip(f"the MSC dialogues the generator reads are not at {longmem_chat.MSC_DIR}")
    assert longmem_data.to_json(longmem_data.build_dataset()) == longmem_data.DATA_FILE.read_bytes()


def test_a_file_of_another_format_is_refused(tmp_path: Path) -> None:
    data = json.loads(gzip.decompress(longmem_data.DATA_FILE.read_bytes()))
    data["format"] = longmem_data.FORMAT + 1
    path = tmp_path / "other.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    with pytest.raises(ValueError, match="rebuild"):
        load_dataset(path)
