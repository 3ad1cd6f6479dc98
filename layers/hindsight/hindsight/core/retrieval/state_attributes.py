"""The attributes a state can be of, and the words that name them.

``ATTRIBUTES`` holds, for each kind of attribute (where a person lives, works, their
partner, car, manager, diet, ...), the word patterns of English and Chinese statements
that state it; ``attributes_of`` reads the kinds a query asks about, with the looser words
of a question. ``core/retrieval/states.py`` decides updates with them.
"""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u9fff]")

_EN = {
    "residence": r"\b(?:liv(?:e|es|ed|ing) (?:in|at|near|above|by|with|next to)|"
    r"where (?:does|do|did) .{1,40} live|"
    r"(?:moved|moving) (?:to|into|back|house|out|in|across|"
    r"abroad|here|there|away|last|recently)|relocat\w*|settled|based in|"
    r"(?:my|our) (?:new )?(?:home|flat|apartment|house|place)|neighbou?rhood|home is|"
    r"rent(?:s|ing|ed)? (?:a|an|my|our) (?:[\w-]+ ){0,2}"
    r"(?:place|flat|apartment|house|room|studio))\b",
    "work": r"\b(?:work(?:s|ing|ed)? (?:at|for|as|in)|(?:new |first |a |my )?job (?:at|as|with)|"
    r"(?:new|switched|changed) jobs?|employer|joined|hired (?:by|at)|quit|started at|badge|"
    r"where (?:does|do|did) .{1,40} work|first (?:day|week|month) at|(?:i'm|i am) now (?:at|with)|"
    r"(?:accepted|took|got) (?:the|an|a|their) (?:job |position |role )?offer|"
    r"handed in my (?:notice|badge|resignation)|employed (?:by|at)|(?:new|first) role|"
    r"(?:my|the) (?:new )?(?:role|position|company|office) (?:at|with)|"
    r"(?:engineer|developer|designer|analyst|accountant|auditor|nurse|teacher|"
    r"consultant|lawyer|intern|chef|barista|researcher) (?:at|for|with))\b",
    "partner": r"\b(?:girlfriend|boyfriend|wife|husband|partner|fianc[eé]e?|spouse|"
    r"in a relationship|(?:dating|seeing) (?-i:[A-Z])\w+|"
    r"(?:got|get|getting|am|'m|are|were|be|been) married|married (?:to|him|her)|broke up|"
    r"split up|divorced|engaged|anniversary|first date)\b",
    "vehicle": r"\b(?:(?:my|our|new|a) (?:new |old )?car\b"
    r"(?! (?:park|show|boot|wash|accident|trouble|seat|full))|drive[sn]? (?:a|an|my)|"
    r"driving (?:a|an|my)|vehicle|truck|suv|motorbike|motorcycle|dealer|traded in|"
    r"(?:a|an|my|new|the) (?:toyota|honda|tesla|mazda|bmw|audi|vw|volkswagen|ford|"
    r"hyundai|kia|subaru|volvo|nissan|porsche|jeep|mercedes|skoda|renault|peugeot))\b",
    "manager": r"\b(?:manager|boss|supervisor|team lead|reports? to|took over)\b",
    "diet": r"\b(?:diet|eat meat|fasting|(?:i'm|i am|been|went|gone|going|became|become|"
    r"eat(?:ing)?|stick to|follow(?:ing)?) (?:a |an )?(?:strict |mostly )?(?:vegetarian|vegan|"
    r"keto|paleo|pescatarian|gluten-free|dairy-free|low-carb|plant-based|carnivore))\b",
    "phone": r"\b(?:phone|iphone|android|pixel|galaxy|smartphone|mobile|xperia|oneplus|"
    r"(?:a|an|my|new) (?:huawei|xiaomi|motorola|nokia|samsung))\b",
    "exercise": r"\b(?:gym|work ?outs?|exercis\w*|training|yoga|pilates|swim\w*|sports?|"
    r"run on|jog\w*)\b",
    "exercise_days": r"\b(?:gym|work ?outs?|exercis\w*|training|yoga|pilates|swim\w*|"
    r"run on|jog\w*)\b",
    "language": r"\b(?:speak\w*|language|fluent\w*|lessons|learn\w*|stud(?:y|ying|ies))\b",
    "pets": r"\b(?:cats?|dogs?|pets?|pupp(?:y|ies)|kittens?|adopted|rehomed|parrot|rabbit|"
    r"beagle|labrador|corgi|poodle|terrier|spaniel|husky|dachshund|retriever|tortoise|"
    r"hamster|budgie|guinea pig)\b",
    "studies": r"\b(?:study\w*|school|university|college|major\w*|degree|student|"
    r"lectures?|seminar|enrol\w*|transferred|campus|semester|phd|master'?s|undergrad\w*)\b",
    "commute": r"\b(?:commut\w*|to (?:work|the office)|get to work|ride to work)\b",
    "favourite": r"\b(?:favou?rite|prefer\w*|best of all|more than any|like \w+ best)\b",
    "drink": r"\b(?:coffee|tea|latte|espresso|chai|drink(?:ing)?|cup of|morning (?:drink|cup))\b",
    "food": r"\b(?:dish|food|meal|could eat|eat it|cuisine)\b",
    "hobby": r"\b(?:hobby|hobbies|free time|spare time|spare hour|pastime|free evening)\b",
    "hair": r"\b(?:hair|dye|dyed)\b",
    "bank": r"\b(?:bank\w*|accounts?|debit card|credit card|salary went)\b",
    "doctor": r"\b(?:doctor|gp|dr|check-ups?|practice|surgery)\b",
    "team": r"\b(?:(?:i|we) (?:support|follow)|supporter of|season ticket|die-hard|cheer for|"
    r"football fan|home games?|match day|(?:club|team|football|rugby|home) shirt)\b",
    "instrument": r"\b(?:instrument|play(?:s|ed|ing)? the|orchestra|band|teacher says|"
    r"grade \w+ exam|open mic|violin|cello|drums|flute|saxophone|trumpet|trombone|clarinet|"
    r"ukulele|guitar|piano)\b",
    "sleep": r"\b(?:wake up|woke up|bedtime|go to bed|sleep\w*)\b",
}
_ZH = {
    "residence": r"住在|住到|住着|(?:我|我们|现在|一直|目前)住(?![了院过宿])|(?<!老)家在"
    r"|搬家|搬到|搬去|定居|安家|房子|租了|小区|在.{1,8}(?:租|买)(?:的|了)(?:一套|一间|个)?(?:房|屋|公寓|单间)|安顿|落户|新家",
    "work": r"上班|入职|跳槽|辞职|离职|职位|单位|在.{1,10}工作|工作是|公司是|新公司|同事"
    r"|换了?(?:一?份)?(?:新)?工作|新工作|东家|在.{1,8}(?:做|当)[\u4e00-\u9fff]{0,4}"
    r"(?:开发|工程师|程序员|经理|审计|会计|销售|产品|设计|运营|老师|医生|护士|律师|编辑|记者|客服|研究员"
    r"|分析师|实习)",
    "partner": r"女朋友|男朋友|女友|男友|老婆|老公|妻子|丈夫|对象|伴侣|结婚|分手|约会|离婚|在一起"
    r"|交往|恋爱",
    "vehicle": r"汽车|车子|新车|提车|我的车|一辆|开的是|开着|提的|提了|驾驶|把车"
    r"|(?:买|卖|换)了?(?:一?辆|车)",
    "manager": r"(?:我的|我们)(?:老板|领导)|经理|上司|上级|主管|汇报",
    "diet": r"饮食|吃素|素食|节食|生酮|减肥|吃肉|忌口|轻断食",
    "phone": r"手机|(?:华为|小米|苹果|(?i:iphone|oppo|vivo|pixel|galaxy)|三星|荣耀|一加|红米)\s*"
    r"[A-Za-z]*\s*\d",
    "exercise": r"健身|锻炼|跑步|瑜伽|游泳|运动",
    "exercise_days": r"健身|锻炼|跑步|瑜伽|游泳|运动",
    "language": r"语|外语|说.{0,2}话",
    "pets": r"猫|狗|宠物|领养|养了|养着|只养",
    "studies": r"上学|读书|大学|专业|学校|课程|读研|读博|研究生",
    "commute": r"通勤|上下班|上班|去公司|到公司",
    "favourite": r"最喜欢|更喜欢|偏爱|喜欢",
    "drink": r"喝|一杯|一壶|离不开|换成了?(?:咖啡|茶|豆浆|拿铁)",
    "food": r"最喜欢吃|最爱吃|最爱的是|菜|能天天吃|吃不腻",
    "hobby": r"爱好|业余|空闲时间|闲暇|有空就",
    "hair": r"头发|染发|发色",
    "bank": r"银行|工资卡|账户|储蓄卡|信用卡",
    "doctor": r"医生|大夫|看病|体检",
    "team": r"球迷|支持|季票|球衣|主场|看球|主队",
    "instrument": r"乐器|乐团|弹|拉(?:小提琴|大提琴|二胡)|演奏|打鼓|考级|老师说我",
    "sleep": r"起床|睡觉|早睡|晚睡",
}
# attributes of several values at once: a newer statement adds unless it says a change
MULTI_VALUED = frozenset({"language", "pets", "hobby", "instrument", "exercise"})
ATTRIBUTES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    name: (re.compile(_EN[name], re.IGNORECASE), re.compile(_ZH[name])) for name in _EN
}

# what a question asks about: looser than what a statement must say to state it ("What
# car does the user drive?", "用户开什么车？")
_ASKED = {
    "residence": (r"\b(?:live|living|home|address|city|moved)\b", r"住|搬|家在|城市"),
    "work": (r"\b(?:work|job|employer|company|office)\b", r"工作|上班|公司|单位"),
    "partner": (
        r"\b(?:partner|girlfriend|boyfriend|wife|husband|dating|married)\b",
        r"对象|女朋友|男朋友|老婆|老公|伴侣|结婚",
    ),
    "vehicle": (r"\b(?:car|drive|drives|driving|vehicle)\b", r"车"),
    "manager": (r"\b(?:manager|boss|report)\b", r"经理|老板|领导|上司"),
    "phone": (r"\b(?:phone|mobile)\b", r"手机"),
    "exercise_days": (r"\b(?:gym|days|exercise|train)\b", r"健身|锻炼|哪天|周几|星期几"),
    "diet": (r"\b(?:diet|eat)\b", r"饮食|吃"),
}


def attributes_of(text: str) -> frozenset[str]:
    """The kinds of attribute a query asks about: what a statement of it would say, or the
    looser words a question uses."""
    zh = 1 if _CJK.search(text) else 0
    stated = {name for name, patterns in ATTRIBUTES.items() if patterns[zh].search(text)}
    asked = {name for name, words in _ASKED.items() if re.search(words[zh], text, re.I)}
    return frozenset(stated | asked)
