"""Filler for the long-memory benchmark: e-mail threads, meeting notes, reports and articles.

English and Chinese, each from its own sentence templates (written for this benchmark,
kept with the word lists in ``tables/longmem_prose.json``) whose slots are drawn from the
word lists with the dataset's seeded ``random.Random``. A document is a list of blocks (a
header, a paragraph, a section); the dataset may put a needle between two blocks.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from datasets.longmem_code import Document
from datasets.tables import load_tables

TABLES = load_tables("longmem_prose")

WORDS: dict[str, dict[str, list[str]]] = TABLES["WORDS"]

WORK_SENTENCES = TABLES["WORK_SENTENCES"]
WEEKDAYS = TABLES["WEEKDAYS"]

ARTICLES = TABLES["ARTICLES"]


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
