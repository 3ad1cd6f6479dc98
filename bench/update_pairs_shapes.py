"""The update-shapes set: update pairs in shapes the precision set's templates lack.

``bench/data/updates/pairs.json`` (``bench/update_pairs_data.py``) fills a few templates
per attribute; a rule fitted on its ``fit`` half can learn those templates. This set is
written sentence by sentence, each pair its own, in other phrasings: colloquial English
("these days I...", "I'm now at...", "we relocated to...") and Chinese ("搬到了",
"现在在...上班", "改喝...", "换了份工作，去了..."), genuine updates with and without a cue
word, and negatives of kinds the templates do not have:

- ``other_person``: the same attribute of someone else, often with a cue word ("My
  brother lives in Bristol now", "我妈改喝茶了");
- ``consistent``: the same thing again, elaborated, naming no new value;
- ``restated``: the older value said again, with a cue word ("Still in Leeds, still
  loving it", "现在还在腾讯上班");
- ``question``: a question about another value ("Should I move to Bristol?");
- ``hypothetical``: a wish, plan or condition ("If I moved to Galway...", "我想搬到大理");
- ``past_only``: a value that held long ago ("I lived in Edinburgh as a kid");
- ``unrelated``: about something else, sharing a word or a cue ("We moved the sofa").

Genuine updates are ``update_cue`` or ``update_plain`` by the precision set's own cue
words (``update_pairs_data.CUES``), so both sets define a cue alike. The pairs share the
precision set's format and run on its bench::

    .venv/bin/python bench/update_pairs_shapes.py   # writes bench/data/updates/shapes.json
    .venv/bin/python bench/update_pairs.py --pairs bench/data/updates/shapes.json \
        --out bench/results/update_shapes.json

Every pair has ``split`` ``shapes``. The set is a development set: rules may be fitted on
it, so its figures are reported apart from the precision set's held-out half.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from update_pairs_data import CUES, NOISE, NOISE_PER_PAIR

OUT = Path(__file__).resolve().parent / "data" / "updates" / "shapes.json"
SEED = 41
NEGATIVE = (
    "unrelated",
    "consistent",
    "other_person",
    "restated",
    "question",
    "hypothetical",
    "past_only",
)
UPDATE = "update"  # written as one kind; split into update_cue / update_plain by CUES

QUESTIONS = {
    "en": {
        "residence": "Where do I live?",
        "employer": "Where do I work?",
        "partner": "Who is my partner?",
        "car": "What car do I drive?",
        "phone": "What phone do I use?",
        "diet": "What diet am I on?",
        "drink": "What do I drink in the morning?",
        "exercise": "What exercise do I do?",
        "language_learning": "What language am I learning?",
        "commute": "How do I get to work?",
        "hair_colour": "What colour is my hair?",
        "manager": "Who is my manager?",
        "team": "Which team do I support?",
        "bank": "Which bank am I with?",
        "doctor": "Who is my doctor?",
        "hobby": "What's my hobby?",
        "favourite_food": "What's my favourite dish?",
        "school": "Where do I study?",
        "sleep": "What time do I wake up?",
    },
    "zh": {
        "residence": "我住在哪里？",
        "employer": "我在哪里上班？",
        "partner": "我的对象是谁？",
        "car": "我开什么车？",
        "phone": "我用什么手机？",
        "diet": "我的饮食习惯是什么？",
        "drink": "我早上喝什么？",
        "exercise": "我做什么运动？",
        "language_learning": "我在学什么语言？",
        "commute": "我怎么去上班？",
        "hair_colour": "我的头发是什么颜色？",
        "manager": "我的领导是谁？",
        "team": "我支持哪支球队？",
        "bank": "我用哪家银行？",
        "doctor": "我的医生是谁？",
        "hobby": "我的爱好是什么？",
        "favourite_food": "我最爱吃什么？",
        "school": "我在哪里读书？",
        "sleep": "我几点起床？",
    },
}

# (attribute, category, older, newer); category UPDATE for a genuine update
PAIRS: dict[str, list[tuple[str, str, str, str]]] = {
    "en": [
        # genuine updates
        (
            "residence",
            UPDATE,
            "I live in Manchester with two flatmates.",
            "These days I rent a little place in Bristol near the harbour.",
        ),
        (
            "residence",
            UPDATE,
            "Our home is in Porto, near the old town.",
            "We relocated to Valencia over the summer.",
        ),
        (
            "residence",
            UPDATE,
            "I've lived in Leeds for six years.",
            "Loving my flat in Glasgow, the view of the river is unreal.",
        ),
        (
            "residence",
            UPDATE,
            "I live in Cork, close to the English Market.",
            "Getting used to the trams here in Zurich after years in Cork.",
        ),
        (
            "residence",
            UPDATE,
            "I'm based in Austin for work.",
            "Home is Denver these days, right by the mountains.",
        ),
        (
            "employer",
            UPDATE,
            "I work for Deloitte as an auditor.",
            "I'm now at KPMG, same kind of work but better hours.",
        ),
        (
            "employer",
            UPDATE,
            "I'm a nurse at St Mary's Hospital.",
            "Switched to the Royal Infirmary, the night shifts are fewer.",
        ),
        (
            "employer",
            UPDATE,
            "I work at Spotify in the data team.",
            "My first week at Shopify was mostly laptop setup.",
        ),
        (
            "employer",
            UPDATE,
            "I work for the city council in planning.",
            "Accepted the offer from Arup, my desk there is by the window.",
        ),
        (
            "employer",
            UPDATE,
            "I work at Zalando on the checkout team.",
            "Handed in my badge at Zalando and joined Booking.com.",
        ),
        (
            "partner",
            UPDATE,
            "I'm dating Marco, we met at a climbing gym.",
            "My girlfriend Hannah cooked dinner for my parents last night.",
        ),
        (
            "partner",
            UPDATE,
            "My wife is Claire, we married in 2015.",
            "Claire and I divorced; I'm engaged to Nadia now.",
        ),
        (
            "car",
            UPDATE,
            "I drive an old Volvo estate.",
            "Picked up a Tesla Model 3 last week, the Volvo went to my nephew.",
        ),
        (
            "car",
            UPDATE,
            "I drive a Skoda Octavia to work.",
            "Driving the Hyundai Ioniq every day now, charging it at home.",
        ),
        (
            "car",
            UPDATE,
            "My car is a Renault Clio.",
            "The Peugeot 208 I bought handles the hills much better.",
        ),
        (
            "phone",
            UPDATE,
            "I use a Samsung Galaxy S21.",
            "These days I'm on an iPhone 15, the battery lasts longer.",
        ),
        (
            "phone",
            UPDATE,
            "My phone is a Pixel 6.",
            "Took my first photos with the OnePlus 12 at the beach, so sharp.",
        ),
        (
            "diet",
            UPDATE,
            "I'm vegan and have been for three years.",
            "Eating pescatarian these days, fish twice a week.",
        ),
        (
            "diet",
            UPDATE,
            "I follow a keto diet.",
            "My doctor put me on a Mediterranean diet and I'm enjoying it.",
        ),
        (
            "drink",
            UPDATE,
            "I drink two cups of coffee every morning.",
            "I switched to green tea in the mornings, no more jitters.",
        ),
        (
            "drink",
            UPDATE,
            "Espresso is my morning drink.",
            "Mornings start with a matcha latte for me.",
        ),
        (
            "exercise",
            UPDATE,
            "I run every morning before work.",
            "Gave up running after my knee injury, cycling instead.",
        ),
        (
            "language_learning",
            UPDATE,
            "I'm learning German on Duolingo.",
            "I'm now taking Portuguese lessons instead of German.",
        ),
        (
            "commute",
            UPDATE,
            "I take the bus to work.",
            "Cycling to work every day since spring, so much faster.",
        ),
        ("commute", UPDATE, "I drive to the office.", "I take the train to the office these days."),
        (
            "hair_colour",
            UPDATE,
            "My hair is dyed pink.",
            "Went back to my natural brown hair, so much less upkeep.",
        ),
        (
            "manager",
            UPDATE,
            "My boss is Alan, he's very hands-off.",
            "Our new team lead, Grace, started on Monday and I report to her.",
        ),
        (
            "manager",
            UPDATE,
            "My manager is Priya.",
            "My manager Tomasz approved my leave request in five minutes.",
        ),
        (
            "team",
            UPDATE,
            "I support Chelsea, I go to most home games.",
            "I follow Everton now, my whole family does.",
        ),
        (
            "bank",
            UPDATE,
            "My current account is with Lloyds.",
            "All my money is at Starling now, I closed everything else.",
        ),
        (
            "bank",
            UPDATE,
            "I bank with NatWest.",
            "My salary lands in my Monzo account every month.",
        ),
        (
            "doctor",
            UPDATE,
            "My doctor is Dr Evans.",
            "Dr Singh, my GP, referred me to a physio for my back.",
        ),
        (
            "hobby",
            UPDATE,
            "Pottery is my main hobby.",
            "Most of my free time goes on birdwatching these days.",
        ),
        (
            "favourite_food",
            UPDATE,
            "My favourite dish is lasagne.",
            "Ramen is my favourite dish nowadays.",
        ),
        (
            "school",
            UPDATE,
            "I study law at King's College.",
            "I'm at Durham University now, doing a history degree.",
        ),
        (
            "sleep",
            UPDATE,
            "I wake up at 6am every day.",
            "I wake up at 8am now that I work from home.",
        ),
        # the same attribute of someone else
        (
            "residence",
            "other_person",
            "I live in Manchester with two flatmates.",
            "My brother lives in Bristol now, near the harbour.",
        ),
        (
            "employer",
            "other_person",
            "I work for Deloitte as an auditor.",
            "My wife just started at KPMG, she's thrilled.",
        ),
        (
            "car",
            "other_person",
            "I drive an old Volvo estate.",
            "My neighbour drives a Tesla Model 3 and charges it on the street.",
        ),
        (
            "drink",
            "other_person",
            "I drink two cups of coffee every morning.",
            "My husband switched to green tea in the mornings.",
        ),
        (
            "diet",
            "other_person",
            "I'm vegan and have been for three years.",
            "My flatmate has gone pescatarian for the new year.",
        ),
        (
            "phone",
            "other_person",
            "I use a Samsung Galaxy S21.",
            "My dad is on an iPhone 15 now and loves the camera.",
        ),
        (
            "manager",
            "other_person",
            "My boss is Alan, he's very hands-off.",
            "Jess's manager is Grace, and they get on really well.",
        ),
        # consistent elaborations
        (
            "residence",
            "consistent",
            "Our home is in Porto, near the old town.",
            "The tram up to the castle in Porto is always packed with tourists.",
        ),
        (
            "employer",
            "consistent",
            "I work for Deloitte as an auditor.",
            "Busy season at Deloitte means twelve-hour days again.",
        ),
        (
            "car",
            "consistent",
            "I drive a Skoda Octavia to work.",
            "Took the Skoda through the car wash, it's gleaming now.",
        ),
        (
            "partner",
            "consistent",
            "My wife is Claire, we married in 2015.",
            "Claire and I are celebrating ten years together next month.",
        ),
        (
            "commute",
            "consistent",
            "I take the bus to work.",
            "The bus was twenty minutes late again this morning.",
        ),
        # the same value said again
        (
            "residence",
            "restated",
            "I've lived in Leeds for six years.",
            "Still in Leeds, still loving it.",
        ),
        (
            "employer",
            "restated",
            "I work at Spotify in the data team.",
            "These days I'm still at Spotify, five years now.",
        ),
        (
            "drink",
            "restated",
            "Espresso is my morning drink.",
            "Nowadays I still can't start the day without an espresso.",
        ),
        # questions
        (
            "residence",
            "question",
            "I live in Manchester with two flatmates.",
            "Should I move to Bristol next year?",
        ),
        (
            "car",
            "question",
            "I drive an old Volvo estate.",
            "Is a Tesla Model 3 worth it for a long commute?",
        ),
        # hypotheticals and plans
        (
            "residence",
            "hypothetical",
            "I live in Cork, close to the English Market.",
            "If I moved to Galway I'd be closer to the sea.",
        ),
        (
            "employer",
            "hypothetical",
            "I work at Zalando on the checkout team.",
            "I'm thinking about applying to Booking.com next year.",
        ),
        (
            "drink",
            "hypothetical",
            "I drink two cups of coffee every morning.",
            "Maybe I should switch to green tea, I sleep so badly.",
        ),
        (
            "residence",
            "hypothetical",
            "I'm based in Austin for work.",
            "One day I'd love to live in Denver, near the mountains.",
        ),
        # past only
        (
            "residence",
            "past_only",
            "I live in Manchester with two flatmates.",
            "I lived in Edinburgh as a kid and still miss it.",
        ),
        (
            "employer",
            "past_only",
            "I work at Spotify in the data team.",
            "Back in college I worked at a Starbucks in Austin.",
        ),
        (
            "car",
            "past_only",
            "I drive a Skoda Octavia to work.",
            "My first car was a rusty Fiat Panda with no radio.",
        ),
        # unrelated, sharing a word or a cue
        (
            "residence",
            "unrelated",
            "I live in Manchester with two flatmates.",
            "We moved the sofa to the other wall, the room feels bigger.",
        ),
        (
            "employer",
            "unrelated",
            "I work for Deloitte as an auditor.",
            "I switched to a standing desk and my back thanks me.",
        ),
        (
            "partner",
            "unrelated",
            "My wife is Claire, we married in 2015.",
            "I'm now reading a novel about a divorced detective in Oslo.",
        ),
        (
            "drink",
            "unrelated",
            "I drink two cups of coffee every morning.",
            "These days the mornings are so dark I need two alarms.",
        ),
        (
            "phone",
            "unrelated",
            "I use a Samsung Galaxy S21.",
            "Replaced my old laptop with a MacBook Air.",
        ),
    ],
    "zh": [
        # genuine updates
        ("residence", UPDATE, "我住在南京，离公司很近。", "我搬到了苏州，房租便宜多了。"),
        ("residence", UPDATE, "我家在郑州。", "现在住在长沙，天天吃辣。"),
        ("residence", UPDATE, "我住在北京朝阳区。", "在深圳租的房子终于收拾好了。"),
        ("residence", UPDATE, "我住在成都。", "在重庆安家了，房子买在江北。"),
        ("residence", UPDATE, "我们住在天津。", "我们搬去了大连，离海边很近。"),
        ("employer", UPDATE, "我在华为上班。", "现在在字节跳动上班，挺忙的。"),
        ("employer", UPDATE, "我在德勤做审计。", "换了份工作，去了普华永道。"),
        ("employer", UPDATE, "我在阿里巴巴工作。", "在小红书上班第一周，同事都挺好。"),
        ("employer", UPDATE, "我在美团做产品经理。", "入职拼多多快一个月了。"),
        ("drink", UPDATE, "我每天早上喝咖啡。", "改喝茶了，咖啡喝多了心慌。"),
        ("drink", UPDATE, "我早上一般喝豆浆。", "每天早上一杯燕麦奶，舒服。"),
        ("drink", UPDATE, "我平时喝绿茶。", "这段时间早上天天喝美式。"),
        ("car", UPDATE, "我开的是大众帕萨特。", "新提了一辆特斯拉，开着很安静。"),
        ("car", UPDATE, "我开丰田凯美瑞。", "我的车现在是比亚迪汉，电车真省钱。"),
        ("phone", UPDATE, "我用的是iPhone 13。", "现在用华为Mate 60，信号好多了。"),
        ("phone", UPDATE, "我用的是小米13。", "换了个vivo X100，拍照不错。"),
        ("partner", UPDATE, "我男朋友叫李明。", "我和王浩在一起半年了，他对我很好。"),
        ("diet", UPDATE, "我吃素好几年了。", "现在什么都吃，不吃素了。"),
        ("commute", UPDATE, "我每天坐地铁上班。", "这阵子都是骑电动车去公司。"),
        ("language_learning", UPDATE, "我在学德语。", "德语放弃了，改学意大利语。"),
        ("manager", UPDATE, "我的经理是张强。", "新来的领导刘芳人挺好，我现在向她汇报。"),
        ("team", UPDATE, "我是广州队的球迷。", "现在我支持北京国安了。"),
        ("hair_colour", UPDATE, "我的头发是黑色的。", "头发染成了蓝灰色，同事都说好看。"),
        ("favourite_food", UPDATE, "我最爱吃烧烤。", "最近最爱吃酸菜鱼，一周三次。"),
        ("school", UPDATE, "我在上海交通大学读研。", "我在同济大学读研，实验室挺忙。"),
        ("bank", UPDATE, "我的工资卡是中国银行的。", "工资现在发到招商银行的卡里了。"),
        ("doctor", UPDATE, "我的家庭医生是王医生。", "现在看病都找社区医院的刘医生。"),
        ("sleep", UPDATE, "我每天早上六点起床。", "现在每天八点起床，睡到自然醒。"),
        ("hobby", UPDATE, "我的爱好是钓鱼。", "业余时间都在练书法，钓鱼不去了。"),
        ("exercise", UPDATE, "我每周游三次泳。", "游泳不去了，现在每周打三次羽毛球。"),
        # the same attribute of someone else
        (
            "residence",
            "other_person",
            "我住在南京，离公司很近。",
            "我妹妹搬到了苏州，房租便宜多了。",
        ),
        ("employer", "other_person", "我在华为上班。", "我老公现在在字节跳动上班。"),
        ("drink", "other_person", "我每天早上喝咖啡。", "我妈改喝茶了，说咖啡伤胃。"),
        ("car", "other_person", "我开的是大众帕萨特。", "我哥提了一辆特斯拉，天天炫耀。"),
        ("phone", "other_person", "我用的是iPhone 13。", "我爸换了个华为Mate 60。"),
        ("manager", "other_person", "我的经理是张强。", "我老婆的领导是刘芳，特别严格。"),
        # consistent elaborations
        ("residence", "consistent", "我家在郑州。", "郑州今天下了好大的雪。"),
        ("employer", "consistent", "我在德勤做审计。", "德勤年底特别忙，天天加班。"),
        ("car", "consistent", "我开的是大众帕萨特。", "帕萨特该保养了，周末去4S店。"),
        ("commute", "consistent", "我每天坐地铁上班。", "今天地铁特别挤，差点没挤上去。"),
        ("partner", "consistent", "我男朋友叫李明。", "李明给我做了一顿大餐。"),
        # the same value said again
        ("residence", "restated", "我住在南京，离公司很近。", "现在还住在南京，挺习惯的。"),
        ("employer", "restated", "我在华为上班。", "我现在在华为上班，快五年了。"),
        ("drink", "restated", "我平时喝绿茶。", "最近还是每天喝绿茶。"),
        # questions
        ("residence", "question", "我住在南京，离公司很近。", "要不要搬到苏州去呢？"),
        ("car", "question", "我开的是大众帕萨特。", "特斯拉值得买吗？"),
        # hypotheticals and plans
        ("residence", "hypothetical", "我住在北京朝阳区。", "我想搬到大理去，过慢一点的生活。"),
        ("employer", "hypothetical", "我在阿里巴巴工作。", "如果去腾讯工作，工资能多三成。"),
        ("drink", "hypothetical", "我每天早上喝咖啡。", "打算以后改喝茶。"),
        ("residence", "hypothetical", "我住在成都。", "要是能搬到重庆，离爸妈就近了。"),
        # past only
        ("residence", "past_only", "我住在南京，离公司很近。", "小时候我住在哈尔滨，冬天特别冷。"),
        ("employer", "past_only", "我在华为上班。", "大学的时候在肯德基打过工。"),
        ("car", "past_only", "我开丰田凯美瑞。", "我的第一辆车是一辆二手的桑塔纳。"),
        # unrelated, sharing a word or a cue
        ("residence", "unrelated", "我住在南京，离公司很近。", "我把沙发搬到了阳台边上。"),
        ("employer", "unrelated", "我在华为上班。", "换了个新的工作日程表，效率高多了。"),
        ("drink", "unrelated", "我每天早上喝咖啡。", "最近开始每天早上跳绳。"),
        ("phone", "unrelated", "我用的是iPhone 13。", "换了个新的耳机，降噪很好。"),
        ("hobby", "unrelated", "我的爱好是钓鱼。", "今天去超市买了一条鱼。"),
    ],
}


def _category(lang: str, category: str, newer: str) -> str:
    if category != UPDATE:
        return category
    return "update_cue" if CUES[lang].search(newer) else "update_plain"


def build() -> dict[str, Any]:
    rng = random.Random(SEED)
    pairs: list[dict[str, Any]] = []
    for lang, rows in PAIRS.items():
        seen: set[tuple[str, str]] = set()
        for number, (attribute, category, older, newer) in enumerate(rows):
            if category != UPDATE and category not in NEGATIVE:
                raise ValueError(f"{lang} #{number}: unknown category {category!r}")
            if attribute not in QUESTIONS[lang]:
                raise ValueError(f"{lang} #{number}: no question for {attribute!r}")
            if (older, newer) in seen:
                raise ValueError(f"{lang} #{number}: the pair is there twice")
            seen.add((older, newer))
            kind = _category(lang, category, newer)
            pairs.append(
                {
                    "id": f"{lang}-shapes-{attribute}-{number}",
                    "lang": lang,
                    "split": "shapes",
                    "category": kind,
                    "negative": category != UPDATE,
                    "attribute": attribute,
                    "older": older,
                    "newer": newer,
                    "newer_has_cue": bool(CUES[lang].search(newer)),
                    "older_value": None,
                    "newer_value": None,
                    "question": QUESTIONS[lang][attribute],
                    "noise": rng.sample(NOISE[lang], NOISE_PER_PAIR),
                }
            )
    return {"seed": SEED, "categories": {"negative": list(NEGATIVE)}, "pairs": pairs}


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    counts: dict[str, int] = {}
    for p in data["pairs"]:
        key = f"{p['lang']}/{p['category']}"
        counts[key] = counts.get(key, 0) + 1
    print(f"wrote {len(data['pairs'])} pairs to {OUT}")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")


if __name__ == "__main__":
    main()
