"""Text cut into clauses, and what kind of clause each is (hedged, for now, a question)."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u9fff]")


def is_zh(text: str) -> bool:
    """Whether ``text`` holds any Chinese character."""
    return bool(_CJK.search(text))


_CONTRACTIONS = [
    (r"\bi'm\b", "I am"),
    (r"\bim\b(?=\s+(?:allergic|a|not|going|planning|vegan|vegetarian))", "I am"),
    (r"\bi've\b", "I have"),
    (r"\bi'll\b", "I will"),
    (r"\bi'd\b", "I would"),
    (r"\bdon't\b", "do not"),
    (r"\bdoesn't\b", "does not"),
    (r"\bdidn't\b", "did not"),
    (r"\bcan't\b", "cannot"),
    (r"\bwon't\b", "will not"),
    (r"\bisn't\b", "is not"),
    (r"\baren't\b", "are not"),
    (r"\bshouldn't\b", "should not"),
    (r"\bmustn't\b", "must not"),
    (r"\bgonna\b", "going to"),
    (r"\bgotta\b", "have to"),
    (r"\bwanna\b", "want to"),
    (r"\bdont\b", "do not"),
    (r"\bcant\b", "cannot"),
]
_CONTRACTION_PATTERNS = [(re.compile(p, re.IGNORECASE), r) for p, r in _CONTRACTIONS]


def expand(text: str) -> str:
    """Contractions spelled out ("I'm" -> "I am"), curly quotes straightened, spaces single."""
    text = text.replace("’", "'").replace("‘", "'")
    for pattern, replacement in _CONTRACTION_PATTERNS:
        text = pattern.sub(replacement, text)
    return re.sub(r"\s+", " ", text).strip()


_CLAUSE_SPLIT_EN = re.compile(
    r"(?<=[.!?;])\s+|\s*;\s*|\s*,?\s+\b(?:but|although|though|whereas|however)\b\s+"
    r"|,?\s+and\s+(?=(?:I|the user)\b)|,\s+(?=I\b)",
    re.IGNORECASE,
)
_CLAUSE_SPLIT_ZH = re.compile(r"[。！？；;!?，,\n]|但是|不过|可是|而且|然后")


_MAX_CLAUSE_CHARS = 300  # statements are short; this keeps every pattern linear in practice


def _chunks(text: str, size: int = _MAX_CLAUSE_CHARS) -> list[str]:
    """Cut a run-on text into pieces of at most ``size`` characters, at spaces if possible."""
    pieces: list[str] = []
    while len(text) > size:
        cut = text.rfind(" ", 0, size)
        cut = cut if cut > size // 2 else size
        pieces.append(text[:cut])
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


def clauses(text: str) -> list[str]:
    """The clauses of ``text``, contractions expanded, each at most 300 characters."""
    parts: list[str] = []
    for sentence in re.split(r"(?<=[.!?。！？;；])\s*|\n", text):
        sentence = sentence.strip()
        if not sentence:
            continue
        splitter = _CLAUSE_SPLIT_ZH if is_zh(sentence) else _CLAUSE_SPLIT_EN
        for part in splitter.split(expand(sentence)):
            if part:
                parts.extend(_chunks(part.strip(" ,，、")))
    return [p for p in parts if p]


_HEDGE_EN = re.compile(
    r"\b(?:I think|I guess|I believe|I suppose|maybe|perhaps|probably|possibly|might|"
    r"not sure|kind of|sort of|I feel like|seems?)\b",
    re.IGNORECASE,
)
_HEDGE_ZH = re.compile(r"可能|也许|好像|大概|或许|似乎|应该是|我觉得|估计|不确定|说不定")
_TEMPORARY_EN = re.compile(
    r"\b(?:today|tonight|right now|at the moment|this (?:morning|afternoon|evening|time)|"
    r"for now|for today|just now)\b",
    re.IGNORECASE,
)
_TEMPORARY_ZH = re.compile(r"今天|今晚|今早|现在|此刻|这会儿|这会|暂时|眼下|这顿|这次|目前")
_QUESTION_EN = re.compile(
    r"\?\s*$|^(?:do|does|did|can|could|would|will|is|are|am|what|how|why|when|where|who|"
    r"which|should)\b",
    re.IGNORECASE,
)
_QUESTION_ZH = re.compile(r"[？?]\s*$|[吗呢嘛]\s*[？?]?\s*$|为什么|怎么样|是什么|什么时候")


def hedged(clause: str) -> bool:
    """Said with doubt ("I think", "可能"): the fact gets low confidence."""
    return bool(_HEDGE_ZH.search(clause) if is_zh(clause) else _HEDGE_EN.search(clause))


def temporary(clause: str) -> bool:
    """About now only ("today", "今天"): no lasting preference or diet."""
    pattern = _TEMPORARY_ZH if is_zh(clause) else _TEMPORARY_EN
    return bool(pattern.search(clause))


def question(clause: str) -> bool:
    """A question states nothing."""
    pattern = _QUESTION_ZH if is_zh(clause) else _QUESTION_EN
    return bool(pattern.search(clause))
