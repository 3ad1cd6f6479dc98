"""Generated texts for the benchmarks: bilingual memories and queries, seeded.

The memories and queries are about half Chinese, half English, built from templates with
varied slot values so that no two memories are the same; ``variant`` appends a
circumstance to a text (same meaning, different words) when more memories are needed
than the templates give.
"""

from __future__ import annotations

import random
from collections.abc import Callable

# --- generated memories ------------------------------------------------------------------

ZH_FOODS = ["花生", "海鲜", "牛奶", "鸡蛋", "芒果", "虾", "小麦", "香菜", "榴莲", "坚果", "大豆"]
ZH_CITIES = ["上海", "北京", "深圳", "杭州", "成都", "广州", "西安", "南京", "武汉", "厦门", "重庆"]
ZH_DRINKS = ["美式咖啡", "拿铁", "乌龙茶", "绿茶", "豆浆", "燕麦奶", "柠檬水", "普洱", "椰子水"]
ZH_NAMES = ["小李", "王芳", "张伟", "陈静", "刘洋", "赵敏", "周杰", "吴磊", "郑爽", "孙悦", "何平"]
ZH_RELATIONS = ["妈妈", "爸爸", "女儿", "儿子", "同事", "老板", "室友", "表哥", "妻子", "丈夫"]
ZH_HOBBIES = ["爬山", "游泳", "下围棋", "弹吉他", "跑步", "摄影", "做饭", "骑行", "瑜伽", "钓鱼"]
ZH_TIMES = ["明天", "后天", "下周一", "下周三", "周末", "下个月", "今晚", "下周五", "月底"]
ZH_MOODS = ["很开心", "有点累", "很焦虑", "挺放松", "很沮丧", "特别兴奋", "有些烦躁"]
ZH_REASONS = [
    "项目终于上线了",
    "加班到很晚",
    "孩子生病了",
    "升职加薪了",
    "航班延误了三个小时",
    "和朋友吵架了",
    "考试通过了",
    "搬家还没收拾完",
]
ZH_TASKS = ["交季度报告", "续签护照", "预约牙医", "给车做保养", "缴物业费", "准备面试", "退货"]
ZH_COMPANIES = ["字节跳动", "一家初创公司", "银行", "医院", "设计工作室", "律师事务所", "学校"]
ZH_JOBS = ["产品经理", "后端工程师", "会计", "护士", "设计师", "律师", "老师", "数据分析师"]
ZH_PETS = ["豆豆", "旺财", "咪咪", "球球", "可乐", "雪碧", "团子"]
ZH_PLACES = ["在家里", "在公司", "在地铁上", "在咖啡馆", "在机场", "在医院", "在健身房", "在车上"]
ZH_MOMENTS = ["早上", "中午", "下午", "傍晚", "晚上", "深夜", "周末", "假期里"]

EN_FOODS = ["peanuts", "shellfish", "dairy", "eggs", "gluten", "soy", "sesame", "tree nuts"]
EN_CITIES = ["Berlin", "Tokyo", "Seattle", "Lisbon", "Toronto", "Singapore", "Austin", "Dublin"]
EN_DRINKS = ["oat milk latte", "black coffee", "green tea", "sparkling water", "chai", "espresso"]
EN_NAMES = ["Alice", "Ben", "Carla", "David", "Emma", "Farid", "Grace", "Hugo", "Ivy", "Jonas"]
EN_RELATIONS = ["sister", "brother", "mother", "father", "manager", "roommate", "daughter", "son"]
EN_HOBBIES = ["hiking", "rock climbing", "chess", "painting", "cycling", "baking", "surfing"]
EN_TIMES = ["tomorrow", "next Monday", "next week", "this weekend", "next month", "on Friday"]
EN_MOODS = ["stressed", "relieved", "excited", "exhausted", "frustrated", "happy", "anxious"]
EN_REASONS = [
    "the launch went well",
    "the flight was cancelled",
    "the deadline moved up",
    "my kid has the flu",
    "I finally finished the thesis",
    "the landlord raised the rent",
    "the interview went great",
]
EN_TASKS = ["renew my passport", "file the expense report", "call the plumber", "book a dentist"]
EN_JOBS = ["data engineer", "nurse", "teacher", "product designer", "accountant", "lawyer"]
EN_PETS = ["Biscuit", "Luna", "Milo", "Pepper", "Nala", "Ziggy"]
EN_PLACES = [
    "at home",
    "at the office",
    "on the train",
    "at a cafe",
    "at the airport",
    "at the gym",
]
EN_MOMENTS = ["in the morning", "at lunch", "in the evening", "late at night", "on the weekend"]


Template = Callable[[random.Random], tuple[str, str]]

# one (text, category) maker per kind of memory; the slots are drawn left to right
_ZH_TEMPLATES: tuple[Template, ...] = (
    lambda r: (f"我对{r.choice(ZH_FOODS)}过敏", "constraint"),
    lambda r: (f"我对{r.choice(ZH_FOODS)}过敏，吃了会起疹子，点菜时请避开", "constraint"),
    lambda r: (f"喜欢喝{r.choice(ZH_DRINKS)}", "preference"),
    lambda r: (f"我每天早上都要喝一杯{r.choice(ZH_DRINKS)}，不加糖，少冰", "preference"),
    lambda r: (
        f"{r.choice(ZH_TIMES)}要去{r.choice(ZH_CITIES)}出差，帮我订靠窗的座位和离会场近的酒店，"
        f"预算每晚{r.randrange(3, 12) * 100}元以内",
        "task",
    ),
    lambda r: (
        f"提醒我{r.choice(ZH_TIMES)}给{r.choice(ZH_RELATIONS)}{r.choice(ZH_NAMES)}打电话",
        "task",
    ),
    lambda r: (f"今天心情{r.choice(ZH_MOODS)}，因为{r.choice(ZH_REASONS)}", "mood"),
    lambda r: (
        f"我在{r.choice(ZH_COMPANIES)}做{r.choice(ZH_JOBS)}，已经{r.randrange(1, 15)}年了",
        "fact",
    ),
    lambda r: (f"我家的狗叫{r.choice(ZH_PETS)}，今年{r.randrange(1, 14)}岁，怕打雷", "fact"),
    lambda r: (f"最近迷上了{r.choice(ZH_HOBBIES)}，每周{r.randrange(1, 6)}次", "preference"),
    lambda r: (f"{r.choice(ZH_TIMES)}之前必须{r.choice(ZH_TASKS)}，别让我忘了", "task"),
    lambda r: (
        f"{r.choice(ZH_RELATIONS)}{r.choice(ZH_NAMES)}{r.choice(ZH_TIMES)}过生日，想送她一本关于"
        f"{r.choice(ZH_HOBBIES)}的书，再订一家{r.choice(ZH_CITIES)}菜馆",
        "task",
    ),
    lambda r: (f"会议改到{r.choice(ZH_TIMES)}下午{r.randrange(1, 6)}点", "task"),
    lambda r: (
        f"用户说{r.choice(ZH_MOMENTS)}{r.choice(ZH_PLACES)}不方便接电话，有事先发消息，"
        f"紧急情况打给{r.choice(ZH_RELATIONS)}{r.choice(ZH_NAMES)}",
        "preference",
    ),
)
_EN_TEMPLATES: tuple[Template, ...] = (
    lambda r: (f"User is allergic to {r.choice(EN_FOODS)}", "constraint"),
    lambda r: (
        f"I am seriously allergic to {r.choice(EN_FOODS)}, so please check every restaurant "
        f"menu and warn me before ordering anything that might contain it",
        "constraint",
    ),
    lambda r: (f"I prefer {r.choice(EN_DRINKS)} in the morning", "preference"),
    lambda r: (
        f"Flying to {r.choice(EN_CITIES)} {r.choice(EN_TIMES)} for a conference; book an aisle "
        f"seat and a hotel under {r.randrange(8, 30) * 10} dollars a night close to the venue",
        "task",
    ),
    lambda r: (
        f"Remind me to call my {r.choice(EN_RELATIONS)} {r.choice(EN_NAMES)} {r.choice(EN_TIMES)}",
        "task",
    ),
    lambda r: (f"Feeling {r.choice(EN_MOODS)} today because {r.choice(EN_REASONS)}", "mood"),
    lambda r: (
        f"I work as a {r.choice(EN_JOBS)} and have done so for {r.randrange(1, 20)} years",
        "fact",
    ),
    lambda r: (
        f"My dog {r.choice(EN_PETS)} is {r.randrange(1, 14)} and hates thunderstorms",
        "fact",
    ),
    lambda r: (
        f"Lately I have been getting into {r.choice(EN_HOBBIES)}, about {r.randrange(1, 6)} "
        f"times a week",
        "preference",
    ),
    lambda r: (f"I need to {r.choice(EN_TASKS)} before {r.choice(EN_TIMES)}", "task"),
    lambda r: (
        f"My {r.choice(EN_RELATIONS)} {r.choice(EN_NAMES)} has a birthday {r.choice(EN_TIMES)}; "
        f"I want to get a book about {r.choice(EN_HOBBIES)} and reserve a table somewhere "
        f"quiet in {r.choice(EN_CITIES)}, nothing with {r.choice(EN_FOODS)} on the menu, for "
        f"{r.randrange(2, 9)} people at {r.randrange(6, 10)} pm",
        "task",
    ),
    lambda r: (f"Meeting moved to {r.choice(EN_TIMES)} at {r.randrange(1, 6)} pm", "task"),
    lambda r: (
        f"Do not call me {r.choice(EN_MOMENTS)} when I am {r.choice(EN_PLACES)}; send a message "
        f"instead, and for emergencies contact my {r.choice(EN_RELATIONS)} {r.choice(EN_NAMES)}",
        "preference",
    ),
)


def generate_memories(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` distinct (content, category) pairs, about half Chinese."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    attempts = 0
    while len(out) < count:
        attempts += 1
        if attempts > count * 200:
            raise RuntimeError(f"could not generate {count} distinct memories")
        for _retry in range(8):  # short templates run out of slot values first
            templates = _ZH_TEMPLATES if rng.random() < 0.5 else _EN_TEMPLATES
            text, category = rng.choice(templates)(rng)
            if text not in seen:
                break
        else:
            # add a distinguishing detail rather than give up on the template
            text = variant(text, rng.randrange(10_000))
            if text in seen:
                continue
        seen.add(text)
        out.append((text, category))
    return out


def _is_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def variant(text: str, number: int) -> str:
    """``text`` plus a short circumstance (place, time of day, a count): same meaning."""
    if _is_chinese(text):
        place = ZH_PLACES[number % len(ZH_PLACES)]
        moment = ZH_MOMENTS[(number // len(ZH_PLACES)) % len(ZH_MOMENTS)]
        rest = number // (len(ZH_PLACES) * len(ZH_MOMENTS))
        suffix = f"（{moment}{place}说的" + (f"，第{rest + 1}次提到）" if rest else "）")
        return text + suffix
    place = EN_PLACES[number % len(EN_PLACES)]
    moment = EN_MOMENTS[(number // len(EN_PLACES)) % len(EN_MOMENTS)]
    rest = number // (len(EN_PLACES) * len(EN_MOMENTS))
    suffix = f" (said {moment} {place}" + (f", mention {rest + 1})" if rest else ")")
    return text + suffix


# --- generated queries -------------------------------------------------------------------

# paraphrases: no keyword in common with the memories they should find
PARAPHRASE_QUERIES = [
    "饮食禁忌",
    "用户不能吃什么",
    "出行安排",
    "这周有什么待办事项",
    "最近情绪怎么样",
    "用户的职业是什么",
    "宠物的情况",
    "业余爱好",
    "早餐习惯",
    "家人的生日",
    "what can't the user eat",
    "upcoming travel plans",
    "what is on my to-do list",
    "how has the user been feeling lately",
    "what does the user do for a living",
    "tell me about the pet",
    "weekend hobbies",
    "morning routine",
    "when is the family celebration",
    "how should I contact the user",
]


def generate_queries(count: int, seed: int) -> list[str]:
    """Bilingual queries: about half reuse memory keywords, the rest are paraphrases."""
    rng = random.Random(seed)
    c = rng.choice
    keyword_makers = [
        lambda: f"{c(ZH_FOODS)}过敏",
        lambda: f"去{c(ZH_CITIES)}出差",
        lambda: f"喝{c(ZH_DRINKS)}",
        lambda: f"给{c(ZH_NAMES)}打电话",
        lambda: f"{c(ZH_TIMES)}的会议",
        lambda: f"{c(ZH_HOBBIES)}",
        lambda: f"allergic to {c(EN_FOODS)}",
        lambda: f"trip to {c(EN_CITIES)}",
        lambda: f"call {c(EN_NAMES)}",
        lambda: f"{c(EN_HOBBIES)} every week",
        lambda: f"{c(EN_DRINKS)}",
        lambda: f"meeting {c(EN_TIMES)}",
    ]
    queries = []
    for _ in range(count):
        if rng.random() < 0.5:
            queries.append(c(keyword_makers)())
        else:
            queries.append(c(PARAPHRASE_QUERIES))
    return queries
