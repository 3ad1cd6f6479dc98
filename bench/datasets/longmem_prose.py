"""Filler for the long-memory benchmark: e-mail threads, meeting notes, reports and articles.

English and Chinese, each from its own sentence templates (written for this benchmark)
whose slots are drawn from the word lists below with the dataset's seeded
``random.Random``. A document is a list of blocks (a header, a paragraph, a section); the
dataset may put a needle between two blocks.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from datasets.longmem_code import Document

WORDS: dict[str, dict[str, list[str]]] = {
    "en": {
        "team": ["The platform team", "Finance", "The mobile squad", "Ops", "Our data group"],
        "project": ["billing", "search", "onboarding", "warehouse", "reporting", "checkout"],
        "person": ["Marta", "Jonas", "Aisha", "Tobias", "Lena", "Ravi", "Chloe", "Pedro"],
        "action": [
            "freeze the schema",
            "move the cron jobs to the new cluster",
            "rewrite the export script",
            "sign off the Q3 roadmap",
            "clean up the stale feature flags",
            "run a load test against staging",
            "send the revised quote to the client",
            "archive the old dashboards",
        ],
        "deadline": ["Friday", "the end of the month", "the next release", "the board meeting"],
        "risk": [
            "the vendor's rate limit",
            "missing test data",
            "the holiday freeze",
            "a single point of failure in the queue",
            "unclear ownership of the API",
        ],
        "system": ["checkout service", "search cluster", "report generator", "login flow"],
        "change": ["the index rebuild", "we added caching", "the query rewrite", "the upgrade"],
        "request": ["review the draft", "update the ticket", "confirm the numbers", "book a room"],
        "consequence": [
            "we will miss the window",
            "finance cannot close the month",
            "the release slips a week",
        ],
        "feature": ["new dashboard", "export button", "dark mode", "bulk editor", "mobile app"],
        "feedback": [
            "people like it but find it slow",
            "power users want keyboard shortcuts",
            "several asked for a CSV option",
            "nobody found the settings page",
        ],
        "topic": ["pricing tiers", "on-call load", "the office move", "code review times"],
        "reason": [
            "it halves the support tickets",
            "the old path is barely used",
            "it unblocks two other teams",
            "the licence renews in March",
        ],
        "help": ["the quick fix last night", "chasing the vendor", "the migration guide"],
        "cause": ["expired certificates", "a bad deploy", "disk pressure", "a noisy neighbour"],
        "doc": ["the data processing agreement", "the new contract", "the privacy notice"],
        "role": ["senior backend", "product designer", "data analyst", "support lead"],
    },
    "zh": {
        "team": ["平台组", "财务部", "移动端小组", "运维同事", "数据团队"],
        "project": ["计费系统", "搜索服务", "新用户引导", "仓储系统", "报表平台", "结算流程"],
        "person": ["王磊", "陈思", "刘晓燕", "赵航", "孙婷", "周明", "吴倩", "郑凯"],
        "action": [
            "冻结表结构",
            "把定时任务迁到新集群",
            "重写导出脚本",
            "确定第三季度的规划",
            "清理过期的功能开关",
            "对预发环境做一次压测",
            "把修改后的报价发给客户",
            "下线旧的监控大盘",
        ],
        "deadline": ["周五", "月底", "下个版本发布", "董事会开会"],
        "risk": [
            "供应商接口限流",
            "缺少测试数据",
            "节前封网",
            "消息队列的单点故障",
            "接口归属不清",
        ],
        "system": ["下单服务", "搜索集群", "报表生成器", "登录流程"],
        "change": ["重建索引", "加了缓存", "改写查询", "升级版本"],
        "request": ["看一下初稿", "更新一下工单", "确认一下数字", "订个会议室"],
        "consequence": ["就赶不上窗口期了", "财务没法月结", "发布要推迟一周"],
        "feature": ["新版看板", "导出按钮", "深色模式", "批量编辑", "手机端"],
        "feedback": ["大家觉得好用但有点慢", "重度用户想要快捷键", "好几个人问能不能导出表格"],
        "topic": ["定价档位", "值班压力", "搬办公室", "代码评审太慢"],
        "reason": ["能减少一半的客服工单", "旧入口几乎没人用", "可以给另外两个组解围"],
        "help": ["昨晚的紧急修复", "一直追着供应商", "写的迁移文档"],
        "cause": ["证书过期", "一次错误的发布", "磁盘写满", "同机器上别的服务抢资源"],
        "doc": ["数据处理协议", "新合同", "隐私政策"],
        "role": ["高级后端", "产品设计", "数据分析", "客服主管"],
    },
}

WORK_SENTENCES = {
    "en": [
        "{team} finished the {project} migration on {weekday}, about {n} days later than planned.",
        "The main risk is still {risk}; {person} is looking into it.",
        "We agreed to {action} before {deadline}.",
        "{person} asked whether we could {action} without waiting for {person2}.",
        "Latency on the {system} dropped from {a} ms to {b} ms after {change}.",
        "Could you {request} by {deadline}? Otherwise {consequence}.",
        "Feedback on the {feature} has been mixed: {feedback}.",
        "The budget for the quarter is {amount}k, of which {pct}% is already committed.",
        "I'd suggest we {action} first, since {reason}.",
        "Thanks to {person} for {help}.",
        "The {system} had {n} incidents last month, {k} of them caused by {cause}.",
        "Next step: {person} will {action} and report back on {weekday}.",
        "There was a long discussion about {topic}, but no decision yet.",
        "Legal needs to review {doc} before we {action}.",
        "For the {role} opening we have {n} candidates, with {k} interviews next week.",
        "{person2} pointed out that {risk} could also hit the {project} work.",
    ],
    "zh": [
        "{team}在{weekday}完成了{project}的迁移，比计划晚了{n}天。",
        "目前最大的风险还是{risk}，{person}在跟进。",
        "大家同意在{deadline}之前{action}。",
        "{person}问能不能不等{person2}，先{action}。",
        "{system}的延迟在{change}之后从{a}毫秒降到了{b}毫秒。",
        "麻烦在{deadline}前{request}，不然{consequence}。",
        "用户对{feature}的反馈褒贬不一：{feedback}。",
        "这个季度的预算是{amount}万元，已经用掉了{pct}%。",
        "我建议先{action}，因为{reason}。",
        "感谢{person}{help}。",
        "{system}上个月出了{n}次故障，其中{k}次是{cause}导致的。",
        "下一步：{person}负责{action}，{weekday}同步结果。",
        "关于{topic}讨论了很久，暂时没有结论。",
        "{doc}需要法务审核后才能{action}。",
        "{role}岗位目前有{n}个候选人，下周安排{k}场面试。",
        "{person2}提醒说，{risk}也可能影响{project}这边的工作。",
    ],
}
WEEKDAYS = {
    "en": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "zh": ["周一", "周二", "周三", "周四", "周五"],
}

ARTICLES = {
    "en": {
        "Growing tomatoes on a balcony": [
            "Tomatoes want at least {n} hours of direct sun, so a south-facing balcony is ideal.",
            "Use a pot of {k}0 litres or more; small pots dry out within a day in July.",
            "Pinch out the side shoots every few days, or the plant turns into a bush.",
            "Water at the base in the morning, never over the leaves in the evening.",
            "A liquid feed high in potassium once a week helps once the first fruits set.",
            "Cherry varieties forgive mistakes better than the big beefsteak types.",
            "If the lower leaves yellow, remove them and improve the airflow.",
        ],
        "Cooking rice without a rice cooker": [
            "Rinse the rice until the water runs almost clear, usually {k} or {n} times.",
            "For jasmine rice, about 1.2 parts water to 1 part rice works in a heavy pot.",
            "Bring it to a boil, then turn the heat to the lowest setting and cover.",
            "Leave the lid on for {n} minutes of cooking and ten minutes of resting.",
            "Fluff it with a fork; stirring with a spoon breaks the grains.",
            "Day-old rice fried in a hot wok gives the best fried rice.",
        ],
        "Commuting by bike through winter": [
            "Good lights matter more than anything else from November to February.",
            "Mudguards keep you and your bag dry on wet roads.",
            "Lower the tyre pressure a little for grip on cold, damp tarmac.",
            "Layers beat one heavy jacket: you warm up after about {n} minutes.",
            "Clean the chain every week when the roads are salted.",
            "Plan a route with fewer junctions, even if it is {k} km longer.",
        ],
        "A week in the mountains on a budget": [
            "Mountain huts are cheaper than hotels and the views are better.",
            "Book the night train early; prices roughly double in the last {n} days.",
            "Pack for four seasons: the weather changes within an hour above the tree line.",
            "Local buses reach most trailheads, and a regional pass pays off after {k} trips.",
            "Carry cash, as many huts do not take cards.",
            "Start early: afternoon storms are common in summer.",
        ],
        "Saving for the first flat": [
            "Set up a standing order on payday so the money leaves before you can spend it.",
            "Keep {n} months of expenses as an emergency fund before investing anything.",
            "Compare the total cost of a mortgage, not just the interest rate.",
            "Small subscriptions add up: we found {k} we had forgotten about.",
            "A spreadsheet with every expense for a month is an eye-opener.",
            "Broker fees and moving costs are easy to underestimate.",
        ],
    },
    "zh": {
        "阳台种番茄的一点经验": [
            "番茄每天至少需要{n}个小时的直射阳光，朝南的阳台最合适。",
            "花盆最好在{k}0升以上，小盆在七月一天就干透了。",
            "侧芽要隔几天掐一次，不然长成一大丛，光长叶子不结果。",
            "早上浇水，浇在根部，晚上别往叶子上浇。",
            "第一批果子坐住以后，每周追一次高钾的液肥。",
            "樱桃番茄比大果品种好养，新手容错率高。",
            "下面的叶子发黄就剪掉，同时注意通风。",
        ],
        "没有电饭煲怎么煮米饭": [
            "米先淘洗{k}到{n}遍，水基本清了就行。",
            "泰国香米用一比一点二的米水比例，锅底要厚。",
            "大火烧开后转最小火，盖上盖子。",
            "小火煮{n}分钟，关火再焖十分钟，中间别揭盖。",
            "用饭勺轻轻翻松，不要用力搅，米粒会碎。",
            "隔夜饭炒出来最香，粒粒分明。",
        ],
        "冬天骑车通勤": [
            "十一月到二月，车灯比什么都重要。",
            "装上挡泥板，雨天衣服和背包都能保持干净。",
            "天冷路湿的时候，胎压可以稍微放低一点，抓地更好。",
            "多穿几层比穿一件厚外套强，骑{n}分钟身上就热了。",
            "路上撒了盐的时候，链条每周都要清洗。",
            "尽量选红绿灯少的路线，哪怕多绕{k}公里。",
        ],
        "穷游山里的一周": [
            "山上的小屋比酒店便宜，风景还更好。",
            "夜班火车要早点订，最后{n}天票价差不多翻倍。",
            "要带四季的衣服，林线以上的天气一小时就能变。",
            "大部分登山口都有公交，买区域通票坐{k}次就回本。",
            "带点现金，很多山屋不能刷卡。",
            "早点出发，夏天下午经常有雷阵雨。",
        ],
        "为第一套房子攒钱": [
            "发工资当天设置自动转账，钱在花掉之前就存起来了。",
            "先留出{n}个月的生活费当应急金，再考虑投资。",
            "比较房贷要看总成本，不能只看利率。",
            "小额订阅加起来不少，我们翻出了{k}个早就忘了的。",
            "把一个月的每笔开销都记在表里，会吓一跳。",
            "中介费和搬家费很容易低估。",
        ],
    },
}


def _sentence(rng: random.Random, language: str, templates: list[str]) -> str:
    return _fill(rng, language, rng.choice(templates))


def _fill(rng: random.Random, language: str, template: str) -> str:
    words = WORDS[language]
    person, person2 = rng.sample(words["person"], 2)
    slots: dict[str, object] = {key: rng.choice(values) for key, values in words.items()}
    n = rng.randrange(3, 15)
    slots |= {
        "person": person,
        "person2": person2,
        "weekday": rng.choice(WEEKDAYS[language]),
        "n": n,
        "k": rng.randrange(2, n),
        "a": rng.randrange(300, 2000),
        "b": rng.randrange(40, 290),
        "amount": rng.randrange(20, 900),
        "pct": rng.randrange(10, 95),
    }
    return template.format(**slots)


def _paragraph(rng: random.Random, language: str, templates: list[str], low: int = 3) -> str:
    """``low`` to ``low + 3`` sentences from distinct templates."""
    count = min(rng.randrange(low, low + 4), len(templates))
    sentences = [_fill(rng, language, t) for t in rng.sample(templates, count)]
    return ("" if language == "zh" else " ").join(sentences)


# --- e-mail threads ------------------------------------------------------------------------

SUBJECTS = {
    "en": ["Q3 planning", "Release checklist", "Vendor contract", "Incident follow-up", "Offsite"],
    "zh": ["三季度规划", "发版检查清单", "供应商合同", "故障复盘", "团建安排"],
}
MAIL = {
    "en": ("Hi {to},", "Best,\n{sender}", "Re: "),
    "zh": ("{to}，你好：", "谢谢！\n{sender}", "回复："),
}


def _address(name: str, language: str) -> str:
    return name if language == "zh" else f"{name} <{name.lower()}@example.com>"


def email_thread(rng: random.Random, language: str, chars: int, start: datetime) -> Document:
    words = WORDS[language]["person"]
    subject = rng.choice(SUBJECTS[language])
    greeting, closing, reply = MAIL[language]
    blocks: list[str] = []
    when = start
    while sum(len(b) + 2 for b in blocks) < chars:
        sender, to = rng.sample(words, 2)
        when += timedelta(hours=rng.randrange(1, 40), minutes=rng.randrange(0, 60))
        prefix = reply if blocks else ""
        blocks.append(
            f"From: {_address(sender, language)}\nTo: {_address(to, language)}\n"
            f"Date: {when:%a, %d %b %Y %H:%M}\nSubject: {prefix}{subject}\n\n"
            + greeting.format(to=to)
        )
        for _ in range(rng.randrange(2, 5)):
            blocks.append(_paragraph(rng, language, WORK_SENTENCES[language]))
        blocks.append(closing.format(sender=sender))
    return Document("email", blocks)


# --- meeting notes and weekly reports ---------------------------------------------------------

NOTES = {
    "en": ("# {project} weekly sync, {date}", "Attendees: {people}", "## Discussion",
           "## Decisions", "## Action items", "- [ ] {person}: {action} (due {deadline})"),
    "zh": ("# {project}周会纪要（{date}）", "参会人：{people}", "## 讨论", "## 结论",
           "## 待办", "- [ ] {person}：{action}（{deadline}前）"),
}  # fmt: skip


def meeting_notes(rng: random.Random, language: str, chars: int, start: datetime) -> Document:
    title, attendees, discussion, decisions, actions, item = NOTES[language]
    words = WORDS[language]
    templates = WORK_SENTENCES[language]
    separator = "、" if language == "zh" else ", "
    blocks: list[str] = []
    when = start
    while sum(len(b) + 2 for b in blocks) < chars:
        when += timedelta(days=7)
        people = separator.join(rng.sample(words["person"], rng.randrange(3, 7)))
        project = rng.choice(words["project"])
        blocks.append(
            title.format(project=project, date=f"{when:%Y-%m-%d}")
            + "\n"
            + attendees.format(people=people)
        )
        bullets = [f"- {_sentence(rng, language, templates)}" for _ in range(rng.randrange(3, 7))]
        blocks.append(discussion + "\n" + "\n".join(bullets))
        blocks.append(decisions + "\n- " + _sentence(rng, language, templates))
        todo = [
            item.format(
                person=rng.choice(words["person"]),
                action=rng.choice(words["action"]),
                deadline=rng.choice(words["deadline"]),
            )
            for _ in range(rng.randrange(2, 5))
        ]
        blocks.append(actions + "\n" + "\n".join(todo))
    return Document("notes", blocks)


REPORT = {
    "en": ("## Weekly report, week {week}", "### Done", "### Next week", "### Risks and asks"),
    "zh": ("## 周报（第{week}周）", "### 本周工作", "### 下周计划", "### 风险与求助"),
}


def weekly_report(rng: random.Random, language: str, chars: int, start: datetime) -> Document:
    title, done, plan, risks = REPORT[language]
    templates = WORK_SENTENCES[language]
    blocks: list[str] = []
    week = int(start.strftime("%W"))
    while sum(len(b) + 2 for b in blocks) < chars:
        week += 1
        blocks.append(title.format(week=week))
        for header in (done, plan):
            lines = [
                f"{i}. {_sentence(rng, language, templates)}" for i in range(1, rng.randrange(3, 7))
            ]
            blocks.append(header + "\n" + "\n".join(lines))
        blocks.append(risks + "\n" + _paragraph(rng, language, templates, low=1))
    return Document("report", blocks)


# --- articles ------------------------------------------------------------------------------


def article(rng: random.Random, language: str, chars: int, start: datetime) -> Document:
    """Paragraphs on everyday topics, each topic under its own heading; work prose between."""
    del start  # articles carry no dates
    topics = list(ARTICLES[language])
    rng.shuffle(topics)
    blocks: list[str] = []
    index = 0
    while sum(len(b) + 2 for b in blocks) < chars:
        topic = topics[index % len(topics)]
        index += 1
        blocks.append(f"## {topic}")
        for _ in range(rng.randrange(2, 5)):
            if rng.random() < 0.25:  # an aside in the register of the rest of the paste
                blocks.append(_paragraph(rng, language, WORK_SENTENCES[language], low=2))
            else:
                blocks.append(_paragraph(rng, language, ARTICLES[language][topic]))
    return Document("article", blocks)
