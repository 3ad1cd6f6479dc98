"""Tokenizer and content hash: English and Chinese."""

from __future__ import annotations

import pytest

from hindsight.core.text import content_hash, stem, tokenize


def test_english_words_are_lowercased_and_stopwords_dropped() -> None:
    assert tokenize("The User is allergic to Peanuts!") == ["user", "allergic", "peanut"]


def test_numbers_and_mixed_tokens_are_kept() -> None:
    assert tokenize("Meeting at 3pm on 2026-06-01") == ["meet", "3pm", "2026", "06", "01"]


def test_full_width_and_compatibility_forms_are_folded() -> None:
    assert tokenize("ＰＥＡＮＵＴＳ １２３") == tokenize("peanuts 123") == ["peanut", "123"]


@pytest.mark.parametrize(
    ("forms", "shared"),
    [
        (["hike", "hikes", "hiking", "hiked"], "hik"),
        (["run", "runs", "running"], "run"),
        (["city", "cities"], "city"),
        (["box", "boxes"], "box"),
        (["need", "needs", "needed"], "need"),
        (["stop", "stopped", "stops"], "stop"),
    ],
)
def test_light_stemming_joins_word_forms(forms: list[str], shared: str) -> None:
    assert {stem(form) for form in forms} == {shared}


@pytest.mark.parametrize("word", ["bus", "this", "class", "thing", "sing", "café", "ok"])
def test_stemming_leaves_these_alone(word: str) -> None:
    assert stem(word) == word


def test_chinese_is_segmented_into_words_without_function_words() -> None:
    tokens = tokenize("用户对花生过敏")
    assert "花生" in tokens
    assert "过敏" in tokens
    assert "对" not in tokens


def test_chinese_search_mode_also_yields_the_parts_of_long_words() -> None:
    tokens = tokenize("中华人民共和国")
    assert {"中华人民共和国", "人民", "共和国"} <= set(tokens)


def test_mixed_chinese_and_english() -> None:
    tokens = tokenize("我下周去Berlin出差，meeting很重要")
    assert "berlin" in tokens
    assert "出差" in tokens
    assert "meet" in tokens
    assert "我" not in tokens
    assert "，" not in "".join(tokens)


def test_punctuation_and_empty_text_give_no_tokens() -> None:
    assert tokenize("") == []
    assert tokenize("... !!! ？？ —— 。") == []
    assert tokenize("the a is of") == []


def test_content_hash_ignores_case_width_and_spacing() -> None:
    assert content_hash("  Hello\n  World ") == content_hash("hello world")
    assert content_hash("ＨＥＬＬＯ") == content_hash("hello")
    assert content_hash("hello world") != content_hash("hello  worlds")
    assert len(content_hash("x")) == 64
