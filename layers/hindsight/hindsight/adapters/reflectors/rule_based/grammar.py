"""First person turned into third, verbs conjugated, plurals made singular, objects cleaned."""

from __future__ import annotations

import re

from hindsight.adapters.reflectors.rule_based.lexicon import mapping, words

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


def third_person_en(text: str) -> str:
    """English pronouns in the third person: "my bike" -> "their bike"."""
    for pattern, replacement in _PRONOUN_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def third_person_zh(text: str) -> str:
    """Chinese pronouns in the third person: "我的车" -> "自己的车"."""
    return text.replace("我们", "他们").replace("我的", "自己的").replace("我", "自己")


def is_inflected(verb: str) -> bool:
    """Whether an English verb is already past or third person ("gave", "walked",
    "studied", "gives"), so that it takes no -s; "need" and "read" are base forms."""
    if verb in words("past_verbs", "en"):
        return True
    if verb.endswith("ed") and len(verb) > 3:
        return verb not in words("base_verbs_in_ed", "en")
    return len(verb) > 3 and verb.endswith("s") and not verb.endswith(("ss", "us", "is"))


def conjugate(phrase: str) -> str:
    """Third-person singular of the first verb: "run in the park" -> "runs in the park"."""
    parts = phrase.split(" ", 1)
    verb = parts[0]
    rest = f" {parts[1]}" if len(parts) > 1 else ""
    lowered = verb.lower()
    if lowered in words("adverbs", "en"):  # "often run" -> "often runs"
        return verb + (f" {conjugate(parts[1])}" if len(parts) > 1 else rest)
    if lowered in words("modals", "en"):  # "can run" stays
        return verb + rest
    irregular = mapping("irregular_verbs", "en")
    if lowered in irregular:
        return irregular[lowered] + rest
    if not re.fullmatch(r"[a-z]+", lowered) or is_inflected(lowered):
        return phrase  # "gave up" stays "gave up", "walked" stays "walked"
    if re.search(r"(?:s|sh|ch|x|z|o)$", lowered):
        return f"{verb}es{rest}"
    if re.search(r"[^aeiou]y$", lowered):
        return f"{verb[:-1]}ies{rest}"
    return f"{verb}s{rest}"


def singular(word: str) -> str:
    """Singular of an English plural: "cookies" -> "cookie", "berries" -> "berry"."""
    if word in words("ie_plurals", "en"):
        return word[:-1]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("oes", "ches", "shes", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_TRAILING_EN = re.compile(
    r"\s+(?:because|since|so|when|if|but|although|though|as|which|who|whenever|unless|"
    r"very much|a lot|so much|too much|a little|as well|too|anymore|any more|at all)\b.*$",
    re.IGNORECASE,
)


def clean_object(obj: str) -> str:
    """The object of a statement without what trails it; "" if it only points elsewhere."""
    obj = _TRAILING_EN.sub("", obj.strip())
    obj = re.sub(r"[\s,.;:!?，。！？；：、\"'“”]+$", "", obj)
    obj = re.sub(r"^(?:the|a|an)\s+", "", obj, flags=re.IGNORECASE)
    obj = re.sub(r"^[的了]+", "", obj).strip()
    if not obj or obj.lower() in words("pronoun_objects") or len(obj) > 80:
        return ""
    return obj


def split_items(obj: str) -> list[str]:
    """Each item of a list ("peanuts, shellfish and eggs"), cleaned."""
    obj = _TRAILING_EN.sub("", obj)
    parts = re.split(r"\s*(?:,|\band\b|\bor\b|&|/|、|和|跟|及|与|以及|还有)\s*", obj)
    return [c for c in (clean_object(p) for p in parts) if c]
