"""Short chat turns for the long-memory benchmark, and the words around a long paste.

English short turns are what one speaker said in Multi-Session Chat dialogues (MSC, the
validation split under /work/shared/data/msc, see its README), mixed with requests to an
assistant written for this benchmark; Chinese short turns come from templates written for
this benchmark. Both are drawn with the dataset's seeded ``random.Random``.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

from datasets.longmem_code import Document

MSC_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "msc"
MSC_FILES = tuple(f"personasummary_session{n}_valid.jsonl" for n in (1, 2, 3, 4))

EN_REQUESTS = [
    "Can you help me write a short thank-you note to my {relation}?",
    "What's a quick dinner I can make with {food} and rice?",
    "Remind me to {task} tomorrow morning.",
    "I'm thinking about visiting {city} in {month}, any tips?",
    "Just finished a {n} km run, legs are jelly.",
    "How do you say 'see you next week' in Spanish?",
    "Work was exhausting today, back-to-back meetings until {hour}.",
    "Any podcast recommendations for a long drive?",
    "My {relation} is visiting this weekend, what should we do in town?",
    "Can you summarise the pros and cons of leasing a car?",
    "I keep waking up at {hour_am} am, any idea why?",
    "What's a polite way to decline a meeting invite?",
    "Had {food} for lunch, way too much of it.",
    "Is it worth learning {skill} at my age?",
    "Help me plan a packing list for {n} days in {city}.",
    "Thanks, that was really helpful!",
    "Ok, I'll try that and let you know.",
]
ZH_CHAT = [
    "今天{moment}{place}{event}，{feeling}。",
    "帮我写一段给{relation}的生日祝福，别太肉麻。",
    "明天要{task}，记得提醒我。",
    "最近在追一部{genre}剧，挺上头的。",
    "周末想带孩子去{spot}，你觉得怎么样？",
    "推荐几本适合睡前看的书吧。",
    "{food}怎么做才好吃？",
    "我打算{month}去{city}玩几天，有什么建议？",
    "今天加班到{hour}点，累死了。",
    "刚跑完{n}公里，腿都软了。",
    "天气预报说明天有雨，要不要带伞？",
    "老板让我{work}，有点头大。",
    "我想换个新手机，预算{budget}元左右，有推荐吗？",
    "晚饭吃了{food}，有点撑。",
    "{relation}今天{relation_event}。",
    "最近睡眠不太好，老是{hour_am}点就醒。",
    "帮我列一个去{city}出差的行李清单。",
    "这个月花钱有点多，得省着点了。",
    "学{skill}已经{n}个月了，进步挺慢的。",
    "我们组下周要{team_event}。",
    "谢谢，很有帮助！",
    "好的，我试试看再跟你说。",
    "怎么礼貌地拒绝一个会议邀请？",
    "开车去{city}大概要多久？",
]
WORDS = {
    "en": {
        "relation": ["sister", "neighbour", "boss", "aunt", "old roommate", "mentor"],
        "food": ["chickpeas", "spinach", "leftover chicken", "tofu", "mushrooms"],
        "task": ["call the bank", "renew the parking permit", "return the library books"],
        "city": ["Seville", "Copenhagen", "Montreal", "Osaka", "Krakow", "Cape Town"],
        "month": ["April", "June", "September", "October"],
        "skill": ["the cello", "Japanese", "pottery", "coding", "sailing"],
        "hour": ["7 pm", "8 pm", "9 pm"],
        "hour_am": ["4", "5"],
    },
    "zh": {
        "moment": ["早上", "中午", "下午", "晚上"],
        "place": ["在地铁上", "在公司楼下", "在超市", "在小区门口", "在咖啡店"],
        "event": ["碰到了老同学", "排了好久的队", "被雨淋了", "捡到一只小猫", "听了一场讲座"],
        "feeling": ["挺开心的", "有点郁闷", "哭笑不得", "心情不错", "累得不想说话"],
        "relation": ["爸爸", "表姐", "老同学", "领导", "邻居阿姨"],
        "task": ["去银行办卡", "交水电费", "还图书馆的书", "去社区打疫苗", "给车年检"],
        "genre": ["悬疑", "古装", "职场", "家庭", "科幻"],
        "spot": ["科技馆", "动物园", "植物园", "郊野公园", "海洋馆"],
        "food": ["红烧肉", "酸菜鱼", "西红柿炒蛋", "麻辣香锅", "饺子"],
        "month": ["四月", "六月", "国庆", "年底"],
        "city": ["成都", "西安", "厦门", "长沙", "苏州", "重庆"],
        "hour": ["十", "十一", "十二"],
        "work": ["周末前交方案", "接手一个老项目", "给新人做培训", "写年终总结"],
        "budget": ["两千", "三千", "五千"],
        "relation_event": ["过生日", "搬新家", "住院了", "升职了", "来家里吃饭"],
        "hour_am": ["四", "五"],
        "skill": ["游泳", "日语", "吉他", "书法", "画画"],
        "team_event": ["去团建", "封闭开发", "做季度汇报", "搬工位"],
    },
}

INTROS = {
    "en": [
        "Here's the {thing} I mentioned, can you take a look?",
        "Pasting the {thing} below. What do you make of it?",
        "Can you go through this {thing} and tell me what stands out?",
        "I need a summary of this {thing}, it's long, sorry.",
    ],
    "zh": [
        "这是我说的那个{thing}，帮我看看？",
        "下面贴一下{thing}，你觉得有什么问题？",
        "帮我过一遍这份{thing}，挑重点说说。",
        "这份{thing}有点长，帮我总结一下。",
    ],
}
THINGS = {
    "en": {"python": "Python module", "javascript": "frontend code", "sql": "migration",
           "log": "log from last night", "email": "e-mail thread", "notes": "meeting notes",
           "report": "status report", "article": "article", "chat": "group chat export"},
    "zh": {"python": "Python 代码", "javascript": "前端代码", "sql": "迁移脚本",
           "log": "昨晚的日志", "email": "邮件往来", "notes": "会议纪要",
           "report": "周报", "article": "文章", "chat": "群聊记录"},
}  # fmt: skip
OUTROS = {
    "en": ["That's all of it.", "Thanks in advance!", "Let me know if anything looks off."],
    "zh": ["就这些。", "先谢谢了！", "有问题的地方标出来就行。"],
}


def load_msc_dialogues(directory: Path = MSC_DIR) -> list[list[str]]:
    """Every MSC dialogue as the list of its utterances, file by file, line by line."""
    dialogues = []
    for name in MSC_FILES:
        with (directory / name).open(encoding="utf-8") as lines:
            for line in lines:
                dialogue = json.loads(line)["dialog"]
                dialogues.append([turn["text"].strip() for turn in dialogue])
    return dialogues


def _fill(rng: random.Random, language: str, template: str) -> str:
    slots = {key: rng.choice(values) for key, values in WORDS[language].items()}
    return template.format(n=rng.randrange(3, 12), **slots)


def short_turns(
    rng: random.Random, language: str, count: int, dialogues: list[list[str]]
) -> list[str]:
    """``count`` short chat turns: English from MSC (one side of a few dialogues) and
    assistant requests; Chinese from templates. No two are the same."""
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < count:
        if language == "en" and rng.random() < 0.7:
            dialogue = rng.choice(dialogues)
            side = dialogue[rng.randrange(2) :: 2]
            picked = [t for t in side if 15 <= len(t) <= 300][: rng.randrange(2, 5)]
        else:
            templates = EN_REQUESTS if language == "en" else ZH_CHAT
            picked = [_fill(rng, language, rng.choice(templates))]
        for text in picked:
            if text not in seen and len(out) < count:
                seen.add(text)
                out.append(text)
    return out


def intro(rng: random.Random, language: str, kind: str) -> str:
    thing = THINGS[language][kind.split("-")[0]]
    return rng.choice(INTROS[language]).format(thing=thing)


def outro(rng: random.Random, language: str) -> str:
    return rng.choice(OUTROS[language])


def chat_export(
    rng: random.Random,
    language: str,
    chars: int,
    start: datetime,
    dialogues: list[list[str]],
) -> Document:
    """A pasted group chat: timestamped lines, a dialogue (or a few templates) per block."""
    names = ["Sam", "Alex"] if language == "en" else ["阿杰", "小雨"]
    blocks: list[str] = []
    when = start
    while sum(len(b) + 1 for b in blocks) < chars:
        if language == "en":
            texts = rng.choice(dialogues)
        else:
            texts = [_fill(rng, language, rng.choice(ZH_CHAT)) for _ in range(rng.randrange(4, 9))]
        lines = []
        when += timedelta(hours=rng.randrange(2, 30))
        for number, text in enumerate(texts):
            when += timedelta(minutes=rng.randrange(1, 9))
            lines.append(f"[{when:%Y-%m-%d %H:%M}] {names[number % 2]}: {text}")
        blocks.append("\n".join(lines))
    return Document("chat", blocks, joiner="\n")
