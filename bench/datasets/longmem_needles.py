"""The long-memory benchmark's needles: facts stated once, and the questions that ask for them.

A needle kind is one personal fact with slots ("My locker combination at the gym is
{combo}."), one or more questions asking for it in other words ("What are the numbers to
open my gym locker?"), the slot whose value answers it, and short chat turns on the same
topic that do not state it (distractors: a memory a question could wrongly land on).
Slot values are drawn from the pools below with the dataset's seeded ``random.Random``.
The kinds themselves are data: ``bench/data/longmem/needle_kinds.json`` (hand-written for
this benchmark, like every text here).
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class NeedleKind:
    key: str
    needle: str  # format string over the slots
    questions: tuple[str, ...]  # paraphrases; one is drawn
    answer: str  # format string: the part of the needle a correct answer holds
    distractors: tuple[str, ...] = ()  # same topic, not the fact


@dataclass(frozen=True)
class Needle:
    key: str
    language: str
    text: str
    question: str
    answer: str
    distractor: str | None


def _digits(n: int) -> Callable[[random.Random], str]:
    return lambda r: "".join(r.choice(string.digits) for _ in range(n))


def _words(text: str) -> list[str]:
    return text.split()


def _pick(values: list[str]) -> Callable[[random.Random], str]:
    return lambda r: r.choice(values)


def _combo(r: random.Random) -> str:
    return "-".join(f"{r.randrange(1, 60):02d}" for _ in range(3))


def _code(r: random.Random, letters: int, digits: int) -> str:
    head = "".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(letters))
    return head + "".join(r.choice(string.digits) for _ in range(digits))


def _en_phone(r: random.Random) -> str:
    return f"0{r.randrange(7100, 7999)} {r.randrange(100, 999)} {r.randrange(100, 999)}"


def _zh_phone(r: random.Random) -> str:
    return f"1{r.choice('3589')}{r.randrange(0, 10)}{r.randrange(10**7, 10**8)}"


EN_FIRST = _words(
    "Priya Tomasz Ingrid Mateo Keiko Oluwaseun Dmitri Fiona Rafael Svetlana Connor Yasmin"
)
EN_SURNAMES = _words("Okafor Lindqvist Brennan Castellanos Whitfield Nakamura Oyelaran Haversham")
EN_SURNAMES += _words("Fitzgerald Kowalczyk Delacroix Abernathy Marchetti Thornbury")
EN_MONTHS = _words("January February March April May June July August September October")
EN_MONTHS += ["November", "December"]
EN_WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday")
EN_TIMES = ["7:30 am", "8:15 am", "9:45 am", "12:30 pm", "4:10 pm", "5:50 pm", "6:20 pm"]
EN_STREETS = [
    "Elm Row",
    "Harbour Lane",
    "Quarry Street",
    "Linden Avenue",
    "Mill Road",
    "Tanner Way",
]
EN_PLACES = ["Riverside Mall", "the Northgate centre", "the airport long-stay", "Central Station"]
EN_OBJECTS = ["blue flower pot", "cracked paving stone", "garden gnome", "boot scraper"]
EN_OBJECTS += ["rain barrel", "old watering can"]
EN_FLOWERS = ["peony", "sweet pea", "hydrangea", "freesia", "lily of the valley", "ranunculus"]
EN_DRUGS = ["penicillin", "codeine", "sulfa drugs", "aspirin", "amoxicillin", "naproxen"]
EN_BOOKS = ["The Salt Orchard", "Nine Winters in Tromso", "A Map of Small Rivers"]
EN_BOOKS += ["The Glassblower's Ledger", "Under the Copper Hill", "Letters from Halden"]
EN_RESTAURANTS = ["Lantern & Fig", "the Blue Heron", "Casa Morena", "Osteria Nove", "Juniper Hall"]
EN_TRAILS = ["the Kestrel Ridge loop", "the old mining track", "the Seven Springs path"]
EN_TRAILS += ["Hollow Beck trail", "the Fenwick escarpment walk"]
EN_TOWNS = ["Aldbrook", "Penwarren", "Kirkhaven", "Stoneleigh", "Marlow Cross"]
EN_AIRLINES = ["Lufthansa", "KLM", "Qantas", "Air Canada", "Finnair", "Iberia"]
EN_CITIES = ["Lisbon", "Kyoto", "Reykjavik", "Vancouver", "Edinburgh", "Porto", "Hanoi"]
EN_PETS = ["Pickle", "Marmalade", "Captain", "Biscotti", "Juniper", "Waffles", "Noodle"]
EN_COLOURS = ["teal", "mustard yellow", "forest green", "burgundy", "navy", "coral"]

ZH_SURNAMES = ["欧阳", "司马", "上官", "诸葛", "慕容", "东方", "皇甫", "令狐", "公孙", "尉迟"]
ZH_SURNAMES += ["邵", "韦", "蒋", "樊", "祁", "冉", "阎", "柏"]
ZH_NAMES = ["林晓峰", "顾一鸣", "苏婉清", "贺子轩", "程雨桐", "邱志远", "宋佳怡", "韩东升"]
ZH_NAMES += ["曹梦瑶", "滕宇航", "骆嘉欣", "闫立新"]
ZH_MALLS = ["万象城", "大悦城", "龙湖天街", "银泰百货", "来福士", "太古里"]
ZH_CITIES = ["昆明", "青岛", "大理", "桂林", "哈尔滨", "泉州", "乌鲁木齐", "三亚"]
ZH_OBJECTS = ["那盆绿萝", "门口的脚垫", "旧鞋柜", "消防栓旁边的砖头", "信箱"]
ZH_FLOWERS = ["栀子花", "茉莉", "牡丹", "君子兰", "桂花", "山茶花"]
ZH_DRUGS = ["青霉素", "头孢", "阿司匹林", "布洛芬", "磺胺类药物", "链霉素"]
ZH_BOOKS = ["雾中的灯塔", "北方的河流", "盐与糖的年份", "第七个夏天", "山那边的邮局", "纸飞机"]
ZH_RESTAURANTS = ["湖边那家西餐厅", "一家叫“云上”的旋转餐厅", "老城区的私房菜馆", "海边的烧烤摊"]
ZH_TRAILS = ["鹰嘴岩环线", "古驿道", "七星溪步道", "松涛岭小路", "月亮湾栈道"]
ZH_PLACES = ["西山", "莫干山", "凤凰岭", "梧桐山", "灵山"]
ZH_PETS = ["糯米", "芝麻", "大黄", "布丁", "肉松", "花卷", "元宝"]
ZH_CLINICS = ["安康宠物医院", "瑞派宠物医院", "小区门口的宠物诊所", "爱心动物医院"]
ZH_WEEKDAYS = ["周一", "周二", "周三", "周四", "周五", "周六"]
ZH_TIMES = ["上午九点", "上午十点半", "下午两点", "下午三点一刻", "傍晚六点", "晚上七点半"]
ZH_STREETS = ["建设路", "桂花巷", "解放街", "东风路", "文昌里", "北门街"]
ZH_COMPANIES = ["易存", "安心仓", "随存随取", "格子仓"]
ZH_PROVINCES = ["京", "沪", "粤", "浙", "苏", "川", "鄂", "闽"]
ZH_COLOURS = ["墨绿色", "酒红色", "藏青色", "姜黄色", "雾霾蓝"]

POOLS: dict[str, Callable[[random.Random], str]] = {
    "combo": _combo,
    "d1": lambda r: str(r.randrange(2, 6)),
    "d2": lambda r: str(r.randrange(12, 98)),
    "d3": _digits(3),
    "d4": _digits(4),
    "d6": _digits(6),
    "d9": _digits(9),
    "shoe": lambda r: str(r.randrange(28, 38)),
    "psi": lambda r: str(r.randrange(30, 38)),
    "bar": lambda r: f"{r.randrange(22, 26) / 10:.1f}",
    "price": lambda r: str(r.randrange(29, 89)),
    "zh_price": lambda r: str(r.randrange(150, 480)),
    "day": lambda r: str(r.randrange(1, 29)),
    "month_no": lambda r: str(r.randrange(1, 13)),
    "code": lambda r: _code(r, 2, 6),
    "booking": lambda r: _code(r, 3, 5),
    "wifi": lambda r: (
        r.choice(["sunflower", "otterpond", "maplehouse", "quietfox"]) + _digits(4)(r)
    ),
    "zh_wifi": lambda r: r.choice(["laojia", "xiaoyuan", "tianjing", "nanfeng"]) + _digits(4)(r),
    "en_plate": lambda r: f"{_code(r, 2, 2)} {_code(r, 3, 0)}",
    "zh_plate": lambda r: r.choice(ZH_PROVINCES) + _code(r, 1, 0) + "·" + _code(r, 1, 4),
    "en_phone": _en_phone,
    "zh_phone": _zh_phone,
    "letter": lambda r: r.choice("ABCDEFGH"),
    "en_first": _pick(EN_FIRST),
    "en_surname": _pick(EN_SURNAMES),
    "en_month": _pick(EN_MONTHS),
    "en_weekday": _pick(EN_WEEKDAYS),
    "en_time": _pick(EN_TIMES),
    "en_street": _pick(EN_STREETS),
    "en_place": _pick(EN_PLACES),
    "en_object": _pick(EN_OBJECTS),
    "en_flower": _pick(EN_FLOWERS),
    "en_drug": _pick(EN_DRUGS),
    "en_book": _pick(EN_BOOKS),
    "en_restaurant": _pick(EN_RESTAURANTS),
    "en_trail": _pick(EN_TRAILS),
    "en_town": _pick(EN_TOWNS),
    "en_airline": _pick(EN_AIRLINES),
    "en_city": _pick(EN_CITIES),
    "en_pet": _pick(EN_PETS),
    "en_colour": _pick(EN_COLOURS),
    "year": lambda r: str(r.randrange(2009, 2022)),
    "zh_surname": _pick(ZH_SURNAMES),
    "zh_name": _pick(ZH_NAMES),
    "zh_mall": _pick(ZH_MALLS),
    "zh_city": _pick(ZH_CITIES),
    "zh_object": _pick(ZH_OBJECTS),
    "zh_flower": _pick(ZH_FLOWERS),
    "zh_drug": _pick(ZH_DRUGS),
    "zh_book": _pick(ZH_BOOKS),
    "zh_restaurant": _pick(ZH_RESTAURANTS),
    "zh_trail": _pick(ZH_TRAILS),
    "zh_place": _pick(ZH_PLACES),
    "zh_pet": _pick(ZH_PETS),
    "zh_clinic": _pick(ZH_CLINICS),
    "zh_weekday": _pick(ZH_WEEKDAYS),
    "zh_time": _pick(ZH_TIMES),
    "zh_street": _pick(ZH_STREETS),
    "zh_company": _pick(ZH_COMPANIES),
    "zh_colour": _pick(ZH_COLOURS),
    "blood": _pick(["A", "B", "AB", "O"]),
    "rh": _pick(["positive", "negative"]),
}

KINDS_FILE = Path(__file__).resolve().parents[1] / "data" / "longmem" / "needle_kinds.json"


def load_kinds(path: Path = KINDS_FILE) -> dict[str, tuple[NeedleKind, ...]]:
    """The hand-written needle kinds by language ("en", "zh"), one JSON object each."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {
        language: tuple(
            NeedleKind(
                key=item["key"],
                needle=item["needle"],
                questions=tuple(item["questions"]),
                answer=item["answer"],
                distractors=tuple(item.get("distractors", ())),
            )
            for item in items
        )
        for language, items in raw.items()
    }


def make_needle(kind: NeedleKind, language: str, rng: random.Random) -> Needle:
    """The kind with its slots filled (each slot drawn once, left to right)."""
    names = [
        name
        for text in (kind.needle, *kind.questions, *kind.distractors)
        for _, name, _, _ in string.Formatter().parse(text)
        if name
    ]
    values = {name: POOLS[name](rng) for name in dict.fromkeys(names)}
    question = rng.choice(kind.questions).format(**values)
    distractor = rng.choice(kind.distractors).format(**values) if kind.distractors else None
    return Needle(
        key=kind.key,
        language=language,
        text=kind.needle.format(**values),
        question=question,
        answer=kind.answer.format(**values),
        distractor=distractor,
    )
