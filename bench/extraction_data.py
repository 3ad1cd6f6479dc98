"""The extraction benchmark's data, splits, matching and embedding cache.

Data: the MSC persona-summary validation splits (``/work/shared/data/msc``, see its README):
each utterance of a dialogue comes with the facts it reveals about its speaker. The
Chinese set is ours (``bench/data/extraction_zh/``, same shape).

Splits (dialogue level, seeded, fixed):
- ``test``: 120 dialogues of session 4, never used to train or to choose anything;
- ``first_test``: 120 dialogues of session 1 (first meetings: people state what they are
  like), likewise held back;
- ``dev``: 60 dialogues of session 3 (the thresholds are chosen on it);
- ``train``: every other dialogue of sessions 1-3 (statements sampled from them).

Matching (what counts as finding an annotated fact): both texts are reduced to their
*content words*: ``hindsight.core.text.tokenize`` (casefolded, English stopwords and
pronouns dropped, a light stemmer: "books"/"book", "hiking"/"hike"; Chinese cut by jieba,
its stopwords dropped), less a few words that say nothing about the person ("user",
"用户", "am", "really", "yeah" ...). With G the gold fact's content words, P the
extracted fact's, and I = |G ∩ P|:

- content-word match: I >= 1, I/|G| >= 0.5 (half the annotated fact is there) and
  I/|P| >= 1/3 (the extracted fact is not mostly something else);
- strict match: I/|G| = 1 (every content word of the annotated fact) and I/|P| >= 0.5;
- issue match (issue 41's definition, the maintainers' measure): the content-word F1 of
  the two texts, 2I / (|G| + |P|), is >= 0.5, words read by ``issue_words``: lower case,
  "the user's" / "the user" read as "my" / "I", contractions spelled out, stop words
  dropped (pronouns, articles, auxiliaries, "not", "no", "very", "really", "so", "too",
  "also", "just", "like": nothing else), one suffix of -ing / -ed / -es / -s cut from a
  word longer than four letters, then the synonym folds of ``_FOLD`` (in that order, as
  the issue lists them; a fold also reads the stem cutting -es leaves, "loves" -> love).
  Chinese: "用户的" / "用户" read as "我的" / "我", words cut by ``tokenize`` (jieba, its
  stop words dropped), same F1 >= 0.5.

The word lists (``NOT_CONTENT``: the words that say nothing about the person; ``FOLD``: the
synonym folds) are in ``datasets/tables/extraction_data.json``.

Facts are scored per dialogue and speaker: an extracted fact is correct when it matches
any annotated fact of that speaker in that dialogue (precision); an annotated fact is
found when any extracted fact of that speaker matches it (recall).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from datasets.tables import load_tables
from locomo_cache import CachedEmbedder

from hindsight.core.text import tokenize

REPO = Path(__file__).resolve().parents[1]
MSC_DIR = Path("/work/shared/data/msc")
ZH_FILE = REPO / "bench" / "data" / "extraction_zh" / "dialogues.txt"
ZH_DEV_FILE = REPO / "bench" / "data" / "extraction_zh" / "dev_dialogues.txt"
CACHE_DIR = REPO / "bench" / ".cache"
SEED = 19
TEST_DIALOGUES = 120
DEV_DIALOGUES = 60
TABLES = load_tables("extraction_data")

_NOT_CONTENT = frozenset(TABLES["NOT_CONTENT"])


@dataclass
class Utterance:
    speaker: str
    text: str
    facts: list[str]


@dataclass
class Dialogue:
    key: str
    utterances: list[Utterance]
    gold: dict[str, list[str]] = field(default_factory=dict)  # speaker -> unique facts

    def speakers(self) -> list[str]:
        return sorted({u.speaker for u in self.utterances})


def split_facts(persona_text: str) -> list[str]:
    """The single facts of an annotation ("I like reading. I am a nurse." gives two)."""
    parts = persona_text.replace("。", "。\n").replace(". ", ".\n").splitlines()
    return [p.strip() for p in parts if p.strip(" .。")]


def _dialogue(key: str, raw: dict) -> Dialogue:
    utterances = [
        Utterance(turn["id"], turn["text"], split_facts(turn.get("persona_text") or ""))
        for turn in raw["dialog"]
    ]
    gold: dict[str, list[str]] = {}
    for utterance in utterances:
        known = gold.setdefault(utterance.speaker, [])
        for fact in utterance.facts:
            if fact.lower().rstrip(".。") not in {k.lower().rstrip(".。") for k in known}:
                known.append(fact)
    return Dialogue(key, utterances, gold)


def load_session(session: int) -> list[Dialogue]:
    path = MSC_DIR / f"personasummary_session{session}_valid.jsonl"
    with path.open(encoding="utf-8") as lines:
        return [_dialogue(f"s{session}:{n}", json.loads(line)) for n, line in enumerate(lines)]


def load_zh(path: Path = ZH_FILE) -> list[Dialogue]:
    """Our Chinese dialogues: "# n" starts one; "A: text || fact。fact。" is a turn of
    speaker A with the facts it reveals (none without "||"). ``ZH_FILE`` is the test set,
    ``ZH_DEV_FILE`` the dev set (Chinese calibration only)."""
    raws: list[dict] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            raws.append({"dialog": []})
        elif line.strip():
            speaker, _, rest = line.partition(":")
            text, _, facts = rest.partition("||")
            raws[-1]["dialog"].append(
                {"id": speaker.strip(), "text": text.strip(), "persona_text": facts.strip()}
            )
    return [_dialogue(f"zh:{n}", raw) for n, raw in enumerate(raws)]


def _pick(dialogues: Sequence[Dialogue], count: int, salt: int) -> list[Dialogue]:
    chosen = random.Random(SEED + salt).sample(range(len(dialogues)), count)
    return [dialogues[i] for i in sorted(chosen)]


def test_split() -> list[Dialogue]:
    """120 dialogues of session 4: the held-back evaluation set."""
    return _pick(load_session(4), TEST_DIALOGUES, 4)


def first_test_split() -> list[Dialogue]:
    """120 dialogues of session 1, held back like ``test_split``."""
    return _pick(load_session(1), TEST_DIALOGUES, 1)


def dev_split() -> list[Dialogue]:
    return _pick(load_session(3), DEV_DIALOGUES, 3)


def train_split() -> list[Dialogue]:
    held = {d.key for d in dev_split() + first_test_split()}
    return [d for s in (1, 2, 3) for d in load_session(s) if d.key not in held]


# --- matching ------------------------------------------------------------------------------


@lru_cache(maxsize=200_000)
def content_words(text: str) -> frozenset[str]:
    """The content words of a text (see the module docstring)."""
    return frozenset(t for t in tokenize(text) if t not in _NOT_CONTENT)


def matches(extracted: str, gold: str, strict: bool = False) -> bool:
    """Whether an extracted fact states an annotated one (content-word or strict match)."""
    g, p = content_words(gold), content_words(extracted)
    if not g or not p:
        return False
    shared = len(g & p)
    if strict:
        return shared == len(g) and shared / len(p) >= 0.5
    return shared >= 1 and shared / len(g) >= 0.5 and shared / len(p) >= 1 / 3


_PRONOUNS = (
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves he him "
    "his himself she her hers herself it its itself they them their theirs themselves this "
    "that these those"
)
_AUXILIARIES = (
    "am is are was were be been being do does did have has had having will would shall "
    "should can could may might must"
)
_ISSUE_STOP = frozenset(
    f"{_PRONOUNS} a an the {_AUXILIARIES} not no very really so too also just like".split()
)
_FOLD = TABLES["FOLD"]
_CONTRACTION = (
    ("n't", " not"),
    ("'m", " am"),
    ("'re", " are"),
    ("'ve", " have"),
    ("'ll", " will"),
    ("'d", " would"),
    ("'s", ""),
)


@lru_cache(maxsize=200_000)
def issue_words(text: str) -> frozenset[str]:
    """The words issue 41's matching compares (module docstring)."""
    if any("\u4e00" <= ch <= "\u9fff" for ch in text):
        text = text.replace("用户的", "我的").replace("用户", "我")
        return frozenset(tokenize(text))
    text = text.lower().replace("’", "'")
    text = re.sub(r"\bthe user's\b", "my", text)
    text = re.sub(r"\bthe user\b", "i", text)
    for short, long in _CONTRACTION:
        text = text.replace(short, long)
    words = set()
    for word in re.findall(r"[a-z0-9]+", text):
        if word in _ISSUE_STOP:
            continue
        if len(word) > 4:
            for suffix in ("ing", "ed", "es", "s"):
                if word.endswith(suffix):
                    word = word[: -len(suffix)]
                    break
        # a fold also reads the stem that cutting -es leaves ("loves" -> "lov" -> love)
        words.add(_FOLD.get(word) or _FOLD.get(word + "e", word))
    return frozenset(words)


def issue_matches(extracted: str, gold: str) -> bool:
    """Issue 41's match: content-word F1 >= 0.5 (module docstring)."""
    g, p = issue_words(gold), issue_words(extracted)
    if not g or not p:
        return False
    return 2 * len(g & p) / (len(g) + len(p)) >= 0.5


def match(extracted: str, gold: str, kind: str) -> bool:
    """``kind``: "content", "strict" or "issue"."""
    if kind == "issue":
        return issue_matches(extracted, gold)
    return matches(extracted, gold, strict=kind == "strict")


@dataclass
class Score:
    extracted: int = 0
    correct: int = 0
    gold: int = 0
    found: int = 0

    def add(
        self, extracted: Sequence[str], gold: Sequence[str], strict: bool | str = False
    ) -> None:
        """Count one speaker's facts; ``strict``: True, False (content) or a ``match`` kind."""
        kind = strict if isinstance(strict, str) else ("strict" if strict else "content")
        self.extracted += len(extracted)
        self.gold += len(gold)
        self.correct += sum(any(match(e, g, kind) for g in gold) for e in extracted)
        self.found += sum(any(match(e, g, kind) for e in extracted) for g in gold)

    def as_dict(self) -> dict[str, float]:
        precision = self.correct / self.extracted if self.extracted else 0.0
        recall = self.found / self.gold if self.gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {
            "recall": round(recall, 3),
            "precision": round(precision, 3),
            "f1": round(f1, 3),
            "extracted": self.extracted,
            "gold": self.gold,
        }


# --- embeddings, cached between runs ---------------------------------------------------------


def real_embedder() -> CachedEmbedder:
    """e5 behind a vector cache (``bench/.cache/extraction_vectors.sqlite``): a text is
    embedded once across every run of the training and benchmark scripts."""
    from hindsight.adapters.embedders.factory import build_embedder

    return CachedEmbedder(build_embedder("e5"), CACHE_DIR / "extraction_vectors.sqlite")


def speaker_turns(dialogue: Dialogue) -> Iterator[tuple[str, list[Utterance]]]:
    for speaker in dialogue.speakers():
        yield speaker, [u for u in dialogue.utterances if u.speaker == speaker]
