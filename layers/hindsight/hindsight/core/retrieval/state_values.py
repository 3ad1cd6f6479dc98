"""The evidence an update needs: whose state a statement gives, and which value it names.

``core/retrieval/states.py`` takes a newer statement for a new state of an older one only when both
give the same attribute of the same person and the newer names a value the older does not
("I live in Austin" / "I live in Denver now"). This module reads those two things off a
statement, for one attribute, in English and Chinese, and says nothing when it cannot tell:

* the *subject* is the first person the statement is about: the user ("I", "we", "my
  flat", "the user", "我") or a relative or acquaintance ("my sister lives in Rome",
  "我妈妈换了新手机"). "My girlfriend ..." gives the user's own state when the attribute is
  the partner, and her own otherwise ("my wife's manager", "我老公最喜欢吃烤鸭");
* the *values* an attribute can take are of two kinds. Names (where one lives or works,
  a partner, a manager, a car or phone, a school, bank, doctor, team): capitalised words
  but sentence-starting common words, weekdays, months and names said to someone ("Thanks,
  Deb!"), numbers beside a name ("Pixel 8"); in Chinese, the proper nouns jieba tags
  (places, names, organisations, latin words, numbers), what fills the slot of the
  attribute's verb ("住在青岛", "搬去了大连", "入职拼多多", "在德勤做审计", "我的对象是子涵";
  a filler that ends in a word of place, "搬到了阳台边上", starts with a count, "搬到了一个
  小区", or is moved by "把", "我把沙发搬到了…", is none) and a surname with a title
  ("何医生"). A person-valued attribute (partner, manager, doctor) takes no name after
  "in", "at", "near" ("a detective in Oslo"). A name counts only
  near the words that name the attribute ("Got a job translating a German novel" names no
  employer). Everything else (diet,
  sport, language, pet, commute, drink, food, hobby, hair colour, instrument) takes its
  values from a closed list of words of that kind (``state_lexicon.py``): "the car park
  was full" names no car, "我把书桌搬到了窗户旁边" no place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from hindsight.core.retrieval.state_lexicon import LEXICON_EN, LEXICON_ZH, NAMED, PATTERNED_ZH
from hindsight.core.text import ENGLISH_STOPWORDS, jieba_module

SELF = "self"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CJK = re.compile(r"[\u3400-\u9fff]")

# people other than the user, as English and Chinese name them
_RELATIVES_EN = (
    "sister|brother|mum|mom|mother|dad|father|parents|friend|best friend|colleague|coworker|"
    "co-worker|neighbou?r|son|daughter|kids?|children|cousin|aunt|uncle|grandma|"
    "grandmother|grandpa|grandfather|grandad|grand-?dad|granny|grandparents|in-laws|"
    "(?:father|mother|brother|sister|son|daughter)-in-law|roommate|flatmate|housemate|"
    "husband|wife|girlfriend|boyfriend|partner|fianc[eé]e?|niece|nephew|team ?mate|"
    "classmate|best mate|mate|boss|teacher|landlord|landlady"
)
_SPOUSES = frozenset({"husband", "wife", "girlfriend", "boyfriend", "partner", "fiance", "fiancé"})
# the people whose word names an attribute's role: "my boss" is the user's own manager,
# "my girlfriend" the user's own partner (when that attribute is asked about)
_ROLES = {"partner": _SPOUSES, "manager": frozenset({"boss"})}
# an English statement that opens with a verb in the past drops its subject, the speaker
# ("Picked up a Tesla last week, the Volvo went to my nephew")
_DIARY_EN = re.compile(r"\s*(?:[A-Z][a-z]+ed|Got|Bought|Sold|Left|Took|Went|Made|Found|Gave)\b")
_SUBJECT_EN = re.compile(
    rf"\b(?P<self>i|i'm|i've|i'd|we|we're|we've|the user|my|our)\b"
    rf"(?:\s+(?:(?:new|older|younger|little|big|teenage|eldest|oldest|youngest|baby|twin|step|late)\s+)?(?P<other>{_RELATIVES_EN})"
    r"(?P<own>['’]s(?! name))?\b(?!\s+(?:and i|&\s*i)\b))?"
    r"|\b(?P<third>he|she|they)\b",
    re.IGNORECASE,
)
_RELATIVES_ZH = (
    "妈妈|母亲|老妈|爸爸|父亲|老爸|爸妈|父母|姐姐|妹妹|哥哥|弟弟|朋友|同事|同学|室友|邻居|老公|老婆|"
    "丈夫|妻子|女朋友|男朋友|对象|儿子|女儿|孩子|表姐|表妹|表哥|表弟|堂姐|堂哥|舅舅|姑姑|阿姨|叔叔|"
    "爷爷|奶奶|外公|外婆|姥姥|姥爷|闺蜜|岳父|岳母|公公|婆婆|爸|妈|哥|姐|弟|妹|老师|房东|领导"
)
_SPOUSES_ZH = frozenset({"老公", "老婆", "丈夫", "妻子", "女朋友", "男朋友", "对象"})
_ROLES_ZH = {"partner": _SPOUSES_ZH, "manager": frozenset({"领导"})}
_SUBJECT_ZH = re.compile(
    rf"(?P<other>(?:我的?|我们的?)(?:好|最好的|亲|大|小)?(?:{_RELATIVES_ZH})|^(?:{_RELATIVES_ZH}))(?P<own>的)?"
    rf"|(?P<self>我|我们|用户)"
    r"|(?P<third>(?<!其)(?:他们|她们|他|她))"
)

# common Chinese surnames: "何医生", "李经理" name a person
_SURNAMES = (
    "王|李|张|刘|陈|杨|黄|赵|吴|周|徐|孙|马|朱|胡|郭|何|高|林|罗|郑|梁|谢|宋|唐|许|韩|冯|邓|曹|彭|曾|"
    "肖|田|董|袁|潘|于|蒋|蔡|余|杜|叶|程|苏|魏|吕|丁|任|沈|姚|卢|姜|崔|钟|谭|陆|汪|范|金|石|廖|贾|夏|"
    "韦|付|方|白|邹|孟|熊|秦|邱|江|尹|薛|闫|段|雷|侯|龙|史|黎|贺|顾|毛|郝|龚|邵|万|钱|严|覃|武|戴|莫|"
    "孔|向|汤"
)
# the slots of Chinese attribute statements that hold a name: what follows "住在", comes
# between "在" and "上班" ...
# what ends a slot's filler: a pause, or a word that follows a noun ("入职拼多多快一个月了")
_SLOT_END = "[了，。,.！!？?、的快都也才]|已经"
_SLOTS_ZH = re.compile(
    r"(?:住在|搬到了?|搬去了?|搬回了?|定居在?|安家在?|落户在?)(?P<a>[^\s，。,.！!？?、]{2,8}?)"
    rf"(?={_SLOT_END}|这边|那边|$)"
    r"|在(?P<b>[^\s，。,.！!？?、]{2,8}?)(?:正式)?(?:上班|工作|入职|实习|任职|读书|上学|读研|读博)"
    r"|在(?P<e>[^\s，。,.！!？?、]{2,8}?)(?:做|当|(?:租|买)(?:的|了)(?:一套|一间|个)?(?:房|屋|公寓))"
    r"|(?:入职了?|加入了?|跳槽(?:到|去)了?|去了|进了)(?P<d>[^\s，。,.！!？?、]{2,8}?)"
    rf"(?={_SLOT_END}|$)"
    r"|叫(?P<n>[^\s，。,.！!？?、]{2,3}?)(?=[了，。,.！!？?、]|$)"
    r"|(?:对象|女朋友|男朋友|老婆|老公|妻子|丈夫|经理|领导|上司|主管)(?:是|叫)"
    r"(?P<p>[\u4e00-\u9fff]{2,3}?)(?=[了，。,.！!？?、]|$)"
    r"|我和(?P<q>[\u4e00-\u9fff]{2,3}?)(?:在一起|交往|谈恋爱|恋爱|结婚|订婚|领证|分手)"
    r"|(?:一辆|换成了?|换了|提了|改成了?|是|向|开)(?P<c>[^\s，。,.！!？?、]{2,8}?)"
    rf"(?={_SLOT_END}|汇报|手机|$)"
)
_TITLED_ZH = re.compile(rf"(?:{_SURNAMES})(?:医生|大夫|老师|经理|总|律师)")
# where a slot holds a name only when it holds a proper noun: "搬到了窗户旁边" names no place
_PLACE_SLOTS = frozenset({"a", "c", "d", "e"})
# a slot's filler that ends in a word of place ("搬到了阳台边上", "搬到了公司附近") or begins
# with a count or a pointer ("搬到了一个小区", "去了那家店") is no name
_NOT_NAME_SLOT = re.compile(
    r"(?:旁边|边上|附近|对面|中间|角落|门口|外面|里面|楼上|楼下|隔壁|[边上里下前后内外])$"
    r"|^(?:[一两几这那哪每某][个家所间套座只]?|新|老|别的|其他|了)"
)
# "把" puts the thing handled before its verb: "我把沙发搬到了阳台边上" moves a sofa, not the
# user, and names no value ("我把家搬到了苏州" does move the user)
_BA_ZH = re.compile(r"把(?!家)[^，。,.！!？?；;]{1,10}?(?:搬|挪|移|放|摆|拿|带)")
_GENERIC_ZH = _words(
    "公司 单位 家里 家 这里 那里 这边 那边 外地 老家 附近 学校 医院 社区 店里 新家 房子 宿舍 市区 "
    "郊区 城里 乡下 国外 外国 南方 北方 超市 商场 公园 医院 银行 饭店 餐厅 一起"
)
_ZH_PROPER = frozenset({"ns", "nr", "nrfg", "nrt", "nt", "nz", "eng", "m"})
# jieba tags some common words as proper nouns
_ZH_NOT_VALUES = _words(
    "新手机 一个 一只 一辆 一部 一张 一直 一下 两年 一年 上个月 这个 那个 好多 一些 一点 老夫妻 上"
)

_WORD_EN = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+(?:[.,]\d+)?")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|\n)([A-Z][a-z'’-]*)")
# capitalised words that are no names: pronouns, titles, words that start sentences, days
_NOT_NAMES_EN = _words(
    """
    i i'm i've i'd i'll my we our the a an this that these those it he she they his her
    their mr mrs ms dr after before finally since now then today yesterday tomorrow last
    first second third next every each both also just still only even so but and or yes
    no okay ok oh well hey hi hello thanks thank please sorry great good bad new old
    picked got bought went came started moved switched changed sold quit joined three two
    one four five six several few many some most all gym work home life january
    february march april may june july august september october november december monday
    everyone everybody someone somebody nobody people tuesday wednesday thursday friday
    saturday sunday mondays tuesdays wednesdays thursdays
    fridays saturdays sundays christmas easter left got had made took saw met found spent
    felt kept lost heard told said ran ate drank paid sent won wore gave brought thought
    caught taught built put set let read sat stood woke slept drove rode flew swam
    """
)


# a statement that opens with someone's name is about them: "Ellie got a new boyfriend"
# ... and does not speak of the user ("Rachel took over as my manager" is the user's state)
_NAMED_SUBJECT_EN = re.compile(r"\s*([A-Z][a-z]+)(?:['’]s\b|\s+[a-z])")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|we|we're|our|us)\b|我", re.I)
_NAMED_SUBJECT_ZH = frozenset({"nr", "nrfg", "nrt"})


def subject(text: str, attribute: str) -> str:
    """Whose state of ``attribute`` the statement gives: ``SELF`` (the user), a relative's
    word, a name the statement opens with, or "other" for "he", "she", "they" and their
    Chinese forms."""
    if named := _opening_name(text):
        return named
    if _CJK.search(text):
        for match in _SUBJECT_ZH.finditer(text):
            if match.group("self"):
                return SELF
            if other := match.group("other"):
                relative = re.sub(r"^(?:我们|我)的?(?:好|最好的|亲|大|小)?", "", other)
                own = not match.group("own") and relative in _ROLES_ZH.get(attribute, ())
                return SELF if own else relative
            return "other"
        return SELF
    if _DIARY_EN.match(text):
        return SELF
    for match in _SUBJECT_EN.finditer(text):
        if other := match.group("other"):
            relative = other.lower().replace("best ", "")
            own = not match.group("own") and relative in _ROLES.get(attribute, ())
            return SELF if own else relative
        if match.group("self"):
            return SELF
        return "other"
    return SELF


def _opening_name(text: str) -> str | None:
    """The name of the person a statement about someone else opens with."""
    if _FIRST_PERSON.search(text):
        return None
    if _CJK.search(text):
        from jieba import posseg

        jieba_module()
        first = next(iter(posseg.cut(text.strip())), None)
        if first is not None and first.flag in _NAMED_SUBJECT_ZH and len(first.word) >= 2:
            return str(first.word)
        return None
    match = _NAMED_SUBJECT_EN.match(text)
    if match is None:
        return None
    word = match.group(1).casefold()
    if word in _NOT_NAMES_EN or word in ENGLISH_STOPWORDS or word.endswith(("ed", "ing", "ly")):
        return None
    return word


# how far from the word that names the attribute a name may stand to be its value
# ("I live in Austin"; "Rachel took over from Ingrid as my manager"), in characters
_NEAR = {False: (30, 40), True: (10, 14)}


@lru_cache(maxsize=8_192)
def values(text: str, attribute: str, near: tuple[tuple[int, int], ...] = ()) -> frozenset[str]:
    """The words of ``text`` that can be a value of ``attribute``, casefolded. Names count
    only near one of the ``near`` spans (where the statement names the attribute) when
    any are given: "Got a job translating a German novel" names no employer."""
    zh = bool(_CJK.search(text))
    lexicon = (LEXICON_ZH if zh else LEXICON_EN).get(attribute)
    if attribute not in NAMED and lexicon is None:
        return frozenset()
    names: frozenset[str] = frozenset()
    if attribute in NAMED or attribute == "favourite":  # a favourite city, band, dish
        before, after = _NEAR[zh]
        names = frozenset(
            name
            for name, at in (_names_zh(text) if zh else _names_en(text))
            if (not near or any(start - before <= at <= end + after for start, end in near))
            and not (attribute in _PEOPLE and _PLACED.search(text, 0, at))
        )
    return names | (_listed(text, lexicon, zh) if lexicon is not None else frozenset())


# attributes whose value is a person: a name after "in", "at", "near" is a place ("a
# divorced detective in Oslo")
_PEOPLE = frozenset({"partner", "manager", "doctor"})
_PLACED = re.compile(r"\b(?:in|at|near)\s+(?:the\s+)?$", re.IGNORECASE)

_NAMING_KINDS = ("diet", "exercise_days", "hair", "drink", "instrument", "commute", "language")


@lru_cache(maxsize=4_096)
def named_values(text: str) -> frozenset[str]:
    """The words of ``text`` that name something: its names (places, people, brands,
    models) and the words of the closed kinds that are rarely said in passing (a diet,
    days, a colour, a drink, an instrument, a way to commute, a language)."""
    return frozenset(named_kinds(text))


@lru_cache(maxsize=4_096)
def named_kinds(text: str) -> Mapping[str, str]:
    """``named_values`` with each word's kind: "name", or the closed kind it is listed in."""
    zh = bool(_CJK.search(text))
    found = {name: "name" for name, _ in (_names_zh(text) if zh else _names_en(text))}
    lexicons = LEXICON_ZH if zh else LEXICON_EN
    for kind in _NAMING_KINDS:
        found.update(dict.fromkeys(_listed(text, lexicons[kind], zh), kind))
    return found


def listed_values(text: str, attribute: str) -> frozenset[str]:
    """The words of ``text`` from ``attribute``'s own word list (a phone model, a diet, a
    drink), casefolded; names that could be of anything do not count."""
    zh = bool(_CJK.search(text))
    lexicon = (LEXICON_ZH if zh else LEXICON_EN).get(attribute)
    return _listed(text, lexicon, zh) if lexicon is not None else frozenset()


# a word of one character as the object of its verb, where jieba joins the two ("改喝茶了")
_VERB_OBJECT = re.compile(r"[喝养弹吹]\w[了，。,.！!？?、]?$")


def _listed(text: str, lexicon: re.Pattern[str], zh: bool) -> frozenset[str]:
    """The words of ``lexicon`` in ``text``, casefolded."""
    matches = lexicon.finditer(text)
    if zh:  # no "狗" in "野狗", no "茶" in "茶几": a word of one character must be a whole
        # word, of two it must begin or end one ("吃火锅", "学法语")
        edges = _edges(text)
        return frozenset(
            m.group()
            for m in matches
            if len(m.group()) > 2
            or PATTERNED_ZH.match(m.group())
            or (m.start() in edges and m.end() in edges)
            or _VERB_OBJECT.match(text, m.start() - 1, m.end() + 1)
            or (len(m.group()) == 2 and (m.start() in edges or m.end() in edges))
        )
    return frozenset(m.group().casefold() for m in matches)


@lru_cache(maxsize=4_096)
def words(text: str) -> frozenset[str]:
    """Every word of ``text``, casefolded (Chinese: jieba's words), to look a value up in."""
    if _CJK.search(text):
        return frozenset(w.casefold() for w in _cut(text))
    found = [w.casefold() for w in _WORD_EN.findall(text)]
    # "Ruby's" holds the name "ruby" (names are read without the possessive)
    return frozenset(found + [w.removesuffix("'s").removesuffix("’s") for w in found])


def names_value(value: str, text: str) -> bool:
    """Whether ``text`` holds ``value`` (a value of another statement)."""
    if _CJK.search(value) or _CJK.search(text) or " " in value:
        return value in text.casefold() or value in words(text)
    return value in words(text)


# a name said to someone ("Thanks, Deb!", "Hey Sam, guess what") is no value
_VOCATIVE = re.compile(
    r"\b(?:hey|hi|hello|thanks|thank you|bye|wow|yeah|yes|oh|ok|okay|congrats|sorry|dear|"
    r"cheers|aw+|haha|great|sure)[,!.\s]+([A-Z][a-z]+)\b|,\s*([A-Z][a-z]+)\s*[!?.]|"
    r"^\s*([A-Z][a-z]+)\s*!",
    re.IGNORECASE,
)


_MODEL = re.compile(r"[A-Z][\w-]*\s?$")


@lru_cache(maxsize=4_096)
def _names_en(text: str) -> frozenset[tuple[str, int]]:
    """The names of ``text`` and where they stand."""
    starts = {m.start(1) for m in _SENTENCE_START.finditer(text)}
    said_to = {m.start(g) for m in _VOCATIVE.finditer(text) for g in (1, 2, 3) if m.group(g)}
    found = set()
    for match in _WORD_EN.finditer(text):
        word = match.group()
        lowered = word.casefold().rstrip("'’").removesuffix("'s").removesuffix("’s")
        if match.start() in said_to:
            continue
        if any(ch.isdigit() for ch in word):
            # a number is a value beside a name ("Pixel 8", "Mazda 3"), not alone ("3 years")
            if _MODEL.search(text[: match.start()]):
                found.add((lowered, match.start()))
        elif word[0].isupper() and lowered not in _NOT_NAMES_EN:
            if match.start() in starts and (
                lowered in ENGLISH_STOPWORDS or lowered.endswith(("ed", "ing", "ly"))
            ):
                continue
            found.add((lowered, match.start()))
    return frozenset(found)


@lru_cache(maxsize=4_096)
def _names_zh(text: str) -> frozenset[tuple[str, int]]:
    """The names of ``text`` and where they stand."""
    from jieba import posseg

    jieba_module()  # initialised quietly, once
    proper: set[tuple[str, int]] = set()
    at = 0
    for word, flag in posseg.cut(text):
        start, at = at, at + len(word)
        word = word.strip()
        if flag in _ZH_PROPER and word and word not in _ZH_NOT_VALUES:
            if flag == "m" and not any(ch.isdigit() for ch in word):
                continue  # 一辆, 两年: counts, not values
            proper.add((word.casefold(), start))
    handled = [m.span() for m in _BA_ZH.finditer(text)]
    found = {(w, at) for w, at in proper if not any(s < at < e for s, e in handled)}
    for match in _SLOTS_ZH.finditer(text):
        kind, slot = next((k, g) for k, g in match.groupdict().items() if g)
        start = match.start(kind)
        if slot.startswith("在"):
            slot, start = slot[1:], start + 1
        moved = any(s < match.start() <= e for s, e in handled)  # "把书桌搬到了客厅"
        if slot in _ZH_NOT_VALUES or slot in _GENERIC_ZH or moved:
            continue
        if (
            kind not in _PLACE_SLOTS
            or any(p in slot.casefold() for p, _ in proper)
            or (kind != "c" and not _NOT_NAME_SLOT.search(slot))
        ):
            found.add((slot.casefold(), start))
    found.update((m.group(), m.start()) for m in _TITLED_ZH.finditer(text))
    return frozenset(found)


@lru_cache(maxsize=4_096)
def _edges(text: str) -> frozenset[int]:
    """The offsets where jieba's words of ``text`` begin and end."""
    words = jieba_module().tokenize(text)  # type: ignore[attr-defined]
    return frozenset(edge for _, start, end in words for edge in (start, end))


def _cut(text: str) -> list[str]:
    jieba = jieba_module()
    return [w for w in jieba.lcut(text) if w.strip()]  # type: ignore[attr-defined]
