"""Offline reflector: explicit statements found with patterns, English and Chinese, no LLM.

It extracts only what the user said in so many words: allergies, dietary constraints,
likes and dislikes, names, pets and family, habits, plans and to-dos, and mood
patterns that recur across episodes. Anything said "just for today" ("I don't feel
like Sichuan food today", "今天不想吃川菜") never becomes a lasting preference.
Agent turns are skipped. The same fact found in several episodes becomes one fact
with every source id and confidence raised one step.

Topics are normalised keys of what a fact is about ("allergy:peanut",
"preference:food:sichuan", "habit:activity:running", "plan:beijing-business"):
"I love hiking" and "I no longer like hiking" share one, so the newer supersedes
the older; "allergic to peanuts" and "allergic to shellfish" do not.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hindsight.core.models import (
    Confidence,
    EpisodicMemory,
    ExtractedFact,
    FactCategory,
    ReflectionOutput,
    SemanticMemory,
    SessionSummary,
    TimeRange,
)
from hindsight.core.temporal import resolve_time_expressions

logger = logging.getLogger(__name__)

LABEL = "rule-based (offline, no LLM)"

_CJK = re.compile(r"[\u3400-\u9fff]")
_RANK = {Confidence.LOW: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}


def _is_zh(text: str) -> bool:
    return bool(_CJK.search(text))


# --- speakers ------------------------------------------------------

_AGENT_WORDS = {"assistant", "agent", "ai", "bot", "chatbot", "system", "助手", "机器人", "智能体"}
_USER_WORDS = {"user", "human", "me", "customer", "client", "用户", "我", "客户", "本人"}
_NOT_NAMES = {
    "note",
    "notes",
    "memo",
    "reminder",
    "summary",
    "todo",
    "fyi",
    "ps",
    "re",
    "update",
    "question",
    "answer",
    "q",
    "a",
    "备注",
    "提醒",
    "总结",
    "问题",
    "回答",
}
_SPEAKER_PREFIX = re.compile(r"^\s*(?P<name>[^:：\n]{1,40}?)\s*[:：]\s*(?P<text>\S.*)$")


def _is_agent(speaker: str | None) -> bool:
    if not speaker:
        return False
    lowered = speaker.strip().lower()
    tokens = set(re.split(r"[^a-z0-9\u3400-\u9fff]+", lowered))
    if tokens & _AGENT_WORDS or lowered.endswith("bot"):
        return True
    return any(word in lowered for word in ("助手", "机器人", "智能体"))


def _is_speaker_label(name: str) -> bool:
    """Whether "X: ..." names who speaks rather than being, say, "10:30" or "I'm allergic to"."""
    name = name.strip()
    if _is_zh(name):
        return len(name) <= 6 and "我" not in name and not re.search(r"[对过喜欢要是]", name)
    words = name.split()
    if not words or len(words) > 3 or not re.fullmatch(r"[A-Za-z][\w .'-]*", name):
        return False
    if name.lower() in _AGENT_WORDS | _USER_WORDS or _is_agent(name):
        return True
    return all(w[:1].isupper() for w in words) and words[0] not in {"I", "I'm", "My"}


@dataclass(frozen=True)
class _Turn:
    memory_id: str
    occurred_at: datetime
    speaker: str | None
    text: str
    emotion: str | None


def _turns(episode: EpisodicMemory) -> list[_Turn]:
    """Lines of an episode, each with its speaker ("Name: text" sets the speaker)."""
    speaker = episode.speaker
    turns: list[_Turn] = []
    for line in episode.content.splitlines() or [episode.content]:
        if not line.strip():
            continue
        text = line.strip()
        match = _SPEAKER_PREFIX.match(line)
        if match and _is_speaker_label(match.group("name")):
            speaker = match.group("name").strip()
            text = match.group("text").strip()
        turns.append(_Turn(episode.memory_id, episode.occurred_at, speaker, text, episode.emotion))
    return turns


@dataclass(frozen=True)
class _Subject:
    """Who a first-person statement is about, in both languages."""

    en: str = "The user"
    zh: str = "用户"
    topic_prefix: str = ""

    @classmethod
    def of(cls, speaker: str | None, user_id: str) -> _Subject:
        if not speaker:
            return cls()
        name = speaker.strip()
        lowered = name.lower()
        if lowered in _USER_WORDS or lowered == user_id.lower() or lowered in _NOT_NAMES:
            return cls()
        slug = _slug_words(re.findall(r"[a-z0-9]+|[\u3400-\u9fff]+", lowered))
        return cls(en=name, zh=name, topic_prefix=f"person:{slug}:" if slug else "")

    def possessive(self) -> str:
        return f"{self.en}'" if self.en.endswith("s") else f"{self.en}'s"


# --- text helpers ------------------------------------------------------

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


def _expand(text: str) -> str:
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


def _clauses(text: str) -> list[str]:
    parts: list[str] = []
    for sentence in re.split(r"(?<=[.!?。！？;；])\s*|\n", text):
        sentence = sentence.strip()
        if not sentence:
            continue
        splitter = _CLAUSE_SPLIT_ZH if _is_zh(sentence) else _CLAUSE_SPLIT_EN
        for part in splitter.split(_expand(sentence)):
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


def _hedged(clause: str) -> bool:
    return bool(_HEDGE_ZH.search(clause) if _is_zh(clause) else _HEDGE_EN.search(clause))


def _temporary(clause: str) -> bool:
    pattern = _TEMPORARY_ZH if _is_zh(clause) else _TEMPORARY_EN
    return bool(pattern.search(clause))


def _question(clause: str) -> bool:
    pattern = _QUESTION_ZH if _is_zh(clause) else _QUESTION_EN
    return bool(pattern.search(clause))


_PRONOUNS_EN = [
    (r"\bmyself\b", "themselves"),
    (r"\bmy\b", "their"),
    (r"\bmine\b", "theirs"),
    (r"\bme\b", "them"),
    (r"\bI am\b", "they are"),
    (r"\bI have\b", "they have"),
    (r"\bI\b", "they"),
    (r"\bour\b", "their"),
    (r"\bus\b", "them"),
]
_PRONOUN_PATTERNS = [(re.compile(p), r) for p, r in _PRONOUNS_EN]


def _third_person_en(text: str) -> str:
    for pattern, replacement in _PRONOUN_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _third_person_zh(text: str) -> str:
    return text.replace("我们", "他们").replace("我的", "自己的").replace("我", "自己")


_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "are": "is", "be": "is"}
_MODALS = {
    "can",
    "cannot",
    "will",
    "would",
    "should",
    "must",
    "might",
    "may",
    "could",
    "never",
    "also",
    "still",
    "just",
    "really",
    "only",
    "rarely",
    "sometimes",
    "often",
    "always",
    "usually",
    "not",
}


def _conjugate(phrase: str) -> str:
    """Third-person singular of the first verb: "run in the park" -> "runs in the park"."""
    words = phrase.split(" ", 1)
    verb = words[0]
    rest = f" {words[1]}" if len(words) > 1 else ""
    lowered = verb.lower()
    if lowered in _MODALS:
        return verb + (
            f" {_conjugate(words[1])}"
            if len(words) > 1
            and lowered
            in {
                "never",
                "also",
                "still",
                "just",
                "really",
                "only",
                "rarely",
                "sometimes",
                "often",
                "always",
                "usually",
            }
            else rest
        )
    if lowered in _IRREGULAR:
        return _IRREGULAR[lowered] + rest
    if not re.fullmatch(r"[a-z]+", lowered):
        return phrase
    if re.search(r"(?:s|sh|ch|x|z|o)$", lowered):
        return f"{verb}es{rest}"
    if re.search(r"[^aeiou]y$", lowered):
        return f"{verb[:-1]}ies{rest}"
    return f"{verb}s{rest}"


_STOP_EN = {
    "a",
    "an",
    "the",
    "to",
    "my",
    "some",
    "any",
    "very",
    "much",
    "really",
    "so",
    "more",
    "most",
    "lot",
    "lots",
    "of",
    "being",
    "doing",
    "go",
    "going",
    "get",
    "getting",
    "have",
    "having",
    "this",
    "that",
    "these",
    "those",
    "it",
    "them",
    "his",
    "her",
    "their",
    "our",
    "your",
    "all",
    "kinds",
    "kind",
    "types",
    "type",
    "sort",
    "good",
    "great",
    "bit",
    "little",
    "be",
    "and",
    "or",
    "i",
    "me",
    "am",
    "is",
    "are",
    "too",
    "also",
    "just",
    "off",
    "up",
    "out",
}
_BREAK_EN = {
    "in",
    "on",
    "at",
    "with",
    "for",
    "from",
    "during",
    "when",
    "over",
    "than",
    "because",
    "since",
    "while",
    "if",
    "as",
    "by",
    "after",
    "before",
    "instead",
    "rather",
    "but",
    "every",
    "each",
    "about",
    "and",
    "or",
    "who",
    "which",
    "that",
    "so",
}
_STOP_ZH = {
    "吃",
    "喝",
    "去",
    "看",
    "玩",
    "听",
    "做",
    "的",
    "了",
    "很",
    "都",
    "也",
    "还",
    "就",
    "要",
    "会",
    "在",
    "和",
    "跟",
    "一下",
    "一些",
    "东西",
    "那种",
    "这种",
    "各种",
    "早上",
    "晚上",
    "中午",
    "下午",
    "上午",
    "自己",
    "我",
    "一个",
    "一次",
    "起来",
    "一点",
}

# Words that should give one topic whatever the language or phrasing.
_GLOSSARY: dict[str, str] = {
    "sichuan": "food:sichuan",
    "szechuan": "food:sichuan",
    "川菜": "food:sichuan",
    "spicy": "food:spicy",
    "辣": "food:spicy",
    "cilantro": "food:cilantro",
    "coriander": "food:cilantro",
    "香菜": "food:cilantro",
    "hot pot": "food:hotpot",
    "hotpot": "food:hotpot",
    "火锅": "food:hotpot",
    "sushi": "food:sushi",
    "寿司": "food:sushi",
    "coffee": "drink:coffee",
    "咖啡": "drink:coffee",
    "tea": "drink:tea",
    "茶": "drink:tea",
    "alcohol": "drink:alcohol",
    "酒": "drink:alcohol",
    "beer": "drink:beer",
    "啤酒": "drink:beer",
    "peanut": "peanut",
    "花生": "peanut",
    "shellfish": "shellfish",
    "贝类": "shellfish",
    "seafood": "seafood",
    "海鲜": "seafood",
    "shrimp": "shrimp",
    "虾": "shrimp",
    "milk": "milk",
    "牛奶": "milk",
    "dairy": "dairy",
    "乳制品": "dairy",
    "egg": "egg",
    "鸡蛋": "egg",
    "penicillin": "penicillin",
    "青霉素": "penicillin",
    "pollen": "pollen",
    "花粉": "pollen",
    "mango": "mango",
    "芒果": "mango",
    "gluten": "gluten",
    "麸质": "gluten",
    "lactose": "lactose",
    "乳糖": "lactose",
    "nut": "nut",
    "坚果": "nut",
    "soy": "soy",
    "大豆": "soy",
    "wheat": "wheat",
    "小麦": "wheat",
    "cat": "cat",
    "猫": "cat",
    "dog": "dog",
    "狗": "dog",
    "dust mite": "dust-mite",
    "尘螨": "dust-mite",
    "meat": "meat",
    "肉": "meat",
    "pork": "pork",
    "猪肉": "pork",
    "beef": "beef",
    "牛肉": "beef",
    "fish": "fish",
    "鱼": "fish",
    "hiking": "activity:hiking",
    "hike": "activity:hiking",
    "徒步": "activity:hiking",
    "爬山": "activity:hiking",
    "running": "activity:running",
    "jogging": "activity:running",
    "run": "activity:running",
    "jog": "activity:running",
    "跑步": "activity:running",
    "慢跑": "activity:running",
    "swimming": "activity:swimming",
    "swim": "activity:swimming",
    "游泳": "activity:swimming",
    "yoga": "activity:yoga",
    "瑜伽": "activity:yoga",
    "reading": "activity:reading",
    "阅读": "activity:reading",
    "看书": "activity:reading",
    "读书": "activity:reading",
    "cooking": "activity:cooking",
    "cook": "activity:cooking",
    "做饭": "activity:cooking",
    "烹饪": "activity:cooking",
}
_GLOSSARY_EN = sorted((k for k in _GLOSSARY if not _is_zh(k)), key=len, reverse=True)
_GLOSSARY_ZH = sorted((k for k in _GLOSSARY if _is_zh(k)), key=len, reverse=True)


_IE_PLURALS = {
    "movies",
    "cookies",
    "pies",
    "ties",
    "lies",
    "calories",
    "selfies",
    "zombies",
    "brownies",
    "smoothies",
    "rookies",
    "hoodies",
}


def _singular(word: str) -> str:
    if word in _IE_PLURALS:
        return word[:-1]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("oes", "ches", "shes", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _slug_words(words: Sequence[str]) -> str:
    return "-".join(w for w in words if w)[:60]


_SKIP_FLAGS_ZH = ("m", "t", "r", "p", "u", "d", "c", "y", "x", "q", "f")


def _posseg(text: str, hmm: bool = True) -> list[tuple[str, str]]:
    """(word, part of speech) pairs from jieba, imported on first use and kept quiet."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return [(t.word, t.flag) for t in jieba.posseg.lcut(text, HMM=hmm)]


def _jieba_words(text: str) -> list[str]:
    """Content words of Chinese text (numbers, times, pronouns and particles dropped)."""
    return [
        word for word, flag in _posseg(text) if word.strip() and not flag.startswith(_SKIP_FLAGS_ZH)
    ]


def _topic_key(phrase: str, use_glossary: bool = True) -> str:
    """Normalised key for a phrase: glossary term, else its first content words."""
    lowered = phrase.lower().strip()
    if use_glossary:
        hits: list[tuple[int, int, str]] = []  # (position, -length, key): earliest, longest
        for term in _GLOSSARY_ZH:
            position = lowered.find(term)
            if position >= 0:
                hits.append((position, -len(term), _GLOSSARY[term]))
        for term in _GLOSSARY_EN:
            match = re.search(rf"\b{re.escape(term)}(?:s|es)?\b", lowered)
            if match:
                hits.append((match.start(), -len(term), _GLOSSARY[term]))
        if hits:
            return min(hits)[2]
    if _is_zh(lowered):
        zh_words = [
            w for w in _jieba_words(lowered) if w not in _STOP_ZH and not re.fullmatch(r"[\W_]+", w)
        ]
        return _slug_words(zh_words[:2])
    words: list[str] = []
    for token in re.findall(r"[a-z0-9]+", lowered):
        if token in _BREAK_EN and words:
            break
        if token in _STOP_EN or token in _BREAK_EN:
            continue
        words.append(_singular(token))
        if len(words) == 2:
            break
    return _slug_words(words)


def _without_time(text: str, reference: datetime) -> str:
    for found in resolve_time_expressions(text, reference):
        text = text.replace(found.expression, " ")
    return re.sub(r"\s+", " ", text).strip()


def _describe_ranges(ranges: Sequence[TimeRange], zh: bool) -> str:
    parts = []
    for time_range in ranges:
        first = time_range.start.date().isoformat()
        last = (time_range.end - timedelta(days=1)).date().isoformat()
        dates = first if first == last else (f"{first}至{last}" if zh else f"{first} to {last}")
        parts.append(
            f"{time_range.expression}：{dates}" if zh else f"{time_range.expression}: {dates}"
        )
    if not parts:
        return ""
    return f"（{'；'.join(parts)}）" if zh else f" ({'; '.join(parts)})"


_PRONOUN_OBJECTS = {
    "it",
    "that",
    "this",
    "them",
    "you",
    "him",
    "her",
    "those",
    "these",
    "so",
    "too",
    "one",
    "both",
    "either",
    "neither",
    "everything",
    "anything",
    "nothing",
    "something",
    "what",
    "which",
    "who",
    "yours",
    "mine",
    "你",
    "他",
    "她",
    "它",
    "你们",
    "他们",
    "她们",
    "这个",
    "那个",
    "这",
    "那",
    "这样",
    "那样",
    "什么",
    "一切",
    "所有",
}
_TRAILING_EN = re.compile(
    r"\s+(?:because|since|so|when|if|but|although|though|as|which|who|whenever|unless|"
    r"very much|a lot|so much|too much|a little|as well|too|anymore|any more|at all)\b.*$",
    re.IGNORECASE,
)


def _clean_object(obj: str) -> str:
    obj = _TRAILING_EN.sub("", obj.strip())
    obj = re.sub(r"[\s,.;:!?，。！？；：、\"'“”]+$", "", obj)
    obj = re.sub(r"^(?:the|a|an)\s+", "", obj, flags=re.IGNORECASE)
    obj = re.sub(r"^[的了]+", "", obj).strip()
    if not obj or obj.lower() in _PRONOUN_OBJECTS or len(obj) > 80:
        return ""
    return obj


def _split_items(obj: str) -> list[str]:
    obj = _TRAILING_EN.sub("", obj)
    parts = re.split(r"\s*(?:,|\band\b|\bor\b|&|/|、|和|跟|及|与|以及|还有)\s*", obj)
    return [c for c in (_clean_object(p) for p in parts) if c]


# --- candidates ------------------------------------------------------


@dataclass
class _Candidate:
    content: str
    category: FactCategory
    confidence: Confidence
    topic: str
    stance: str
    memory_id: str
    occurred_at: datetime
    repeatable: bool = True


@dataclass
class _Context:
    clause: str
    subject: _Subject
    memory_id: str
    occurred_at: datetime
    hedged: bool = False
    temporary: bool = False
    question: bool = False
    zh: bool = False

    def make(
        self, content: str, category: FactCategory, confidence: Confidence, topic: str, stance: str
    ) -> _Candidate:
        if self.hedged:
            confidence = Confidence.LOW
            content = (
                content.rstrip("。") + "（用户语气不确定）。"
                if self.zh
                else content.rstrip(".") + " (stated with uncertainty)."
            )
        return _Candidate(
            content=content[:1000],
            category=category,
            confidence=confidence,
            topic=f"{self.subject.topic_prefix}{topic}",
            stance=stance,
            memory_id=self.memory_id,
            occurred_at=self.occurred_at,
        )


_Extractor = Callable[[_Context], list[_Candidate]]
_I = r"(?P<subj>I|the user|user)"
_ADVERBS = (
    r"(?:(?:really|absolutely|totally|truly|just|also|still|do|genuinely|very|so|quite|"
    r"kind of|sort of|actually|definitely|honestly|simply)\s+)*"
)


def _en_subject(ctx: _Context) -> str:
    return ctx.subject.en


# allergies ------------------------------------------------------

_ALLERGY_EN = [
    re.compile(
        rf"\b{_I}\s+(?:am|is)\s+(?:(?:also|very|severely|highly|mildly|deathly|extremely|"
        r"slightly|really|seriously|quite)\s+)*allergic\s+to\s+(?P<obj>[^.;!?]+)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b{_I}\s+(?:have|has|have got)\s+(?:an?\s+)?(?:(?:severe|mild|serious|bad|"
        r"strong|life-threatening)\s+)?allerg(?:y|ies)\s+to\s+(?P<obj>[^.;!?]+)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b{_I}\s+(?:have|has|have got)\s+(?:an?\s+)?(?:(?:severe|mild|serious|bad|"
        r"strong|life-threatening)\s+)?(?P<obj>[a-z][a-z -]{1,30}?)\s+allerg(?:y|ies)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?P<subj>my)\s+(?P<obj>[a-z][a-z -]{1,30}?)\s+allergy\b", re.IGNORECASE),
]
_ALLERGY_ZH = [
    re.compile(
        r"(?P<subj>我|用户|本人)(?:[^，。！？对]{0,4})对(?:于)?(?P<obj>[^，。！？；]{1,15}?)"
        r"(?:严重|有点|非常|特别|比较|很|会|都)*过敏"
    ),
    re.compile(r"(?P<subj>我|用户|本人)(?:有)?(?P<obj>[\u3400-\u9fffA-Za-z]{1,8}?)过敏"),
]
_ZH_ALLERGY_NOT_OBJECT = re.compile(
    r"了|今天|昨天|好像|可能|也许|有点|又|都|总是|经常|容易|不|没|很|对"
)


def _allergies(ctx: _Context) -> list[_Candidate]:
    found: list[_Candidate] = []
    if ctx.zh:
        for pattern in _ALLERGY_ZH:
            for match in pattern.finditer(ctx.clause):
                tail = ctx.clause[match.end() : match.end() + 1]
                if tail == "吗" or re.search(r"(?:不|没有?|不会)$", match.group("obj")):
                    continue
                obj = re.sub(r"^有", "", match.group("obj"))
                for item in _split_items(obj):
                    if _ZH_ALLERGY_NOT_OBJECT.search(item):
                        continue
                    found.append(
                        ctx.make(
                            f"{ctx.subject.zh}对{item}过敏。",
                            FactCategory.CONSTRAINT,
                            Confidence.HIGH,
                            f"allergy:{_topic_key(item)}",
                            "allergic",
                        )
                    )
            if found:
                return found
        return found
    if ctx.question:
        return found
    for pattern in _ALLERGY_EN:
        for match in pattern.finditer(ctx.clause):
            for item in _split_items(match.group("obj")):
                found.append(
                    ctx.make(
                        f"{_en_subject(ctx)} is allergic to {item}.",
                        FactCategory.CONSTRAINT,
                        Confidence.HIGH,
                        f"allergy:{_topic_key(item)}",
                        "allergic",
                    )
                )
        if found:
            return found
    return found


# dietary constraints ------------------------------------------------------

_DIET_EN_SIMPLE = re.compile(
    rf"\b{_I}\s+(?P<neg>do not|does not|never|cannot|can not|should not|must not|will not)\s+"
    r"(?P<verb>eat|drink)\s+(?P<obj>[^.;!?]+)",
    re.IGNORECASE,
)
_DIET_IDENTITY_EN = re.compile(
    rf"\b{_I}\s+(?:am|is)\s+(?:a\s+)?(?:(?:strict|full|total)\s+)?(?P<diet>vegetarian|vegan|"
    r"pescatarian|lactose[- ]intolerant|gluten[- ]free|diabetic|teetotal|teetotaler|celiac|"
    r"coeliac|on a (?:keto|low[- ]carb|low[- ]sugar|low[- ]salt) diet)\b",
    re.IGNORECASE,
)
_DIET_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?:从来|从|一直|平时|基本|也|都|完全)*(?P<neg>不能|不可以|不敢|没法|不|忌|戒)"
    r"(?P<verb>吃|喝|碰)(?P<obj>[^，。！？；]{1,15})"
)
_DIET_IDENTITY_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?:是|一直|平时)?(?P<diet>吃素|素食主义者|素食者|吃全素|纯素食者|乳糖不耐受?|"
    r"有糖尿病|在减肥|戒酒了?)"
)
_NEGATION_EN = {
    "do not": "does not",
    "does not": "does not",
    "never": "never",
    "cannot": "cannot",
    "can not": "cannot",
    "should not": "should not",
    "must not": "must not",
    "will not": "will not",
}


def _diet(ctx: _Context) -> list[_Candidate]:
    found: list[_Candidate] = []
    if ctx.temporary or ctx.question:
        return found
    if ctx.zh:
        for match in _DIET_IDENTITY_ZH.finditer(ctx.clause):
            diet = match.group("diet")
            key = {
                "吃素": "vegetarian",
                "素食主义者": "vegetarian",
                "素食者": "vegetarian",
                "吃全素": "vegan",
                "纯素食者": "vegan",
            }.get(diet, _topic_key(diet, False))
            found.append(
                ctx.make(
                    f"{ctx.subject.zh}{'是' if '者' in diet else ''}{diet}。",
                    FactCategory.CONSTRAINT,
                    Confidence.HIGH,
                    f"diet:{key}",
                    "diet",
                )
            )
        for match in _DIET_ZH.finditer(ctx.clause):
            obj = _clean_object(match.group("obj"))
            if not obj or re.match(r"^(?:了|过|着|完|饱|下|得)", obj):
                continue
            neg = match.group("neg")
            verb = match.group("verb")
            found.append(
                ctx.make(
                    f"{ctx.subject.zh}{neg}{verb}{obj}。",
                    FactCategory.CONSTRAINT,
                    Confidence.HIGH,
                    f"diet:{_topic_key(obj)}",
                    "avoid",
                )
            )
        return found
    for match in _DIET_IDENTITY_EN.finditer(ctx.clause):
        diet = match.group("diet").lower()
        found.append(
            ctx.make(
                f"{_en_subject(ctx)} is {diet}.",
                FactCategory.CONSTRAINT,
                Confidence.HIGH,
                f"diet:{_slug_words(re.findall(r'[a-z]+', diet))}",
                "diet",
            )
        )
    for match in _DIET_EN_SIMPLE.finditer(ctx.clause):
        neg = _NEGATION_EN[match.group("neg").lower()]
        verb = match.group("verb").lower()
        if neg == "never":
            verb = _conjugate(verb)
        for item in _split_items(match.group("obj")):
            found.append(
                ctx.make(
                    f"{_en_subject(ctx)} {neg} {verb} {item}.",
                    FactCategory.CONSTRAINT,
                    Confidence.HIGH,
                    f"diet:{_topic_key(item)}",
                    "avoid",
                )
            )
    return found


# preferences ------------------------------------------------------

_LIKE_EN = re.compile(
    rf"\b{_I}\s+{_ADVERBS}(?P<verb>love|loves|like|likes|enjoy|enjoys|prefer|prefers|adore|"
    r"adores|am a (?:big |huge )?fan of|is a (?:big |huge )?fan of|am into|is into|"
    r"am fond of|is fond of)\s+(?P<obj>[^.;!?]+)",
    re.IGNORECASE,
)
_DISLIKE_EN = re.compile(
    rf"\b{_I}\s+{_ADVERBS}(?P<verb>hate|hates|dislike|dislikes|detest|detests|loathe|loathes|"
    r"cannot stand|can not stand|do not like|does not like|do not enjoy|does not enjoy|"
    r"do not love|does not love|no longer like|no longer likes|no longer enjoy|"
    r"no longer enjoys|do not care for|does not care for|am not a fan of|is not a fan of|"
    r"am not into|is not into|am no longer into|never liked|have never liked)\s+"
    r"(?P<obj>[^.;!?]+)",
    re.IGNORECASE,
)
_FAVORITE_EN = re.compile(
    r"\b(?P<subj>my|the user's)\s+(?:all[- ]time\s+)?favou?rite\s+(?P<what>[a-z]+(?: [a-z]+)?)"
    r"\s+is\s+(?P<obj>[^.;!?]+)",
    re.IGNORECASE,
)
_LIKE_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?:也|还|一直|真的|很|非常|特别|超|超级|最|挺|比较|蛮|还是|更|都|就是|可能|"
    r"也许|好像|大概|应该|或许|挺)*(?P<verb>喜欢|热爱|喜爱|偏爱|钟爱|偏好|爱吃|爱喝|爱看|爱玩|爱)(?P<obj>[^，。！？；]+)"
)
_DISLIKE_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?:也|还|真的|很|非常|特别|超|超级|最|挺|比较|一直|都|就是|可能|也许|好像|"
    r"大概|应该|或许)*"
    r"(?P<verb>不喜欢|不太喜欢|不怎么喜欢|一点都不喜欢|一点也不喜欢|不再喜欢|再也不喜欢|已经不喜欢|"
    r"不爱吃|不爱喝|不爱|讨厌|厌恶|受不了|反感|烦)(?P<obj>[^，。！？；]+)"
)
_FAVORITE_ZH = re.compile(
    r"(?P<subj>我|用户)最?喜欢的(?P<what>[^，。是]{1,8})是(?P<obj>[^，。！？；]+)"
)
_LIKE_VERBS_EN = {
    "love": "loves",
    "like": "likes",
    "enjoy": "enjoys",
    "prefer": "prefers",
    "adore": "adores",
}
_DISLIKE_VERBS_EN = {
    "hate": "hates",
    "dislike": "dislikes",
    "detest": "detests",
    "loathe": "loathes",
    "cannot stand": "cannot stand",
    "can not stand": "cannot stand",
    "do not like": "does not like",
    "do not enjoy": "does not enjoy",
    "do not love": "does not love",
    "no longer like": "no longer likes",
    "no longer enjoy": "no longer enjoys",
    "do not care for": "does not care for",
    "have never liked": "has never liked",
}


def _en_verb(verb: str, table: dict[str, str]) -> str:
    lowered = " ".join(verb.lower().split())
    if lowered in table:
        return table[lowered]
    if lowered.startswith("am "):
        return "is " + lowered[3:]
    return lowered


def _preferences(ctx: _Context) -> list[_Candidate]:
    found: list[_Candidate] = []
    if ctx.temporary or ctx.question:
        return found  # "I don't feel like Sichuan food today" is no lasting preference
    if ctx.zh:
        for match in _FAVORITE_ZH.finditer(ctx.clause):
            obj = _clean_object(match.group("obj"))
            what = match.group("what")
            if obj:
                found.append(
                    ctx.make(
                        f"{ctx.subject.zh}最喜欢的{what}是{obj}。",
                        FactCategory.PREFERENCE,
                        Confidence.MEDIUM,
                        f"preference:favorite:{_topic_key(what, False)}",
                        "favorite",
                    )
                )
        if found:
            return found
        for pattern, stance in ((_DISLIKE_ZH, "dislike"), (_LIKE_ZH, "like")):
            for match in pattern.finditer(ctx.clause):
                obj = _clean_object(match.group("obj"))
                if not obj or obj.startswith(("的", "上", "过")):
                    continue
                verb = match.group("verb")
                found.append(
                    ctx.make(
                        f"{ctx.subject.zh}{verb}{obj}。",
                        FactCategory.PREFERENCE,
                        Confidence.MEDIUM,
                        f"preference:{_topic_key(obj)}",
                        stance,
                    )
                )
            if found:
                return found
        return found
    for match in _FAVORITE_EN.finditer(ctx.clause):
        obj = _clean_object(match.group("obj"))
        what = match.group("what").lower()
        if obj:
            owner = (
                ctx.subject.possessive() if match.group("subj").lower() == "my" else "The user's"
            )
            found.append(
                ctx.make(
                    f"{owner} favorite {what} is {obj}.",
                    FactCategory.PREFERENCE,
                    Confidence.MEDIUM,
                    f"preference:favorite:{_topic_key(what, False)}",
                    "favorite",
                )
            )
    if found:
        return found
    for pattern, stance, table in (
        (_DISLIKE_EN, "dislike", _DISLIKE_VERBS_EN),
        (_LIKE_EN, "like", _LIKE_VERBS_EN),
    ):
        for match in pattern.finditer(ctx.clause):
            raw = match.group("obj")
            if stance == "like" and re.match(r"(?:it|this|that)\b", raw.strip(), re.IGNORECASE):
                continue
            obj = _clean_object(raw)
            if not obj:
                continue
            third = match.group("subj").lower() != "i"
            verb = match.group("verb") if third else _en_verb(match.group("verb"), table)
            found.append(
                ctx.make(
                    f"{_en_subject(ctx)} {verb.lower()} {_third_person_en(obj)}.",
                    FactCategory.PREFERENCE,
                    Confidence.MEDIUM,
                    f"preference:{_topic_key(obj)}",
                    stance,
                )
            )
        if found:
            return found
    return found


# names ------------------------------------------------------

_NAME_WORD = r"[A-Z][a-zA-Z'-]+"
_MY_NAME_EN = re.compile(
    rf"\b(?i:my name is|my name's|the user's name is)\s+(?P<name>[A-Za-z][a-zA-Z'-]+"
    rf"(?:\s+{_NAME_WORD}){{0,2}})"
)
_CALL_ME_EN = re.compile(
    rf"\b(?i:call me|you can call me|please call me)\s+(?P<name>{_NAME_WORD})\b"
)
_I_AM_NAME_EN = re.compile(
    rf"^(?:(?i:hi|hello|hey|hiya|greetings|good (?:morning|afternoon|evening))[,!.]?\s+)?"
    rf"(?:I am|I'm)\s+(?P<name>{_NAME_WORD}(?:\s+{_NAME_WORD})?)\s*(?:[,.!]|$|\s+(?i:and|from|by "
    r"the way|here|btw))"
)
_NOT_A_NAME = {
    "fine",
    "sorry",
    "good",
    "great",
    "happy",
    "back",
    "here",
    "ready",
    "hungry",
    "tired",
    "busy",
    "okay",
    "ok",
    "done",
    "sure",
    "not",
    "so",
    "very",
    "also",
    "just",
    "going",
    "still",
    "glad",
    "home",
    "late",
    "new",
    "sick",
    "well",
    "allergic",
    "vegan",
    "vegetarian",
    "english",
    "chinese",
    "american",
    "british",
    "french",
    "german",
    "japanese",
    "korean",
    "indian",
    "canadian",
    "australian",
    "italian",
    "spanish",
    "russian",
    "mexican",
    "brazilian",
    "dutch",
    "swiss",
    "a",
    "an",
    "the",
    "in",
    "on",
    "at",
    "is",
    "was",
    "it",
    "me",
    "later",
    "tomorrow",
    "today",
    "now",
    "when",
    "if",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mr",
    "mrs",
    "ms",
    "dr",
    "definitely",
    "confused",
    "excited",
    "bored",
    "curious",
    "interested",
    "looking",
    "trying",
    "thinking",
    "working",
    "feeling",
    "afraid",
    "worried",
    "stressed",
    "anxious",
    "lost",
    "alone",
    "free",
    "available",
    "married",
    "single",
    "pregnant",
    "retired",
    "unemployed",
    "online",
    "out",
    "off",
    "there",
    "about",
    "always",
}
_MY_NAME_ZH = re.compile(
    r"(?:我叫|我的名字是|我的名字叫|我名字叫|我名叫|本人叫|本人姓名)(?P<tail>[^，。！？；]+)"
)
_CALL_ME_ZH = re.compile(r"(?:你可以|请|以后|就)?叫我(?P<tail>[^，。！？；]+)")
_SURNAMES = set(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢"
    "姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施"
    "文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷"
    "盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷"
    "晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝"
)
_COMPOUND_SURNAMES = (
    "欧阳",
    "司马",
    "诸葛",
    "上官",
    "东方",
    "皇甫",
    "令狐",
    "慕容",
    "尉迟",
    "长孙",
)
_NOT_A_NAME_ZH = {
    "外卖",
    "快递",
    "出租车",
    "滴滴",
    "救护车",
    "服务员",
    "醒",
    "起床",
    "一下",
    "什么",
}


def _zh_name(tail: str) -> str:
    """The name at the start of ``tail`` if it clearly is one, else ""."""
    tail = tail.strip()
    latin = re.match(r"[A-Z][a-zA-Z'-]+(?:\s+[A-Z][a-zA-Z'-]+)?", tail)
    if latin:
        return latin.group(0)
    if not _is_zh(tail[:1]) or tail[:1] in "了过着你他她它什":
        return ""
    tokens = _posseg(tail[:8])
    if not tokens:
        return ""
    word, flag = tokens[0]
    if word in _NOT_A_NAME_ZH:
        return ""
    if word.startswith(_COMPOUND_SURNAMES) or word[:2] in _COMPOUND_SURNAMES:
        name = word + (tokens[1][0] if len(word) == 2 and len(tokens) > 1 else "")
        return name[:4]
    if (
        len(word) == 1
        and word in _SURNAMES
        and len(tokens) > 1
        and len(tokens[1][0]) <= 2
        and _is_zh(tokens[1][0])
    ):
        return word + tokens[1][0]
    if 2 <= len(word) <= 4 and (
        flag.startswith("nr") or word[0] in _SURNAMES or word[0] in "小老阿"
    ):
        return word
    return ""


def _names(ctx: _Context) -> list[_Candidate]:
    found: list[_Candidate] = []
    if ctx.question:
        return found
    if ctx.zh:
        for match in _MY_NAME_ZH.finditer(ctx.clause):
            name = _zh_name(match.group("tail"))
            if name:
                found.append(
                    ctx.make(
                        f"{ctx.subject.zh}的名字是{name}。",
                        FactCategory.FACT,
                        Confidence.HIGH,
                        "name",
                        "name",
                    )
                )
        if not found:
            for match in _CALL_ME_ZH.finditer(ctx.clause):
                name = _zh_name(match.group("tail"))
                if name:
                    found.append(
                        ctx.make(
                            f"{ctx.subject.zh}希望被称呼为{name}。",
                            FactCategory.PREFERENCE,
                            Confidence.HIGH,
                            "name:preferred",
                            "name",
                        )
                    )
        return found
    for match in _MY_NAME_EN.finditer(ctx.clause):
        words = match.group("name").split()
        if words[0].lower() in _NOT_A_NAME:
            continue
        name = " ".join(w[:1].upper() + w[1:] for w in words)
        found.append(
            ctx.make(
                f"{ctx.subject.possessive()} name is {name}.",
                FactCategory.FACT,
                Confidence.HIGH,
                "name",
                "name",
            )
        )
    if not found:
        intro = _I_AM_NAME_EN.search(ctx.clause)
        if intro and not any(w.lower() in _NOT_A_NAME for w in intro.group("name").split()):
            found.append(
                ctx.make(
                    f"{ctx.subject.possessive()} name is {intro.group('name')}.",
                    FactCategory.FACT,
                    Confidence.HIGH,
                    "name",
                    "name",
                )
            )
    for match in _CALL_ME_EN.finditer(ctx.clause):
        name = match.group("name")
        if name.lower() not in _NOT_A_NAME:
            found.append(
                ctx.make(
                    f"{_en_subject(ctx)} wants to be called {name}.",
                    FactCategory.PREFERENCE,
                    Confidence.HIGH,
                    "name:preferred",
                    "name",
                )
            )
    return found


# pets and family ------------------------------------------------------

_PETS_EN = (
    r"dogs?|cats?|puppy|puppies|kittens?|rabbits?|bunny|bunnies|hamsters?|parrots?|"
    r"birds?|fish|turtles?|tortoises?|guinea pigs?|horses?|snakes?|lizards?"
)
_HAVE_PET_EN = re.compile(
    rf"\b{_I}\s+(?:have|has|have got|own|owns)\s+(?P<n>a|an|one|two|three|four|\d+)\s+"
    rf"(?:(?:little|small|big|old|young|new|pet)\s+)?(?P<kind>{_PETS_EN})\b"
    rf"(?:\s*,?\s+(?:named|called)\s+(?P<name>{_NAME_WORD}))?",
    re.IGNORECASE,
)
_MY_PET_EN = re.compile(
    rf"\b(?i:my)\s+(?P<kind>(?i:{_PETS_EN}))(?:'s name is|\s+is (?:called|named)|,|\s+(?i:named|"
    rf"called))\s+(?P<name>{_NAME_WORD})\b"
)
_RELATIONS_EN = (
    r"wife|husband|son|daughter|mother|mom|mum|father|dad|brother|sister|partner|"
    r"girlfriend|boyfriend|fianc[eé]e?|grandmother|grandfather|grandma|grandpa"
)
_MY_RELATION_EN = re.compile(
    rf"\b(?i:my)\s+(?P<rel>(?i:{_RELATIONS_EN}))(?:'s name is|\s+is (?:called|named)|,|"
    rf"\s+(?i:named|called))\s+(?P<name>{_NAME_WORD})\b"
)
_HAVE_KIDS_EN = re.compile(
    rf"\b{_I}\s+(?:have|has|have got)\s+(?P<n>a|an|one|two|three|four|five|\d+)\s+"
    r"(?P<kind>kids?|children|child|sons?|daughters?|brothers?|sisters?|siblings?)\b",
    re.IGNORECASE,
)
_PETS_ZH = r"小狗|小猫|狗狗|猫咪|狗|猫|兔子|仓鼠|鹦鹉|乌龟|金鱼|鱼|鸟|马"
_HAVE_PET_ZH = re.compile(
    rf"(?P<subj>我|用户)(?:家)?(?:里)?(?:有|养了|养着|养)(?P<n>[一两二三四五六\d]?)(?:只|条|个|头|匹)?"
    rf"(?P<kind>{_PETS_ZH})(?:[，,]?(?:它)?(?:叫|名叫|名字叫)(?P<name>[\u3400-\u9fffA-Za-z]{{1,4}}))?"
)
_RELATIONS_ZH = (
    r"老婆|妻子|太太|老公|丈夫|先生|儿子|女儿|妈妈|母亲|爸爸|父亲|哥哥|姐姐|弟弟|妹妹|男朋友|"
    r"女朋友|爷爷|奶奶|外公|外婆"
)
_MY_RELATION_ZH = re.compile(
    rf"(?P<subj>我|用户)的?(?P<rel>{_RELATIONS_ZH})(?:叫|名叫|的名字是|的名字叫)(?P<tail>[^，。！？；]+)"
)
_HAVE_KIDS_ZH = re.compile(
    r"(?P<subj>我|用户)有(?P<n>[一两二三四五\d])(?:个)(?P<kind>孩子|儿子|女儿|小孩|兄弟|姐妹)"
)
_ZH_KINDS = {
    "小狗": "dog",
    "狗狗": "dog",
    "狗": "dog",
    "小猫": "cat",
    "猫咪": "cat",
    "猫": "cat",
    "兔子": "rabbit",
    "仓鼠": "hamster",
    "鹦鹉": "parrot",
    "乌龟": "turtle",
    "金鱼": "fish",
    "鱼": "fish",
    "鸟": "bird",
    "马": "horse",
}
_RELATION_KEYS = {
    "mom": "mother",
    "mum": "mother",
    "dad": "father",
    "老婆": "wife",
    "妻子": "wife",
    "太太": "wife",
    "老公": "husband",
    "丈夫": "husband",
    "先生": "husband",
    "儿子": "son",
    "女儿": "daughter",
    "妈妈": "mother",
    "母亲": "mother",
    "爸爸": "father",
    "父亲": "father",
    "哥哥": "brother",
    "弟弟": "brother",
    "姐姐": "sister",
    "妹妹": "sister",
    "男朋友": "boyfriend",
    "女朋友": "girlfriend",
    "爷爷": "grandfather",
    "外公": "grandfather",
    "奶奶": "grandmother",
    "外婆": "grandmother",
}


def _family(ctx: _Context) -> list[_Candidate]:
    found: list[_Candidate] = []
    if ctx.question:
        return found
    if ctx.zh:
        for match in _HAVE_PET_ZH.finditer(ctx.clause):
            kind = match.group("kind")
            name = match.group("name") or ""
            key = f"pet:{_ZH_KINDS[kind]}" + (f":{name.lower()}" if name else "")
            count = match.group("n") or "一"
            text = f"{ctx.subject.zh}养了{count}只{kind}" + (f"，名叫{name}" if name else "")
            found.append(ctx.make(f"{text}。", FactCategory.FACT, Confidence.MEDIUM, key, "has"))
        for match in _MY_RELATION_ZH.finditer(ctx.clause):
            name = _zh_name(match.group("tail")) or _clean_object(match.group("tail"))[:6]
            rel = match.group("rel")
            if name:
                found.append(
                    ctx.make(
                        f"{ctx.subject.zh}的{rel}叫{name}。",
                        FactCategory.FACT,
                        Confidence.MEDIUM,
                        f"family:{_RELATION_KEYS[rel]}",
                        "has",
                    )
                )
        for match in _HAVE_KIDS_ZH.finditer(ctx.clause):
            kind = match.group("kind")
            found.append(
                ctx.make(
                    f"{ctx.subject.zh}有{match.group('n')}个{kind}。",
                    FactCategory.FACT,
                    Confidence.MEDIUM,
                    f"family:{'children' if kind in ('孩子', '小孩') else kind}",
                    "has",
                )
            )
        return found
    for match in _HAVE_PET_EN.finditer(ctx.clause):
        kind = match.group("kind").lower()
        name = match.group("name")
        key = f"pet:{_singular(kind.replace(' ', '-'))}" + (f":{name.lower()}" if name else "")
        text = f"{_en_subject(ctx)} has {match.group('n').lower()} {kind}"
        found.append(
            ctx.make(
                text + (f" named {name}." if name else "."),
                FactCategory.FACT,
                Confidence.MEDIUM,
                key,
                "has",
            )
        )
    for match in _MY_PET_EN.finditer(ctx.clause):
        kind = match.group("kind").lower()
        name = match.group("name")
        if name.lower() in _NOT_A_NAME or any(f.topic.endswith(f":{name.lower()}") for f in found):
            continue
        found.append(
            ctx.make(
                f"{_en_subject(ctx)} has a {kind} named {name}.",
                FactCategory.FACT,
                Confidence.MEDIUM,
                f"pet:{_singular(kind)}:{name.lower()}",
                "has",
            )
        )
    for match in _MY_RELATION_EN.finditer(ctx.clause):
        rel = match.group("rel").lower()
        name = match.group("name")
        if name.lower() in _NOT_A_NAME:
            continue
        found.append(
            ctx.make(
                f"{ctx.subject.possessive()} {rel} is called {name}.",
                FactCategory.FACT,
                Confidence.MEDIUM,
                f"family:{_RELATION_KEYS.get(rel, rel)}",
                "has",
            )
        )
    for match in _HAVE_KIDS_EN.finditer(ctx.clause):
        kind = match.group("kind").lower()
        key = "children" if kind.startswith(("kid", "child")) else _singular(kind)
        found.append(
            ctx.make(
                f"{_en_subject(ctx)} has {match.group('n').lower()} {kind}.",
                FactCategory.FACT,
                Confidence.MEDIUM,
                f"family:{key}",
                "has",
            )
        )
    return found


# habits ------------------------------------------------------

_WHEN_EN = (
    r"every (?:single )?(?:morning|day|night|evening|afternoon|week|weekend|weekday|"
    r"month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|each (?:morning|day|"
    r"night|evening|week)|on weekdays|on weekends|daily|nightly|weekly|"
    r"(?:once|twice|\w+ times) a (?:day|week|month)"
)
_HABIT_ADVERB_EN = re.compile(
    rf"\b{_I}\s+(?P<adv>usually|always|often|normally|typically|generally|regularly|"
    r"frequently|tend to|tends to|habitually|never)\s+(?P<act>[^.;!?]+)",
    re.IGNORECASE,
)
_HABIT_LEADING_WHEN_EN = re.compile(
    rf"^(?P<when>{_WHEN_EN}),?\s+{_I}\s+(?P<act>[^.;!?]+)", re.IGNORECASE
)
_HABIT_TRAILING_WHEN_EN = re.compile(
    rf"\b{_I}\s+(?P<act>(?!(?:am|will|need|have to|want|would|plan)\b)[a-z][^.;!?]*?)\s+"
    rf"(?P<when>{_WHEN_EN})\b(?P<rest>[^.;!?]*)",
    re.IGNORECASE,
)
_HABIT_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?P<adv>(?:每天|每晚|每早|每周[一二三四五六日天末]?|每个?(?:星期|礼拜)[一二三四五六日天]?|"
    r"每个?周末|每个?月|每年|通常|一般|平时|平常|经常|总是|常常|往往|习惯(?:于)?|一直都|从不)"
    r"(?:早上|晚上|中午|下午|上午|早晨|睡前|饭后|都|会|要)*)(?P<act>[^，。！？；]+)"
)


def _habits(ctx: _Context) -> list[_Candidate]:
    found: list[_Candidate] = []
    if ctx.question:
        return found
    if ctx.zh:
        for match in _HABIT_ZH.finditer(ctx.clause):
            act = _clean_object(match.group("act"))
            if not act or len(act) < 2:
                continue
            content = f"{ctx.subject.zh}{match.group('adv')}{_third_person_zh(act)}。"
            found.append(
                ctx.make(
                    content,
                    FactCategory.FACT,
                    Confidence.MEDIUM,
                    f"habit:{_topic_key(act)}",
                    "habit",
                )
            )
        return found
    third = False
    for match in _HABIT_ADVERB_EN.finditer(ctx.clause):
        act = _clean_object(match.group("act"))
        if not act:
            continue
        third = match.group("subj").lower() != "i"
        adv = match.group("adv").lower()
        adv = "tends to" if adv == "tend to" else adv
        act_text = act if third else _conjugate(_third_person_en(act))
        if adv.startswith("tend"):
            act_text = _third_person_en(act)
        found.append(
            ctx.make(
                f"{_en_subject(ctx)} {adv} {act_text}.",
                FactCategory.FACT,
                Confidence.MEDIUM,
                f"habit:{_topic_key(act)}",
                "habit",
            )
        )
    if found:
        return found
    for match in _HABIT_LEADING_WHEN_EN.finditer(ctx.clause):
        act = _clean_object(match.group("act"))
        if act:
            third = match.group("subj").lower() != "i"
            act_text = act if third else _conjugate(_third_person_en(act))
            found.append(
                ctx.make(
                    f"{_en_subject(ctx)} {act_text} {match.group('when').lower()}.",
                    FactCategory.FACT,
                    Confidence.MEDIUM,
                    f"habit:{_topic_key(act)}",
                    "habit",
                )
            )
    if found:
        return found
    for match in _HABIT_TRAILING_WHEN_EN.finditer(ctx.clause):
        act = match.group("act").strip()
        third = match.group("subj").lower() != "i"
        act_text = act if third else _conjugate(_third_person_en(act))
        rest = _clean_object(match.group("rest")) if match.group("rest").strip() else ""
        tail = f" {_third_person_en(rest)}" if rest else ""
        found.append(
            ctx.make(
                f"{_en_subject(ctx)} {act_text} {match.group('when').lower()}{tail}.",
                FactCategory.FACT,
                Confidence.MEDIUM,
                f"habit:{_topic_key(act)}",
                "habit",
            )
        )
    return found


# plans and tasks ------------------------------------------------------

_REMIND_EN = re.compile(
    r"\b(?:remind me|do not let me forget|make sure I)\s+(?:to\s+)?(?P<act>[^.;!?]+)",
    re.IGNORECASE,
)
_PLAN_EN = re.compile(
    rf"\b{_I}\s+(?:(?:also|still|really|definitely|probably|maybe|then)\s+)*"
    r"(?P<modal>am going to|is going to|am planning to|is planning to|plan to|plans to|"
    r"will|need to|needs to|have to|has to|must|have got to|am about to|is about to|"
    r"intend to|intends to|am supposed to|is supposed to|should)\s+(?P<act>[^.;!?]+)",
    re.IGNORECASE,
)
_PROGRESSIVE_EN = re.compile(
    rf"\b{_I}\s+(?:am|is)\s+(?P<act>(?:flying|traveling|travelling|leaving|heading|moving|"
    r"visiting|meeting|seeing|attending|starting|taking|having|going|driving|returning|"
    r"coming)\b[^.;!?]*)",
    re.IGNORECASE,
)
_MODAL_EN = {
    "am going to": "is going to",
    "am planning to": "is planning to",
    "plan to": "plans to",
    "need to": "needs to",
    "have to": "has to",
    "have got to": "has to",
    "am about to": "is about to",
    "intend to": "intends to",
    "am supposed to": "is supposed to",
}
_REMIND_ZH = re.compile(
    r"(?:提醒我|记得提醒我|别让我忘了|帮我记着|帮我记一下)(?P<act>[^，。！？；]+)"
)
_PLAN_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?P<pre>[^，。！？；]{0,8}?)"
    r"(?P<modal>打算|准备|计划|需要|必须|得|要|将要|将|会|想要)(?P<act>[^，。！？；]+)"
)
_GO_ZH = re.compile(
    r"(?P<subj>我|用户|本人)(?P<pre>[^，。！？；]{1,10}?)"
    r"(?P<act>(?:去|回|飞|出发|出差|开会|见|参加|搬家|考试|面试|到|看病|体检|上班|加班)[^，。！？；]*)"
)
_STRONG_MODALS_ZH = {"打算", "准备", "计划", "需要", "必须", "得"}
_PRE_FILLERS_ZH = re.compile(
    r"还|也|就|都|可能|也许|大概|下午|上午|晚上|早上|中午|之后|以后|然后|[\d点半:：]+"
)


def _pre_is_time(pre: str, reference: datetime) -> bool:
    rest = _without_time(pre, reference)
    return not _PRE_FILLERS_ZH.sub("", rest).strip()


def _plan_topic(act: str, reference: datetime) -> str:
    key = _topic_key(_without_time(act, reference), use_glossary=False)
    return f"plan:{key}" if key else "plan"


def _plans(ctx: _Context) -> list[_Candidate]:
    found: list[_Candidate] = []
    ranges = resolve_time_expressions(ctx.clause, ctx.occurred_at)
    when = _describe_ranges(ranges, ctx.zh)
    if ctx.zh:
        for match in _REMIND_ZH.finditer(ctx.clause):
            act = _clean_object(match.group("act"))
            if act:
                found.append(
                    ctx.make(
                        f"{ctx.subject.zh}请求提醒：{_third_person_zh(act)}{when}。",
                        FactCategory.TASK,
                        Confidence.MEDIUM,
                        _plan_topic(act, ctx.occurred_at),
                        "plan",
                    )
                )
        if found or ctx.question:
            return found
        for match in _PLAN_ZH.finditer(ctx.clause):
            pre, modal = match.group("pre"), match.group("modal")
            act = _clean_object(match.group("act"))
            if not act or not _pre_is_time(pre, ctx.occurred_at):
                continue
            if modal not in _STRONG_MODALS_ZH and not ranges:
                continue
            content = f"{ctx.subject.zh}{pre}{modal}{_third_person_zh(act)}{when}。"
            found.append(
                ctx.make(
                    content,
                    FactCategory.TASK,
                    Confidence.MEDIUM,
                    _plan_topic(act, ctx.occurred_at),
                    "plan",
                )
            )
            return found
        for match in _GO_ZH.finditer(ctx.clause):
            pre = match.group("pre")
            act = _clean_object(match.group("act"))
            if (
                act
                and ranges
                and _pre_is_time(pre, ctx.occurred_at)
                and _without_time(pre, ctx.occurred_at) != pre
            ):
                content = f"{ctx.subject.zh}{pre}{_third_person_zh(act)}{when}。"
                found.append(
                    ctx.make(
                        content,
                        FactCategory.TASK,
                        Confidence.MEDIUM,
                        _plan_topic(act, ctx.occurred_at),
                        "plan",
                    )
                )
                return found
        return found
    for match in _REMIND_EN.finditer(ctx.clause):
        act = _clean_object(match.group("act"))
        if act:
            found.append(
                ctx.make(
                    f"{_en_subject(ctx)} asked to be reminded to {_third_person_en(act)}{when}.",
                    FactCategory.TASK,
                    Confidence.MEDIUM,
                    _plan_topic(act, ctx.occurred_at),
                    "plan",
                )
            )
    if found or ctx.question:
        return found
    for match in _PLAN_EN.finditer(ctx.clause):
        act = _clean_object(match.group("act"))
        if not act or re.match(r"(?:not|never)\b", act, re.IGNORECASE):
            continue
        modal = " ".join(match.group("modal").lower().split())
        third = match.group("subj").lower() != "i"
        modal_text = modal if third else _MODAL_EN.get(modal, modal)
        found.append(
            ctx.make(
                f"{_en_subject(ctx)} {modal_text} {_third_person_en(act)}{when}.",
                FactCategory.TASK,
                Confidence.MEDIUM,
                _plan_topic(act, ctx.occurred_at),
                "plan",
            )
        )
        return found
    if ranges:
        for match in _PROGRESSIVE_EN.finditer(ctx.clause):
            act = _clean_object(match.group("act"))
            if act and _without_time(act, ctx.occurred_at) != act:
                found.append(
                    ctx.make(
                        f"{_en_subject(ctx)} is {_third_person_en(act)}{when}.",
                        FactCategory.TASK,
                        Confidence.MEDIUM,
                        _plan_topic(act, ctx.occurred_at),
                        "plan",
                    )
                )
                return found
    return found


# the order matters: the first family that finds something in a clause wins
_EXTRACTORS: list[_Extractor] = [_names, _allergies, _diet, _family, _preferences, _habits, _plans]


# moods ------------------------------------------------------

_MOOD_WORDS_EN = re.compile(
    r"\b(?:I am|I feel|I have been|I've been|feeling|I get|I got)\s+(?:(?:so|very|really|a bit|"
    r"quite|pretty|kind of|super|extremely|incredibly|totally)\s+)*(?P<m>stressed|anxious|tired|"
    r"exhausted|sad|depressed|happy|excited|angry|frustrated|lonely|worried|overwhelmed|bored|"
    r"upset|nervous|burned out|burnt out)\b",
    re.IGNORECASE,
)
_MOOD_WORDS_ZH = re.compile(
    r"压力(?:好|很|太|特别|挺|超)?大|焦虑|好累|很累|太累|累死|疲惫|难过|伤心|开心|高兴|生气|烦躁|好烦|很烦|"
    r"郁闷|孤独|寂寞|紧张|担心|崩溃|无聊|兴奋"
)
_MOOD_CANON = {
    "stressed": "stressed",
    "overwhelmed": "stressed",
    "burned out": "stressed",
    "burnt out": "stressed",
    "anxious": "anxious",
    "worried": "anxious",
    "nervous": "anxious",
    "tired": "tired",
    "exhausted": "tired",
    "sad": "sad",
    "depressed": "sad",
    "upset": "sad",
    "happy": "happy",
    "excited": "happy",
    "joyful": "happy",
    "angry": "angry",
    "frustrated": "angry",
    "annoyed": "angry",
    "lonely": "lonely",
    "bored": "bored",
    "压力": "stressed",
    "崩溃": "stressed",
    "焦虑": "anxious",
    "紧张": "anxious",
    "担心": "anxious",
    "累": "tired",
    "疲惫": "tired",
    "难过": "sad",
    "伤心": "sad",
    "郁闷": "sad",
    "开心": "happy",
    "高兴": "happy",
    "兴奋": "happy",
    "生气": "angry",
    "烦": "angry",
    "孤独": "lonely",
    "寂寞": "lonely",
    "无聊": "bored",
}
_MOOD_ZH_TEXT = {
    "stressed": "压力大",
    "anxious": "焦虑",
    "tired": "疲惫",
    "sad": "情绪低落",
    "happy": "心情愉快",
    "angry": "烦躁",
    "lonely": "孤独",
    "bored": "无聊",
}
_NEUTRAL = {"neutral", "none", "calm", "ok", "okay", "normal", "平静", "中性", "一般"}


def _canonical_mood(label: str) -> str:
    lowered = label.strip().lower()
    if not lowered or lowered in _NEUTRAL:
        return ""
    if lowered in _MOOD_CANON:
        return _MOOD_CANON[lowered]
    for key, value in _MOOD_CANON.items():
        if key in lowered:
            return value
    return lowered[:40]


def _moods_in(text: str) -> list[str]:
    found = [_canonical_mood(m.group("m")) for m in _MOOD_WORDS_EN.finditer(_expand(text))]
    found += [_canonical_mood(m.group(0)) for m in _MOOD_WORDS_ZH.finditer(text)]
    return [m for m in found if m]


# --- the reflector ------------------------------------------------------


@dataclass
class _Group:
    candidates: list[_Candidate] = field(default_factory=list)

    @property
    def latest(self) -> _Candidate:
        return max(self.candidates, key=lambda c: c.occurred_at)

    @property
    def first_seen(self) -> datetime:
        return min(c.occurred_at for c in self.candidates)


class RuleBasedReflector:
    """Pattern-based reflector for English and Chinese; runs offline, deterministic."""

    def __init__(self, min_mood_episodes: int = 2) -> None:
        self._min_mood_episodes = min_mood_episodes

    @property
    def label(self) -> str:
        return LABEL

    # -- reflect ------------------------------------------------------
    def reflect(
        self,
        user_id: str,
        episodes: Sequence[EpisodicMemory],
        existing_facts: Sequence[SemanticMemory],
    ) -> ReflectionOutput:
        """Facts stated explicitly in the episodes; ``existing_facts`` are left to the merge."""
        ordered = sorted(episodes, key=lambda e: (e.occurred_at, e.memory_id))
        candidates: list[_Candidate] = []
        for episode in ordered:
            for turn in _turns(episode):
                if _is_agent(turn.speaker):
                    continue
                candidates.extend(self._extract(turn, user_id))
        candidates.extend(self._mood_patterns(ordered, user_id))
        facts = _merge(candidates)
        logger.info("rule-based reflection episodes=%d facts=%d", len(episodes), len(facts))
        return ReflectionOutput(facts=facts, reflector=self.label)

    def _extract(self, turn: _Turn, user_id: str) -> list[_Candidate]:
        subject = _Subject.of(turn.speaker, user_id)
        found: list[_Candidate] = []
        for clause in _clauses(turn.text):
            ctx = _Context(
                clause=clause,
                subject=subject,
                memory_id=turn.memory_id,
                occurred_at=turn.occurred_at,
                hedged=_hedged(clause),
                temporary=_temporary(clause),
                question=_question(clause),
                zh=_is_zh(clause),
            )
            for extractor in _EXTRACTORS:
                extracted = extractor(ctx)
                if extracted:
                    found.extend(extracted)
                    break
        return found

    def _mood_patterns(self, episodes: Sequence[EpisodicMemory], user_id: str) -> list[_Candidate]:
        seen: dict[str, list[EpisodicMemory]] = {}
        for episode in episodes:
            labels: set[str] = set()
            user_turns = [t for t in _turns(episode) if not _is_agent(t.speaker)]
            if episode.emotion and user_turns:
                mood = _canonical_mood(episode.emotion)
                if mood:
                    labels.add(mood)
            for turn in user_turns:
                labels.update(_moods_in(turn.text))
            for label in labels:
                seen.setdefault(label, []).append(episode)
        moods: list[_Candidate] = []
        for label, where in seen.items():
            if len(where) < self._min_mood_episodes:
                continue
            zh = sum(_is_zh(e.content) for e in where) * 2 > len(where)
            subject = _Subject.of(where[-1].speaker, user_id)
            content = (
                f"{subject.zh}多次表现出{_MOOD_ZH_TEXT.get(label, label)}的情绪。"
                if zh
                else f"{subject.en} has repeatedly felt {label}."
            )
            confidence = Confidence.MEDIUM if len(where) >= 3 else Confidence.LOW
            for episode in where:
                moods.append(
                    _Candidate(
                        content,
                        FactCategory.MOOD,
                        confidence,
                        f"{subject.topic_prefix}mood:{label}",
                        "mood",
                        episode.memory_id,
                        episode.occurred_at,
                        repeatable=False,
                    )
                )
        return moods

    # -- summarize ------------------------------------------------------
    def summarize(self, episodes: Sequence[EpisodicMemory]) -> SessionSummary:
        ordered = sorted(episodes, key=lambda e: (e.occurred_at, e.memory_id))
        all_turns = [t for e in ordered for t in _turns(e)]
        user_turns = [t for t in all_turns if not _is_agent(t.speaker)]
        return SessionSummary(
            intent=_intent(user_turns),
            entities=_entities([t.text for t in all_turns]),
            open_tasks=self._open_tasks(user_turns),
            mood=_session_mood(ordered),
            summarizer=self.label,
        )

    def _open_tasks(self, turns: Sequence[_Turn]) -> list[str]:
        tasks: dict[str, tuple[str, int]] = {}
        done_clauses: list[tuple[int, str]] = []
        for position, turn in enumerate(turns):
            for candidate in self._extract(turn, "user"):
                if candidate.category is FactCategory.TASK:
                    tasks[candidate.topic] = (candidate.content, position)
            for clause in _clauses(turn.text):
                if _DONE.search(clause):
                    done_clauses.append((position, clause.lower()))
        open_tasks = []
        for topic, (content, position) in tasks.items():
            words = [w for w in topic.removeprefix("plan:").split("-") if w]
            finished = any(
                later > position and words and all(w in clause for w in words)
                for later, clause in done_clauses
            )
            if not finished:
                open_tasks.append(content)
        return open_tasks[-10:]


_DONE = re.compile(
    r"\b(?:done|finished|completed|booked|sent|bought|paid|submitted|cancelled|canceled|"
    r"already did|took care of)\b|完成|做完|搞定|办完|办好|订好|买好|已经|取消了|发了|交了",
    re.IGNORECASE,
)


def _merge(candidates: Sequence[_Candidate]) -> list[ExtractedFact]:
    """One fact per (topic, stance); within a topic the most recent stance wins."""
    groups: dict[tuple[str, str], _Group] = {}
    for candidate in candidates:
        groups.setdefault((candidate.topic, candidate.stance), _Group()).candidates.append(
            candidate
        )
    newest_by_topic: dict[str, datetime] = {}
    for (topic, _), group in groups.items():
        moment = group.latest.occurred_at
        if topic not in newest_by_topic or moment > newest_by_topic[topic]:
            newest_by_topic[topic] = moment
    facts: list[tuple[datetime, ExtractedFact]] = []
    for (topic, _), group in groups.items():
        latest = group.latest
        if latest.occurred_at < newest_by_topic[topic]:
            continue  # contradicted later in the same batch
        sources = list(dict.fromkeys(c.memory_id for c in group.candidates))
        confidence = max((c.confidence for c in group.candidates), key=_RANK.__getitem__)
        if len(sources) > 1 and latest.repeatable:
            confidence = confidence.raised()
        facts.append(
            (
                group.first_seen,
                ExtractedFact(
                    content=latest.content,
                    category=latest.category,
                    confidence=confidence,
                    source_memory_ids=sources,
                    topic=topic,
                ),
            )
        )
    facts.sort(key=lambda item: item[0])
    return [fact for _, fact in facts]


_REQUEST_EN = re.compile(
    r"\?\s*$|^(?:please|can you|could you|would you|will you|help me|I want|I would like|"
    r"I need|I am looking for|find|show|tell|book|recommend|remind me|let us|what|how|where|"
    r"when|which|who|why)\b",
    re.IGNORECASE,
)
_REQUEST_ZH = re.compile(
    r"帮我|请|能不能|能否|可以.*吗|我想|我要|我需要|推荐|提醒我|[吗呢][？?]?$|[？?]$"
)


def _intent(turns: Sequence[_Turn]) -> str:
    for turn in reversed(turns):
        for clause in reversed(_clauses(turn.text)):
            pattern = _REQUEST_ZH if _is_zh(clause) else _REQUEST_EN
            if pattern.search(clause):
                return clause[:200]
    return turns[-1].text[:200] if turns else ""


_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z0-9&'-]*(?:\s+[A-Z][a-zA-Z0-9&'-]*)*")
_NOT_ENTITIES = {
    "i",
    "the",
    "a",
    "an",
    "my",
    "we",
    "you",
    "it",
    "this",
    "that",
    "hi",
    "hello",
    "hey",
    "please",
    "can",
    "could",
    "would",
    "what",
    "when",
    "where",
    "how",
    "why",
    "who",
    "yes",
    "no",
    "ok",
    "okay",
    "thanks",
    "thank",
    "sure",
    "and",
    "but",
    "so",
    "also",
    "let",
    "do",
    "is",
    "are",
    "i'm",
    "i'll",
    "i've",
    "i'd",
    "user",
    "assistant",
    "agent",
    "ai",
    "bot",
    "if",
    "then",
    "there",
    "they",
    "he",
    "she",
    "our",
    "your",
    "maybe",
    "today",
    "tomorrow",
    "yesterday",
    "great",
    "good",
    "sorry",
    "remind",
    "book",
    "find",
    "tell",
    "show",
    "help",
    "just",
    "not",
    "in",
    "on",
    "at",
    "for",
    "to",
    "of",
    "will",
    "should",
    "am",
    "be",
    "as",
}
_QUANTITY = re.compile(
    r"[$€£¥]\s?\d+(?:[.,]\d+)?|\d+(?:[.,]\d+)?\s?(?:%|km|kg|mg|ml|cm|mm|hours?|hrs?|minutes?|"
    r"mins?|days?|weeks?|months?|years?|usd|eur|rmb|yuan|dollars?|euros?|people|persons?|"
    r"guests?|nights?|am|pm|g|l|m|h|元|块钱?|公里|千米|米|公斤|斤|克|人|位|天|晚|小时|分钟|岁|点|楼|层|"
    r"个月|周|次|张|间)(?![a-zA-Z])",
    re.IGNORECASE,
)
_NOUN_FLAGS = ("n", "nr", "ns", "nt", "nz", "nrt", "nrfg", "vn")
_NOT_ENTITIES_ZH = {
    "时候",
    "东西",
    "事情",
    "问题",
    "用户",
    "今天",
    "明天",
    "时间",
    "感觉",
    "助手",
    "办法",
    "样子",
    "地方",
    "有点",
    "过敏",
}


_MAX_ENTITY_TEXT = 1_000


def _entities(texts: Sequence[str], limit: int = 15) -> list[str]:
    found: list[str] = []
    for text in texts:
        expanded = text.replace("’", "'")
        for match in _QUANTITY.finditer(expanded):
            found.append(match.group(0).strip())
        for match in _CAPITALISED.finditer(expanded):
            words = match.group(0).split()
            at_start = not expanded[: match.start()].strip() or re.search(
                r"[.!?:]\s*$", expanded[: match.start()]
            )
            if at_start and len(words) == 1:
                continue
            while words and words[0].lower() in _NOT_ENTITIES:
                words = words[1:]
            if words and not all(w.lower() in _NOT_ENTITIES for w in words):
                found.append(" ".join(words))
        if _is_zh(text):
            for word, flag in _posseg(text[:_MAX_ENTITY_TEXT], hmm=False):
                if (
                    flag in _NOUN_FLAGS
                    and len(word) >= 2
                    and _is_zh(word)
                    and word not in _NOT_ENTITIES_ZH
                ):
                    found.append(word)
    unique: dict[str, str] = {}
    for entity in found:
        unique.setdefault(entity.lower(), entity)
    return list(unique.values())[:limit]


def _session_mood(episodes: Sequence[EpisodicMemory]) -> str:
    labels: list[str] = []
    for episode in episodes:
        episode_moods: list[str] = []
        user_turns = [t for t in _turns(episode) if not _is_agent(t.speaker)]
        if episode.emotion and user_turns:
            mood = _canonical_mood(episode.emotion)
            if mood:
                episode_moods.append(mood)
        for turn in user_turns:
            episode_moods.extend(_moods_in(turn.text))
        labels.extend(episode_moods)
    if not labels:
        return ""
    latest = labels[-1]
    counts = Counter(labels)
    common, count = counts.most_common(1)[0]
    if common != latest and count > 1:
        return f"{latest} (earlier mostly {common})"
    return latest
