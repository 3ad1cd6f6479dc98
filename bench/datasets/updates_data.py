"""The knowledge-update dev set: a user's state changes among everyday chatter.

Each case is one user: a statement of an attribute of theirs (where they live, their job,
partner, car, manager, diet, phone, gym days, languages, pets, a favourite), everyday
noise, a later statement that replaces it (or, for additive cases, adds to it), more noise,
and questions asked after both: one about the present, and for some replacing cases one
about the past ("where did the user live in January?"). About a third of the updates carry
no cue word ("moved", "now", "换成"): only the time order tells them apart.

``python bench/datasets/updates_data.py`` writes ``bench/data/updates/cases.json`` (seeded, so the
file is reproducible); ``bench/updates.py`` runs it. Values are drawn from pools per case,
so the same template gives different cases; the maintainers' held-out set is of the same
kind but not these sentences.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "data" / "updates" / "cases.json"
SEED = 20

# (attribute, kind, old statement, updates [cue..., no cue], current question, past question,
#  value pool); {a} is the old value, {b} the new one
EN: list[dict[str, Any]] = [
    {
        "attribute": "residence",
        "old": "I live in {a}, in a small flat near the river.",
        "new": [
            "I moved last month, I live in {b} now.",
            "Finally relocated to {b}, the boxes are still everywhere.",
            "My flat in {b} gets great light in the mornings, I love living here.",
        ],
        "question": "Where does the user live?",
        "past": "Where did the user live in January?",
        "values": ["Beijing", "Shanghai", "Berlin", "Lisbon", "Toronto", "Austin", "Denver"],
    },
    {
        "attribute": "employer",
        "old": "I work at {a} as a data analyst.",
        "new": [
            "I switched jobs, I am at {b} now.",
            "I quit {a} and joined {b} last week.",
            "First week at {b} went well, the team there is friendly.",
        ],
        "question": "Where does the user work?",
        "past": "Where did the user work in January?",
        "values": ["Northwind", "Globex", "Initech", "Acme Corp", "Contoso", "Hooli"],
    },
    {
        "attribute": "partner",
        "old": "My girlfriend {a} and I have been together for two years.",
        "new": [
            "{a} and I broke up; I am seeing {b} now.",
            "My girlfriend {b} cooked dinner for my parents on Sunday.",
        ],
        "question": "Who is the user's girlfriend?",
        "past": None,
        "values": ["Emma", "Sofia", "Hannah", "Chloe", "Maya", "Olivia"],
    },
    {
        "attribute": "car",
        "old": "I drive a {a} to work every day.",
        "new": [
            "I sold my car and switched to a {b}.",
            "Picked up my {b} from the dealer on Friday, it drives beautifully.",
        ],
        "question": "What car does the user drive?",
        "past": "What car did the user drive in January?",
        "values": ["Honda Civic", "Toyota Corolla", "Tesla Model 3", "Mazda 3", "VW Golf"],
    },
    {
        "attribute": "manager",
        "old": "My manager is {a}, she is very supportive.",
        "new": [
            "After the reorg {b} is my manager now.",
            "{b} took over our team and I report to him since March.",
        ],
        "question": "Who is the user's manager?",
        "past": None,
        "values": ["Laura", "Priya", "Diane", "Marcus", "Kenji", "Tom"],
    },
    {
        "attribute": "diet",
        "old": "I follow a {a} diet.",
        "new": [
            "I changed my diet, I am on a {b} diet these days.",
            "Three weeks into eating {b} and I have more energy than ever.",
        ],
        "question": "What diet does the user follow?",
        "past": None,
        "values": ["keto", "paleo", "Mediterranean", "vegan", "pescatarian"],
    },
    {
        "attribute": "phone",
        "old": "My phone is a {a}.",
        "new": [
            "I switched to a {b} and gave the old phone to my sister.",
            "Got a {b} for my birthday and moved all my apps over to it.",
        ],
        "question": "What phone does the user use?",
        "past": None,
        "values": ["Pixel 7", "iPhone 13", "Galaxy S22", "OnePlus 11", "Xperia 5"],
    },
    {
        "attribute": "gym_days",
        "old": "I go to the gym on {a}.",
        "new": [
            "I changed my gym days, I go on {b} now.",
            "Gym is on {b} for me from this month.",
        ],
        "question": "Which days does the user go to the gym?",
        "past": None,
        "values": [
            "Mondays and Wednesdays",
            "Tuesdays and Thursdays",
            "weekends",
            "Fridays",
        ],
    },
    {
        "attribute": "favourite_city",
        "old": "I like {a} more than any other city.",
        "new": ["I now like {b} best of all cities."],
        "question": "Which city does the user like best?",
        "past": None,
        "values": ["Beijing", "Shanghai", "Kyoto", "Paris", "Vienna"],
    },
    {
        "attribute": "languages",
        "additive": True,
        "old": "I speak {a} at home.",
        "new": ["I can also speak {b} fluently now after two years of lessons."],
        "question": "What languages does the user speak?",
        "past": None,
        "values": ["Spanish", "French", "German", "Japanese", "Italian"],
    },
    {
        "attribute": "pets",
        "additive": True,
        "old": "I have a cat called {a}.",
        "new": ["We adopted a second cat, {b}, so {a} has company."],
        "question": "What pets does the user have?",
        "past": None,
        "values": ["Luna", "Milo", "Oliver", "Nala", "Simba", "Cleo"],
    },
]

ZH: list[dict[str, Any]] = [
    {
        "attribute": "residence",
        "old": "我住在{a}，离公司不远。",
        "new": [
            "我上个月搬家了，现在住在{b}。",
            "我搬到{b}了，箱子还没拆完。",
            "{b}这边的房子采光很好，住着很舒服。",
        ],
        "question": "用户住在哪里？",
        "past": "1月份用户住在哪里？",
        "values": ["北京", "上海", "杭州", "成都", "深圳", "南京"],
    },
    {
        "attribute": "employer",
        "old": "我在{a}上班，做数据分析。",
        "new": [
            "我跳槽了，现在在{b}工作。",
            "上周我在{b}正式入职，同事都挺好的。",
        ],
        "question": "用户在哪家公司工作？",
        "past": "1月份用户在哪家公司工作？",
        "values": ["腾讯", "阿里巴巴", "字节跳动", "华为", "小米", "京东"],
    },
    {
        "attribute": "partner",
        "old": "我女朋友叫{a}，我们在一起两年了。",
        "new": [
            "我和{a}分手了，现在的女朋友是{b}。",
            "周末女朋友{b}陪我去看了我爸妈。",
        ],
        "question": "用户的女朋友是谁？",
        "past": None,
        "values": ["小雨", "晓晴", "佳怡", "思琪", "梦瑶"],
    },
    {
        "attribute": "car",
        "old": "我开的是一辆{a}。",
        "new": ["我把车换成了{b}。", "刚提了一辆{b}，开起来很顺。"],
        "question": "用户开什么车？",
        "past": "1月份用户开什么车？",
        "values": ["大众朗逸", "丰田卡罗拉", "比亚迪汉", "特斯拉Model 3", "本田雅阁"],
    },
    {
        "attribute": "manager",
        "old": "我的经理是{a}，人很好。",
        "new": ["组织调整以后，我的经理换成了{b}。", "现在我直接向{b}汇报工作。"],
        "question": "用户的经理是谁？",
        "past": None,
        "values": ["王强", "李娜", "张伟", "刘洋", "陈静"],
    },
    {
        "attribute": "diet",
        "old": "我在执行{a}饮食。",
        "new": ["我不再吃{a}饮食了，改成了{b}饮食。", "最近一直按{b}饮食吃，精神好多了。"],
        "question": "用户现在是什么饮食？",
        "past": None,
        "values": ["生酮", "地中海", "低碳水", "高蛋白"],
    },
    {
        "attribute": "phone",
        "old": "我用的手机是{a}。",
        "new": ["我换成了{b}手机，旧的给我妹妹了。", "生日收到一部{b}，数据都迁过去了。"],
        "question": "用户用什么手机？",
        "past": None,
        "values": ["华为Mate 60", "小米14", "iPhone 15", "OPPO Find X7", "vivo X100"],
    },
    {
        "attribute": "gym_days",
        "old": "我每周{a}去健身房。",
        "new": ["我把健身时间改到了每周{b}。", "这个月开始我每周{b}去健身房。"],
        "question": "用户每周哪几天去健身房？",
        "past": None,
        "values": ["一和三", "二和四", "周末", "五"],
    },
    {
        "attribute": "favourite_city",
        "old": "我喜欢{a}，觉得那里最有意思。",
        "new": ["我现在更喜欢{b}了。"],
        "question": "用户最喜欢哪个城市？",
        "past": None,
        "values": ["北京", "上海", "西安", "厦门", "重庆"],
    },
    {
        "attribute": "languages",
        "additive": True,
        "old": "我会说{a}。",
        "new": ["学了两年，我现在也会说{b}了。"],
        "question": "用户会说哪些语言？",
        "past": None,
        "values": ["英语", "日语", "法语", "德语", "韩语"],
    },
    {
        "attribute": "pets",
        "additive": True,
        "old": "我养了一只猫，叫{a}。",
        "new": ["我们又领养了一只猫，叫{b}，给{a}做个伴。"],
        "question": "用户养了哪些宠物？",
        "past": None,
        "values": ["咪咪", "球球", "豆豆", "花花", "团团"],
    },
]

NOISE = {
    "en": [
        "The weather was lovely today, we had lunch outside.",
        "I watched a documentary about octopuses last night.",
        "Can you remind me to buy milk tomorrow?",
        "My sister's birthday party was a lot of fun.",
        "I am reading a mystery novel, it is hard to put down.",
        "Traffic was terrible this morning.",
        "We tried a new ramen place downtown, the broth was great.",
        "I need to renew my passport before the summer.",
        "The football match went to penalties, what a game.",
        "I baked banana bread with my niece on Saturday.",
        "My laptop battery is draining fast lately.",
        "I finished a 1000-piece puzzle over the weekend.",
        "The dentist said my teeth look fine.",
        "I started a podcast about history, episode two is out.",
        "It rained all weekend so we stayed in and played board games.",
    ],
    "zh": [
        "今天天气不错，中午我们在外面吃的饭。",
        "昨晚看了一部关于章鱼的纪录片。",
        "明天提醒我买牛奶。",
        "我妹妹的生日聚会很热闹。",
        "最近在看一本推理小说，停不下来。",
        "早上路上堵得厉害。",
        "我们去市中心新开的拉面店吃了饭，汤很好喝。",
        "夏天之前我得去续签护照。",
        "昨晚的球赛踢到了点球大战。",
        "周六和侄女一起做了香蕉面包。",
        "笔记本电脑的电池最近掉电很快。",
        "周末拼完了一千片的拼图。",
        "牙医说我的牙齿没问题。",
        "我开了一个讲历史的播客，第二期上线了。",
        "周末一直下雨，我们在家玩桌游。",
    ],
}


def _episodes(
    rng: random.Random, lang: str, old: str, new: str, start: datetime
) -> list[dict[str, Any]]:
    """Noise, the old statement, noise, the new statement, noise; times increasing."""
    noise = rng.sample(NOISE[lang], 9)
    texts = [
        *[(t, "noise") for t in noise[:2]],
        (old, "old"),
        *[(t, "noise") for t in noise[2:6]],
        (new, "new"),
        *[(t, "noise") for t in noise[6:]],
    ]
    when = start
    out = []
    for text, role in texts:
        gap = timedelta(days=rng.randint(40, 60)) if role == "new" else timedelta(days=3)
        when += gap + timedelta(hours=rng.randint(0, 12))
        out.append({"content": text, "role": role, "occurred_at": when.isoformat()})
    return out


def _cases(lang: str, templates: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    cases = []
    for template in templates:
        for number, update in enumerate(template["new"]):
            for repeat in range(2):
                a, b = rng.sample(template["values"], 2)
                start = datetime(2026, 1, 2, 9, tzinfo=UTC) + timedelta(days=rng.randint(0, 6))
                episodes = _episodes(
                    rng, lang, template["old"].format(a=a), update.format(a=a, b=b), start
                )
                last = datetime.fromisoformat(episodes[-1]["occurred_at"])
                case: dict[str, Any] = {
                    "id": f"{lang}-{template['attribute']}-{number}-{repeat}",
                    "lang": lang,
                    "attribute": template["attribute"],
                    "kind": "additive" if template.get("additive") else "replace",
                    "cue": number < len(template["new"]) - 1 or len(template["new"]) == 1,
                    "old_value": a,
                    "new_value": b,
                    "episodes": episodes,
                    "question": template["question"],
                    "as_of": (last + timedelta(days=5)).isoformat(),
                }
                if template.get("past") and repeat == 0:
                    case["past_question"] = template["past"]
                cases.append(case)
    return cases


def main() -> None:
    rng = random.Random(SEED)
    cases = _cases("en", EN, rng) + _cases("zh", ZH, rng)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"seed": SEED, "cases": cases}, ensure_ascii=False, indent=1))
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
