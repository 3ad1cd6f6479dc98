"""The evidence an update needs: whose state a statement gives, and which value it names.

``core/states.py`` takes a newer statement for a new state of an older one only when both
give the same attribute of the same person and the newer names a value the older does not
("I live in Austin" / "I live in Denver now"). This module reads those two things off a
statement, in English and Chinese, and says nothing when it cannot tell:

* the *subject* is the first person the statement is about: the user ("I", "we", "my
  flat", "the user", "我") or a relative or acquaintance ("my sister lives in Rome",
  "我妈妈换了新手机"). A partner named as "my girlfriend ..." is the user's own when the
  attribute is the partner;
* the *values* are the words that can be a state's value: English names and numbers
  (capitalised words but the sentence's first unless it is no common word, words with
  digits) and the value words of ``VALUE_WORDS`` (diets, weekdays, colours ...); Chinese
  proper nouns as jieba tags them (places, names, organisations, latin words, numbers),
  the value words, and what fills an attribute's slot ("住在…", "在…上班", "…饮食").

A newer statement that names no value ("I moved my desk closer to the window"), or only
values the older already holds ("My Toyota needs new tyres"), gives no new state.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hindsight.core.text import ENGLISH_STOPWORDS, jieba_module

SELF = "self"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CJK = re.compile(r"[\u3400-\u9fff]")

# people other than the user, as English and Chinese name them
_RELATIVES_EN = (
    "sister|brother|mum|mom|mother|dad|father|parents|friend|best friend|colleague|coworker|"
    "co-worker|neighbou?r|son|daughter|kids?|children|cousin|aunt|uncle|grandma|"
    "grandmother|grandpa|grandfather|roommate|flatmate|housemate|husband|wife|girlfriend|"
    "boyfriend|partner|fianc[eé]e?|niece|nephew|team ?mate|classmate"
)
_SPOUSES = frozenset({"husband", "wife", "girlfriend", "boyfriend", "partner", "fiance", "fiancé"})
_SUBJECT_EN = re.compile(
    rf"\b(?P<self>i|i'm|i've|i'd|we|we're|we've|the user|my|our)\b"
    rf"(?:\s+(?:new\s+|older\s+|younger\s+|little\s+|big\s+)?(?P<other>{_RELATIVES_EN})\b"
    r"(?!\s+(?:and i|&\s*i)\b))?"
    r"|\b(?P<third>he|she|they)\b",
    re.IGNORECASE,
)
_RELATIVES_ZH = (
    "妈妈|母亲|老妈|爸爸|父亲|老爸|爸妈|父母|姐姐|妹妹|哥哥|弟弟|朋友|同事|同学|室友|邻居|老公|老婆|"
    "丈夫|妻子|女朋友|男朋友|对象|儿子|女儿|孩子|表姐|表妹|表哥|表弟|堂姐|堂哥|舅舅|姑姑|阿姨|叔叔|"
    "爷爷|奶奶|外公|外婆|姥姥|姥爷|闺蜜"
)
_SPOUSES_ZH = frozenset({"老公", "老婆", "丈夫", "妻子", "女朋友", "男朋友", "对象"})
_SUBJECT_ZH = re.compile(
    rf"(?P<other>(?:我的?|我们的?)(?:{_RELATIVES_ZH})|^(?:{_RELATIVES_ZH}))"
    rf"|(?P<self>我|我们|用户)"
    r"|(?P<third>(?<!其)(?:他们|她们|他|她))"
)

# lower-case words that are values of some attribute
VALUE_WORDS = _words(
    """
    keto paleo vegan vegetarian pescatarian carnivore flexitarian gluten-free dairy-free
    low-carb intermittent mediterranean
    monday monday's mondays tuesday tuesdays wednesday wednesdays thursday thursdays friday
    fridays saturday saturdays sunday sundays weekend weekends weekday weekdays mornings
    evenings nights
    red blue green black white grey gray silver yellow orange purple pink brown blonde
    blond ginger auburn
    tea coffee espresso latte cappuccino matcha decaf
    guitar piano violin cello drums ukulele flute saxophone trumpet
    bus subway metro train tram bike bicycle scooter car carpool walk
    """
)
VALUE_WORDS_ZH = (
    "生酮|地中海|低碳水|高蛋白|素食|吃素|轻断食|无麸质|周一|周二|周三|周四|周五|周六|周日|周末|"
    "工作日|早上|晚上|红色|蓝色|绿色|黑色|白色|灰色|银色|黄色|紫色|粉色|棕色|金色|"
    "英语|日语|法语|德语|韩语|西班牙语|粤语|普通话|意大利语|俄语|"
    "咖啡|绿茶|红茶|奶茶|拿铁|美式|乌龙|吉他|钢琴|小提琴|大提琴|鼓|尤克里里|长笛|"
    "地铁|公交|骑车|开车|步行|打车"
)
_VALUE_ZH = re.compile(VALUE_WORDS_ZH)
# the slots of Chinese attribute statements: what follows "住在", comes between "在" and
# "上班", precedes "饮食" ...
_SLOTS_ZH = re.compile(
    r"(?:住在|搬到了?|搬去了?|定居在?|安家在?)(?P<a>[^\s，。,.！!？?、]{2,8}?)(?=[了，。,.！!？?、]|这边|那边|$)"
    r"|在(?P<b>[^\s，。,.！!？?、]{2,8}?)(?:正式)?(?:上班|工作|入职|实习|任职|读书|上学)"
    r"|(?:一辆|换成了?|换了|提了|改成了?|是|叫|向)(?P<c>[^\s，。,.！!？?、]{2,8}?)"
    r"(?=[了，。,.！!？?、]|汇报|手机|饮食|$)"
    r"|(?P<d>[^\s，。,.！!？?、了的是新换用按]{2,4})(?:饮食|手机)"
)
_ZH_PROPER = frozenset({"ns", "nr", "nrfg", "nrt", "nt", "nz", "eng", "m"})
# jieba tags some common words as proper nouns
_ZH_NOT_VALUES = _words(
    "新手机 一个 一只 一辆 一部 一张 一直 一下 两年 一年 上个月 这个 那个 好多 一些 一点"
)

_WORD_EN = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+(?:[.,]\d+)?")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|\n)([A-Z][a-z'’-]*)")
# capitalised words that are no values: pronouns, titles, words that start sentences
_NOT_VALUES_EN = _words(
    """
    i i'm i've i'd i'll my we our the a an this that these those it he she they his her
    their mr mrs ms dr after before finally since now then today yesterday tomorrow last
    first second third next every each both also just still only even so but and or yes
    no okay ok oh well hey hi hello thanks thank please sorry great good bad new old
    picked got bought went came started moved switched changed sold quit joined three two
    one four five six several few many some most all gym work home life january
    february march april may june july august september october november december
    """
)


def subject(text: str, attributes: frozenset[str]) -> str:
    """Whose state the statement gives: ``SELF`` (the user), a relative's word, or
    "other" for "he", "she", "they" and their Chinese forms."""
    partner = "partner" in attributes
    if _CJK.search(text):
        for match in _SUBJECT_ZH.finditer(text):
            if match.group("self"):
                return SELF
            if other := match.group("other"):
                relative = other.removeprefix("我们").removeprefix("我").removeprefix("的")
                return SELF if partner and relative in _SPOUSES_ZH else relative
            return "other"
        return SELF
    for match in _SUBJECT_EN.finditer(text):
        if other := match.group("other"):
            relative = other.lower().replace("best ", "")
            return SELF if partner and relative in _SPOUSES else relative
        if match.group("self"):
            return SELF
        return "other"
    return SELF


@lru_cache(maxsize=4_096)
def values(text: str) -> frozenset[str]:
    """The words of ``text`` that can be a state's value, casefolded."""
    if _CJK.search(text):
        return _values_zh(text)
    return _values_en(text)


@lru_cache(maxsize=4_096)
def words(text: str) -> frozenset[str]:
    """Every word of ``text``, casefolded (Chinese: jieba's words and each value's
    characters as written), to look a value up in."""
    if _CJK.search(text):
        return frozenset(w.casefold() for w in _cut(text))
    return frozenset(w.casefold() for w in _WORD_EN.findall(text))


def names_value(value: str, text: str) -> bool:
    """Whether ``text`` holds ``value`` (a value of another statement)."""
    if _CJK.search(value) or _CJK.search(text):
        return value in text.casefold() or value in words(text)
    return value in words(text)


def _values_en(text: str) -> frozenset[str]:
    starts = {m.start(1) for m in _SENTENCE_START.finditer(text)}
    found = set()
    for match in _WORD_EN.finditer(text):
        word = match.group()
        lowered = word.casefold().rstrip("'’").removesuffix("'s").removesuffix("’s")
        if any(ch.isdigit() for ch in word) or lowered in VALUE_WORDS:
            found.add(lowered)
        elif word[0].isupper() and lowered not in _NOT_VALUES_EN:
            if match.start() in starts and (
                lowered in ENGLISH_STOPWORDS or lowered.endswith(("ed", "ing", "ly"))
            ):
                continue
            found.add(lowered)
    return frozenset(found)


def _values_zh(text: str) -> frozenset[str]:
    from jieba import posseg

    jieba_module()  # initialised quietly, once
    found = {m.group() for m in _VALUE_ZH.finditer(text)}
    for match in _SLOTS_ZH.finditer(text):
        slot = next(g for g in match.groups() if g)
        if not _VALUE_ZH.fullmatch(slot) and slot not in _ZH_NOT_VALUES:
            found.add(slot.casefold())
    for word, flag in posseg.cut(text):
        if flag in _ZH_PROPER and word not in _ZH_NOT_VALUES and len(word.strip()) >= 1:
            if flag == "m" and not any(ch.isdigit() for ch in word):
                continue  # 一辆, 两年: counts, not values
            found.add(word.strip().casefold())
    return frozenset(v for v in found if v)


def _cut(text: str) -> list[str]:
    jieba = jieba_module()
    return [w for w in jieba.lcut(text) if w.strip()]  # type: ignore[attr-defined]
