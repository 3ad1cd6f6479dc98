"""What keeps the learned reflector's facts right: statements that are not the speaker's
lasting facts are dropped, and near-duplicates are folded into one fact.

A statement the classifier accepts and no rule-based extractor reads is dropped when it is
(each rule measured on held-back dialogues, English and Chinese, with the rate at which it
drops a right fact: ``bench/extraction_rules.py``, ``docs/reflection.md``):

- about someone else: it opens with a third person ("He's a guitarist", "Their house is
  big", "他是老师"); "we" is kept ("We have two kids" is the speaker's family);
- about the listener: it speaks to them ("I found songs for your wedding", "你呢");
- pointing at something only named elsewhere ("I love it", "I would love to", "我也是",
  "我觉得这个不错");
- in English, without the speaker: no "I", "my", "we", ... anywhere in it ("Sky diving",
  "The corndogs are great", "South Carolina's got a great food scene"), what a clause cut
  from a longer statement often is. Chinese drops its subject freely ("喜欢爬山"), so a
  Chinese clause without 我 stays.

Near-duplicates: two facts of the classifier (not the rules', whose topics carry
supersession) whose content words are mostly the same (Dice >= ``NEAR``) are one fact:
the surer one's words (the longer on a tie), both facts' sources, the higher confidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from hindsight.adapters.reflectors.rule_based.clauses import is_zh
from hindsight.core.models import Confidence, ExtractedFact
from hindsight.core.text import tokenize

NEAR = 0.6  # Dice overlap of content words from which two facts are one
STATEMENT_TOPIC = "statement:"  # the topic prefix of the classifier's own facts

_OTHERS = re.compile(
    r"^(?:(?:yes|yeah|oh|well|and|but|so|haha|lol)\W+)*"
    r"(?:he|she|they|his|her|their|he's|she's|they're|they've)\b"
    r"|^(?:但是|不过|而且|所以|其实)?(?:他|她|它)",
    re.IGNORECASE,
)
_LISTENER = re.compile(r"\b(?:you|your|yours|yourself)\b|你|您", re.IGNORECASE)
_ZH_DEMONSTRATIVE = re.compile(
    r"^(?:我(?:觉得|认为|感觉)?)?[这那](?:个|些|样|儿|里)?(?:真|很|挺|太|也|还)?\S{0,3}?[了的啊呀吧]?$"
)
_VAGUE_END = (" it", " that", " this", " them", " too", " to", " yet", " those", " these")
_VAGUE_END_ZH = ("也是", "这个", "那个")
# a word by which the speaker is in an English clause at all
_SPEAKER_EN = re.compile(
    r"\b(?:I|I'm|I've|I'd|I'll|Im|Ive|me|my|mine|myself|we|we're|we've|our|ours|us)\b",
    re.IGNORECASE,
)
_RANK = {Confidence.LOW: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}


def points_elsewhere(text: str) -> bool:
    """Whether the statement's object is only a pronoun ("I like it", "I'd love to",
    "我也是", "我觉得这个不错")."""
    lowered = text.lower().rstrip(" .!。！")
    return lowered.endswith((*_VAGUE_END, " both", *_VAGUE_END_ZH)) or bool(
        _ZH_DEMONSTRATIVE.match(lowered)
    )


def speakerless(text: str) -> bool:
    """Whether an English statement does not name its speaker at all (module docstring)."""
    return not is_zh(text) and not _SPEAKER_EN.search(text)


def not_about_the_speaker(text: str) -> bool:
    """Whether a statement the classifier accepted is still no lasting fact of its speaker
    (module docstring)."""
    return (
        bool(_OTHERS.match(text.strip()))
        or bool(_LISTENER.search(text))
        or points_elsewhere(text)
        or speakerless(text)
    )


def _words(fact: ExtractedFact) -> frozenset[str]:
    return frozenset(w for w in tokenize(fact.content) if w not in {"user", "用户"})


def _near(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a and b) and 2 * len(a & b) / (len(a) + len(b)) >= NEAR


def fold_near_duplicates(facts: Sequence[ExtractedFact]) -> list[ExtractedFact]:
    """The facts with the classifier's near-duplicates folded into one (module docstring),
    in their order."""
    kept: list[ExtractedFact] = []
    words: list[frozenset[str]] = []
    for fact in facts:
        mine = _words(fact)
        same = next(
            (
                i
                for i, other in enumerate(kept)
                if fact.topic.startswith(STATEMENT_TOPIC)
                and other.topic.startswith(STATEMENT_TOPIC)
                and _near(mine, words[i])
            ),
            None,
        )
        if same is None:
            kept.append(fact)
            words.append(mine)
            continue
        kept[same] = _folded(kept[same], fact)
    return kept


def _folded(first: ExtractedFact, second: ExtractedFact) -> ExtractedFact:
    sure = max((first, second), key=lambda f: (_RANK[f.confidence], len(f.content), f is first))
    sources = list(dict.fromkeys([*first.source_memory_ids, *second.source_memory_ids]))
    return replace(sure, source_memory_ids=sources)
