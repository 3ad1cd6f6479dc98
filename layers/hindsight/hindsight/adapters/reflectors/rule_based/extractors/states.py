"""States: what the user has one value of at a time, and the updates that replace it.

"I live in Beijing" and, months later, "I moved, I live in Shanghai now" are two states
of one attribute (``residence``): both become facts with the topic ``state:residence``,
so the newer supersedes the older (``core/fact_merge.py``: one topic, different content),
with both sources linked. An update needs no cue word ("My flat in Shanghai gets great
light" still names where the user lives); the cue words of ``hindsight.core.retrieval.states``
only tell an additive update apart ("we adopted a second cat", "我又学会了日语"): its fact
gets a topic naming the value (``state:pets:milo``), so the earlier state stays current.

A state statement is read per sentence, not per clause, so the value and its names stay
in the fact ("We adopted a second cat, Milo, so Luna has company"). Only statements about
the speaker qualify: first person, not about a relative or friend ("my sister lives in
Paris"), not a question, not hedged, not a plan ("I am going to move"), not just for today.
"""

from __future__ import annotations

import re

from hindsight.adapters.reflectors.rule_based.candidates import Candidate, Context
from hindsight.adapters.reflectors.rule_based.clauses import expand, hedged, question
from hindsight.adapters.reflectors.rule_based.grammar import conjugate, singular, third_person_en
from hindsight.adapters.reflectors.rule_based.topics import topic_key
from hindsight.core.models import Confidence, FactCategory
from hindsight.core.retrieval.state_lexicon import ADDITIVE_CUES, MODAL_CUES, NOW_CUES, PAST_CUES
from hindsight.core.retrieval.states import attribute_values

# attribute: (English pattern, Chinese pattern); the statement must name the attribute
# with the user as its holder (a chat line may drop the "I": "Finally moved to Lisbon").
# The first attribute found wins, so the specific come before the general ("report to
# my manager at work" is about the manager). Attributes of several values: MULTI_VALUED.
_STATE_PATTERNS: dict[str, tuple[str, str]] = {
    "partner": (
        r"\b(?:my (?:new )?(?:girlfriend|boyfriend|wife|husband|partner|fianc[eé]e?)|"
        r"I am (?:now )?(?:dating|seeing|married to|engaged to)|broke up|"
        r"I am (?:now )?with [A-Z][a-z]+)\b",
        r"(?:女朋友|男朋友|老婆|老公|妻子|丈夫|对象|未婚妻|未婚夫)|分手",
    ),
    "manager": (
        r"\b(?:my (?:new )?(?:manager|boss|supervisor|team lead)|I report to|"
        r"took over (?:our|my) team)\b",
        r"(?:我的|我们的|新来的|现在的)(?:新)?(?:经理|老板|领导|上司|主管)|我.{0,6}向.{1,6}汇报"
        r"|归.{1,4}管",
    ),
    "residence": (
        r"\b(?:I|we)\b(?: \w+){0,3}? (?:live|lived|living|moved|relocated|settled)\b"
        r"|\b(?:my|our) (?:new )?(?:flat|apartment|house|home|place) in\b|\bliving here\b"
        r"|^(?:\w+ )?(?:moved|relocated) to\b|\brent(?:ing)? (?:a|an|my) (?:place|flat|"
        r"apartment|room|house)\b|\b(?:my )?home is (?:now )?(?:in )?[A-Z]",
        r"(?:我|我们).{0,6}(?:住在|住|搬到|搬去|搬家|定居|安家)|(?:房子|公寓)在|住着",
    ),
    "employer": (
        r"\bI\b(?: \w+){0,3}? (?:work (?:at|for|in)|joined|started (?:at|working)|quit)\b"
        r"|\b(?:first (?:day|week) at|switched jobs|my (?:new )?(?:job|employer))\b"
        r"|\bI am (?:now )?at [A-Z]|\bI am an? [a-z]+(?: [a-z]+)? (?:at|for) "
        r"|\bI (?:\w+ )?(?:teach|work(?! ?out))\b",
        r"我.{0,10}(?:上班|工作|实习|入职|跳槽|辞职|离职)|我的工作",
    ),
    "vehicle": (
        r"\b(?:I\b(?: \w+){0,3}? drive|my (?:new )?car|sold my car|from the dealer)\b",
        r"开的是.{0,4}(?:车|辆)|(?:我的|把)车|(?:提|买)了一辆|一辆.{1,12}开起来",
    ),
    "diet": (
        r"\b(?:[\w-]+ diet|I am (?:now |no longer |not )?(?:a )?(?:vegetarian|vegan|"
        r"pescatarian)|(?:into|weeks of|started) eating)\b",
        r"饮食|吃素|素食|生酮|轻断食",
    ),
    "phone": (r"\b(?:my (?:new )?phone|switched to an? (?:iphone|pixel|galaxy))\b", r"手机"),
    "exercise_days": (
        r"\b(?:I (?:go to|hit) the gym|gym (?:is|days?)|(?:my )?gym days|"
        r"I (?:run|swim|train) on)\b",
        r"(?:健身|锻炼|跑步|游泳|练).{0,8}(?:时间|每周|周[一二三四五六日末])|每周.{1,8}(?:健身|锻炼|跑步|游泳)",
    ),
    "studies": (
        r"\bI (?:\w+ )?(?:study|am studying|major in|enrolled (?:at|in))\b",
        r"我.{0,6}(?:在.{1,10}(?:读书|上学|读研|读博)|专业是)|转学|考上了?.{1,10}(?:大学|学院)|就读",
    ),
    "commute": (
        r"\bI (?:\w+ )?(?:commute|bike to work|cycle to work|take the (?:bus|train|subway))\b",
        r"通勤|(?:坐|乘)(?:地铁|公交).{0,3}上班|骑车上班|开车上班",
    ),
    "favourite": (
        r"\b(?:my favou?rite|I (?:now )?prefer|best of all|more than any|I like \w+ best)\b",
        r"最喜欢|更喜欢|最爱|偏爱",
    ),
    "languages": (
        r"\bI (?:\w+ ){0,2}?(?:speak|am learning) [A-Z]",
        r"会说|在学.{1,4}语|说.{1,4}语",
    ),
    "pets": (
        r"\b(?:I|we) (?:\w+ )?(?:have|adopted|got) (?:a|an|another|two|a second) "
        r"(?:cat|dog|puppy|kitten|parrot|rabbit|hamster)\b",
        r"(?:养了|领养了|收养了).{0,4}(?:猫|狗|鹦鹉|兔子|仓鼠)",
    ),
}
_PATTERNS = {
    name: (re.compile(en, re.IGNORECASE), re.compile(zh))
    for name, (en, zh) in _STATE_PATTERNS.items()
}
MULTI_VALUED = frozenset({"languages", "pets"})
# the attributes as core/retrieval/states.py names them, whose values a state statement must name
_CORE_ATTRIBUTE = {"employer": "work", "languages": "language"}

_OTHERS_EN = re.compile(
    r"^(?:my|our) (?:sister|brother|mother|mom|mum|father|dad|parents|friend|son|daughter|"
    r"colleague|neighbou?r|cousin|aunt|uncle|grand\w+|roommate)\b",
    re.IGNORECASE,
)
_OTHERS_ZH = re.compile(
    r"^我(?:的)?(?:妹妹|姐姐|哥哥|弟弟|妈妈|爸爸|父母|朋友|同事|儿子|女儿|邻居|室友)"
)
_PLAN_EN = re.compile(
    r"\b(?:going to|will|plan(?:ning)? to|want to|would like to|might|thinking (?:of|about))\b",
    re.IGNORECASE,
)
_PLAN_ZH = re.compile(r"打算|准备|计划|想要|将要|要搬|会搬|考虑")
_TODAY_EN = re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", re.I)
_TODAY_ZH = re.compile(r"今天|今晚|今早|这顿|这会儿")
_FAVOURITE_KIND = re.compile(r"\b(?:any other|of all|favou?rite)\s+(?P<kind>[a-z]+)", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?。！？;；])\s*|\n")
_KEEP_PAST = re.compile(r"(?:ed|was|had|got|went|sold|bought|took|left|broke|gave|quit|put)$")


def sentences(text: str) -> list[str]:
    """The sentences of a turn (the clause splitter's first cut)."""
    return [s.strip() for s in _SENTENCES.split(text) if s and s.strip()]


def state_attribute(sentence: str, zh: bool) -> str | None:
    """The attribute a first-person sentence states, if it is a state statement."""
    text = sentence if zh else expand(sentence)
    if question(text) or hedged(text):
        return None
    others, plan, today = (
        (_OTHERS_ZH, _PLAN_ZH, _TODAY_ZH) if zh else (_OTHERS_EN, _PLAN_EN, _TODAY_EN)
    )
    if others.search(text) or plan.search(text) or today.search(text):
        return None
    # a wish or supposition ("If I moved to Galway"), or a state of long ago ("I lived in
    # Edinburgh as a kid"): no state that holds now, as the retrieve rule reads them
    lang = 1 if zh else 0
    if MODAL_CUES[lang].search(text) or (
        PAST_CUES[lang].search(text) and not NOW_CUES[lang].search(text)
    ):
        return None
    for name, patterns in _PATTERNS.items():
        if patterns[1 if zh else 0].search(text):
            return name
    return None


def find_state(sentence: str, ctx: Context) -> Candidate | None:
    """A state fact from a sentence, or None if it states no attribute of the speaker."""
    attribute = state_attribute(sentence, ctx.zh)
    if attribute is None:
        return None
    if not attribute_values(sentence, _CORE_ATTRIBUTE.get(attribute, attribute)):
        return None  # names no value of it ("我把书桌搬到了窗户旁边"): no state to supersede
    content = _third_person_zh(sentence, ctx) if ctx.zh else _third_person_en(sentence, ctx)
    additive = bool(ADDITIVE_CUES[1 if ctx.zh else 0].search(sentence))
    topic = f"state:{attribute}"
    if attribute in MULTI_VALUED or additive:
        topic += f":{_value_key(sentence, attribute, ctx.zh)}"
    elif attribute == "favourite":  # a favourite of one kind of thing ("any other city")
        kind = _FAVOURITE_KIND.search(expand(sentence))
        topic += f":{singular(kind.group('kind').lower())}" if kind else ":thing"
    category = FactCategory.PREFERENCE if attribute == "favourite" else FactCategory.FACT
    candidate = ctx.make(content, category, Confidence.MEDIUM, topic, stance=content)
    return candidate


def with_state_topic(found: list[Candidate], state: Candidate) -> list[Candidate]:
    """What the other extractors found in a state sentence, under the state's topic (so
    that "I am vegetarian" and, later, "I am vegan now" are one attribute), unless they
    key that attribute finer already."""
    attribute, *value = state.topic.split("state:", 1)[1].split(":")
    if attribute in MULTI_VALUED or (value and attribute != "favourite"):
        return found  # several values, or an additive update
    if attribute == "favourite" and (
        value == ["thing"] or any(":favorite:" in c.topic for c in found)
    ):
        return found  # keyed by the kind of thing already ("preference:favorite:color")
    for candidate in found:
        candidate.topic = state.topic
    return found


def _value_key(sentence: str, attribute: str, zh: bool) -> str:
    """What distinguishes one value of a multi-valued attribute: the words after the
    attribute's words ("speak [French]", "a second cat, [Milo]")."""
    match = _PATTERNS[attribute][1 if zh else 0].search(sentence if zh else expand(sentence))
    rest = sentence[match.end() :] if match else sentence
    names = re.findall(r"\b[A-Z][a-z]+\b", rest)
    key = topic_key(names[0] if names else rest, use_glossary=False) if rest.strip() else ""
    return key or topic_key(sentence, use_glossary=False) or "item"


def _third_person_en(sentence: str, ctx: Context) -> str:
    text = expand(sentence).rstrip(" .!;")
    subject = ctx.subject.en
    possessive = ctx.subject.possessive()
    match = re.match(r"^(?:I am|I'm)\s+(?P<rest>.*)$", text)
    if match:
        return f"{subject} is {third_person_en(match.group('rest'))}."
    match = re.match(r"^I\s+(?P<rest>.*)$", text)
    if match:
        rest = match.group("rest")
        verb = rest.split(" ", 1)[0].lower()
        if not _KEEP_PAST.search(verb) and verb not in ("can", "could", "also", "still", "now"):
            rest = conjugate(rest)
        return f"{subject} {third_person_en(rest)}."
    match = re.match(r"^(?:My|Our)\s+(?P<rest>.*)$", text)
    if match:
        return f"{possessive} {third_person_en(match.group('rest'))}."
    match = re.match(r"^We\s+(?P<rest>.*)$", text)
    if match:
        return f"{subject} and family {third_person_en(match.group('rest'))}."
    return f"{subject} said: {third_person_en(text)}."


def _third_person_zh(sentence: str, ctx: Context) -> str:
    text = sentence.strip().rstrip("。！；")
    subject = ctx.subject.zh
    if text.startswith("我们家"):
        text = f"{subject}家" + text[3:]
    elif text.startswith("我们"):
        text = f"{subject}一家" + text[2:]
    elif text.startswith("我的"):
        text = f"{subject}的" + text[2:]
    elif text.startswith("我"):
        text = subject + text[1:]
    else:
        text = f"{subject}说：" + text
    return text.replace("我们", "他们").replace("我的", "自己的").replace("我", "自己") + "。"
