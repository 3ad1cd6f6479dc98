"""Text normalisation for keyword search and dedup, English and Chinese alike.

``tokenize`` turns text into the terms a BM25 index stores and a query looks up:
NFKC + casefold; latin words and numbers as tokens (English stopwords dropped, a light
plural / -ing / -ed / final -e stemming so "hiking" meets "hike"); runs of Chinese characters
segmented with jieba in search mode, Chinese function words dropped.
``content_hash`` is the dedup key of a text.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import unicodedata
from functools import lru_cache

_CJK = (
    "\u3400-\u4dbf"  # extension A
    "\u4e00-\u9fff"  # unified ideographs
    "\uf900-\ufaff"  # compatibility ideographs
    "\U00020000-\U0002fa1f"  # extensions B-F and compatibility supplement
)
# a run of Chinese characters, or a run of other letters/digits (latin, cyrillic, kana ...)
_TOKEN_RUN = re.compile(rf"([{_CJK}]+)|((?:(?![{_CJK}])[^\W_])+)")
_WHITESPACE = re.compile(r"\s+")

_ENGLISH_STOPWORDS = """
    a an and are as at be been being but by can could did do does doing for from had has
    have having he her hers him his how i if in into is it its itself just me my myself no
    nor not of on or our ours she should so some such than that the their theirs them then
    there these they this those to too very was we were what when where which while who
    whom why will with would you your yours s t d ll m re ve
"""

ENGLISH_STOPWORDS = frozenset(_ENGLISH_STOPWORDS.split())

_CHINESE_STOPWORDS = """
    的 了 是 我 你 他 她 它 们 我们 你们 他们 她们 这 那 这个 那个 这些 那些 就 都 而 及 与
    和 跟 或 还 也 又 在 把 被 让 给 对 于 从 向 到 为 以 之 其 吗 呢 吧 啊 呀 哦 嗯 哈 啦 嘛
    着 过 得 地 个 一个 有 没 没有 不 很 太 更 最 要 会 能 可以 说 想 去 来 上 下 里 中 等
"""
CHINESE_STOPWORDS = frozenset(_CHINESE_STOPWORDS.split())

_jieba_lock = threading.Lock()


@lru_cache(maxsize=1)
def _jieba() -> object:
    """Import and initialise jieba once, quietly (its dictionary load takes ~1 s)."""
    with _jieba_lock:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        return jieba


@lru_cache(maxsize=8_192)
def jieba_module() -> object:
    """jieba, initialised once (``core/retrieval/subjects.py`` reads its dictionary and tagger)."""
    return _jieba()


def _segment_chinese(run: str) -> tuple[str, ...]:
    jieba = _jieba()
    words = jieba.lcut_for_search(run)  # type: ignore[attr-defined]
    return tuple(w for w in words if w.strip() and w not in CHINESE_STOPWORDS)


def _is_vowel(char: str) -> bool:
    return char in "aeiou"


def stem(word: str) -> str:
    """A deliberately light English stemmer: plurals, then -ing / -ed, then a final -e.

    The same word form always maps to the same stem, which is all BM25 needs.
    """
    if not word.isascii() or not word.isalpha() or len(word) <= 3:
        return word
    # each step works on the previous one's result, so "speeds", "speed" and "speeding"
    # all end in the same stem
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix, min_length in (("ing", 6), ("ed", 5)):
        if word.endswith(suffix) and len(word) >= min_length:
            base = word[: -len(suffix)]
            if any(_is_vowel(c) for c in base):
                word = base
                if len(word) >= 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                    word = word[:-1]  # running -> run, stopped -> stop
                break
    if word.endswith("e") and len(word) > 3 and not word.endswith("ee"):
        word = word[:-1]  # hike / hiking -> hik
    return word


def normalize(text: str) -> str:
    """NFKC + casefold: full-width and compatibility forms folded, case ignored."""
    return unicodedata.normalize("NFKC", text).casefold()


def tokenize(text: str) -> list[str]:
    """Search terms of a text, in order, duplicates kept (BM25 counts them)."""
    tokens: list[str] = []
    for match in _TOKEN_RUN.finditer(normalize(text)):
        chinese, other = match.groups()
        if chinese:
            tokens.extend(_segment_chinese(chinese))
            continue
        if other in ENGLISH_STOPWORDS:
            continue
        if len(other) == 1 and not other.isdigit():
            continue
        tokens.append(stem(other))
    return tokens


def content_hash(text: str) -> str:
    """sha256 hex of the text normalised (NFKC, casefold, whitespace collapsed, stripped)."""
    normalised = _WHITESPACE.sub(" ", normalize(text)).strip()
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()
