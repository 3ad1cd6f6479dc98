"""A turn cut into statements (and clauses), and the cheap signals of each one the
classifier reads.

A statement is a sentence, or a part of one that starts a new first-person clause
("It was good, I love true crime books" gives two). The signals are the same in English
and Chinese: the embeddings carry the meaning, these carry what the embeddings blur
(who the subject is, a question mark, an "if", a "today").
"""

from __future__ import annotations

import math
import re

import numpy as np

from hindsight.adapters.reflectors.rule_based.clauses import is_zh

_SENTENCE_END = re.compile(r"(?<=[.!?。！？;；])\s*|\n+")
_EN_CLAUSE = re.compile(
    r"\s*;\s*|,?\s+(?:but|and|so|because|though|although)\s+(?=(?:I|I'm|I've|I'd|I'll|my|My)\b)"
    r"|,\s+(?=(?:I|I'm|I've|I'd|I'll|my|My)\b)",
)
_ZH_CLAUSE = re.compile(r"[，,]\s*(?=我|但是|不过|可是|而且|所以|因为)")
_MIN_CHARS = 3
_MAX_CHARS = 300
# a clause boundary inside a statement: ";", ",", ":", a dash, or a joining word
_EN_CLAUSE_FINE = re.compile(
    r"\s*[;,:]\s*|\s+(?:and|but|so|because|though|although|since|while)\s+|\s+-+\s+",
    re.IGNORECASE,
)
_ZH_CLAUSE_FINE = re.compile(r"[，,；;、：:]\s*|而且|但是|所以|因为|不过|可是")
# a clause that is nothing but discourse filler ("Yeah", "Oh wow", "lol", "哈哈", "嗯")
_FILLER = re.compile(
    r"^(?:(?:yes|yeah|yep|yup|no|nope|oh|ohh|wow|well|haha|hahaha|lol|ok|okay|sure|hmm|ah|"
    r"aw|um|uh|right|true|cool|nice|great|awesome|thanks|thank you|indeed|absolutely|"
    r"definitely|totally|exactly|me too|same here)\b[\s!.~]*)+$"
    r"|^(?:[哈嗯哦啊呀哇唉对是好的嘛呢吧]|是的|对啊|好吧|没错|真的|确实)+[!！~～]*$",
    re.IGNORECASE,
)


def statements(text: str) -> list[str]:
    """The statements of a turn, in order, stripped; fragments under 3 characters dropped."""
    found: list[str] = []
    for sentence in _SENTENCE_END.split(text.replace("’", "'")):
        sentence = sentence.strip()
        if not sentence:
            continue
        splitter = _ZH_CLAUSE if is_zh(sentence) else _EN_CLAUSE
        parts = [sentence] if conditional(sentence) else splitter.split(sentence)
        for part in parts:
            part = part.strip(" ,，、")[:_MAX_CHARS]
            if len(part) >= _MIN_CHARS:
                found.append(part)
    return found


def clauses(text: str) -> list[str]:
    """The clauses of a turn, in order: each statement (``statements``) cut further at its
    clause boundaries (",", ";", "and", "but", "so", "because"; "，", "而且", "但是", "所以",
    "因为"), so that "I love hiking and my dog is named Max" gives two facts, each in the
    speaker's own words. Clauses that are only discourse filler ("Yeah", "Oh wow", "lol",
    "哈哈", "嗯") are dropped; a hypothetical statement stays whole."""
    found: list[str] = []
    for statement in statements(text):
        if conditional(statement):
            found.append(statement)
            continue
        splitter = _ZH_CLAUSE_FINE if is_zh(statement) else _EN_CLAUSE_FINE
        for part in splitter.split(statement):
            part = part.strip(" ,，、.。!！")
            if len(part) >= _MIN_CHARS and not _FILLER.match(part):
                found.append(part)
    return found


_CONDITIONAL = re.compile(
    r"\b(?:if|unless|wish|imagine|suppose|supposing|pretend)\b|如果|要是|假如|万一|假设|想象|但愿",
    re.IGNORECASE,
)
_MOMENTARY = re.compile(
    r"^(?:I would like|I'd like|I will have|I'll have|can I (?:get|have))\s+(?:a|an|some|the|one)\b"
    r"|^I(?: am|'m)\s+(?:so |really |very |a bit |kind of )?(?:tired|hungry|thirsty|sleepy|bored|"
    r"exhausted|busy|cold|hot|full|sick|late)\W*$"
    r"|^我(?:要|想要|来)一(?:杯|份|个|碗|瓶)|^我(?:好|很|有点|太)?(?:累|饿|渴|困|忙|冷|热|饱)了?\W*$"
    r"|^我(?:叫|点)了",
    re.IGNORECASE,
)


def conditional(text: str) -> bool:
    """Whether the text is hypothetical ("if I had a dog", "如果我有钱"): not the speaker's
    fact. Such a sentence is kept whole, so that every part of it stays hypothetical."""
    return bool(_CONDITIONAL.search(text))


def momentary(text: str) -> bool:
    """A request or a passing state ("I'd like a coffee", "I'm tired", "我叫了外卖")."""
    return bool(_MOMENTARY.search(text.strip()))


_EN = {
    "first_person": r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|our|us)\b",
    "starts_first_person": r"^(?:(?:yes|yeah|no|oh|well|haha|lol|wow|ok|okay|so|and|but|"
    r"actually|honestly)\W+)*(?:I|I'm|I've|I'd|my|we|our)\b",
    "question": r"\?\s*$|^(?:do|does|did|can|could|would|will|is|are|what|how|why|when|where|"
    r"who|which|have|has)\b",
    "hypothetical": r"\b(?:if|would|wish|could|imagine|suppose|someday|maybe|might|hope)\b",
    "negation": r"\b(?:not|no|never|nothing|none)\b|n't\b",
    "temporary": r"\b(?:today|tonight|right now|at the moment|this (?:morning|afternoon|evening)"
    r"|for now|just now)\b",
    "second_person": r"\b(?:you|your|yours)\b",
    "third_person": r"\b(?:he|she|his|her|him|they|them|their)\b",
    "past": r"\b(?:was|were|did|used to|had)\b",
}
_ZH = {
    "first_person": r"我",
    "starts_first_person": r"^(?:(?:但是|不过|可是|而且|所以|因为|其实|[嗯哦啊哈是对好])"
    r"[，,！!\s]*)*我",
    "question": r"[？?]\s*$|[吗呢嘛]\s*[？?]?\s*$|为什么|怎么样|是什么|什么时候|有没有",
    "hypothetical": r"如果|要是|假如|想象|希望|但愿|也许|可能|说不定",
    "negation": r"不|没|别|从未",
    "temporary": r"今天|今晚|今早|现在|此刻|这会儿|暂时|眼下|这顿|这次",
    "second_person": r"你|您",
    "third_person": r"他|她|它",
    "past": r"以前|过去|曾经|小时候",
}
_PATTERNS = {
    "en": {k: re.compile(v, re.IGNORECASE) for k, v in _EN.items()},
    "zh": {k: re.compile(v) for k, v in _ZH.items()},
}
SIGNALS = tuple(_EN)
FEATURE_NAMES = (*SIGNALS, "length")


def signals(statement: str) -> np.ndarray:
    """The cheap signals of a statement, 0/1 each, and its length (log-scaled)."""
    zh = is_zh(statement)
    patterns = _PATTERNS["zh" if zh else "en"]
    flags = [1.0 if patterns[name].search(statement) else 0.0 for name in SIGNALS]
    units = len(statement) / 2 if zh else len(statement.split())  # ~words either way
    flags.append(math.log1p(units) / 3.0)
    return np.asarray(flags, dtype=np.float32)
