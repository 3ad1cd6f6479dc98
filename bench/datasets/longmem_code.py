"""Filler for the long-memory benchmark: source code (Python, JavaScript, SQL) and logs.

What a user pastes into a chat: a module to review, a failing query, last night's logs.
Each generator returns a ``Document``: blocks of text (a function, a statement, a run of
log lines) that the dataset joins, and between which it may put a needle. Comments,
docstrings and log messages are English or Chinese after the user's language (identifiers
stay English, as they do in real Chinese code bases). Everything is drawn from the word
lists and templates of ``tables/longmem_code.json`` (a JavaScript or SQL shape there is a
list of its lines) with the dataset's seeded ``random.Random``; nothing is copied from
anywhere.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from datasets.tables import load_tables

TABLES = load_tables("longmem_code")


@dataclass
class Document:
    """Blocks of one pasted thing; ``fence`` is the code-fence language (None: plain text)."""

    kind: str
    blocks: list[str]
    fence: str | None = None
    joiner: str = "\n\n"

    @property
    def chars(self) -> int:
        return sum(len(b) for b in self.blocks) + len(self.joiner) * max(len(self.blocks) - 1, 0)


NOUNS = TABLES["NOUNS"]
VERBS = TABLES["VERBS"]
STATES = ["pending", "active", "expired", "failed", "archived", "settled", "cancelled", "queued"]
SERVICES = ["billing-api", "order-worker", "auth-gateway", "search-indexer", "notifier", "ledger"]
HOSTS = ["ip-10-0-3-14", "ip-10-0-7-201", "web-02", "web-05", "worker-11", "db-replica-1"]
CURRENCIES = ["EUR", "USD", "CNY", "GBP", "JPY"]

COMMENTS = TABLES["COMMENTS"]
DOCSTRINGS = TABLES["DOCSTRINGS"]
ZH_NOUN = TABLES["ZH_NOUN"]
ZH_VERB = TABLES["ZH_VERB"]

LOG_MESSAGES = TABLES["LOG_MESSAGES"]
LEVELS = ["INFO"] * 6 + ["DEBUG"] * 2 + ["WARN", "ERROR"]


def _pascal(*words: str) -> str:
    return "".join(w.capitalize() for w in words)


def _fill(rng: random.Random, template: str, language: str) -> str:
    noun, verb = rng.choice(NOUNS), rng.choice(VERBS)
    return template.format(
        noun=ZH_NOUN[noun] if language == "zh" else noun,
        verb=ZH_VERB[verb] if language == "zh" else verb,
        Verb=verb.capitalize(),
        n=rng.randrange(2, 5000),
        ms=rng.randrange(3, 9000),
        id=rng.randrange(10_000, 999_999),
        k=rng.randrange(1, 6),
        code=rng.choice([400, 404, 409, 429, 500, 502, 503, 504]),
        state=rng.choice(STATES),
        state2=rng.choice(STATES),
    )


# --- Python ------------------------------------------------------------------------------

# Statements of a method body, in the order they may appear; {n}: the noun, {c}: a comment.
PY_STATEMENTS = TABLES["PY_STATEMENTS"]
PY_RETURNS = ["return {n}s", "return kept", "return dict(by_state)", "return total"]


def _slots(rng: random.Random, language: str) -> dict[str, object]:
    noun, verb = rng.choice(NOUNS), rng.choice(VERBS)
    return {
        "n": noun,
        "N": _pascal(noun),
        "v": verb,
        "zn": ZH_NOUN[noun] if language == "zh" else noun,
        "zv": ZH_VERB[verb] if language == "zh" else verb,
        "V": verb.capitalize(),
        "other": rng.choice([x for x in NOUNS if x != noun]),
        "state": rng.choice(STATES),
        "currency": rng.choice(CURRENCIES),
        "days": rng.randrange(1, 90),
        "hours": rng.randrange(2, 48),
        "version": rng.randrange(1, 4),
        "timeout": rng.randrange(2, 30),
        "limit": rng.randrange(5, 50),
        "delay": rng.randrange(100, 600),
        "c": rng.choice(COMMENTS[language]),
    }


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line if line else line for line in text.split("\n"))


def _python_method(rng: random.Random, language: str) -> str:
    slots = _slots(rng, language)
    doc = rng.choice(DOCSTRINGS[language]).format(
        noun=slots["zn"], verb=slots["zv"], Verb=slots["V"]
    )
    picked = sorted(rng.sample(range(len(PY_STATEMENTS)), rng.randrange(3, 7)))
    body = []
    for index in picked:
        statement = PY_STATEMENTS[index].format(**slots)
        if rng.random() < 0.25:
            statement = f"# {rng.choice(COMMENTS[language])}\n" + statement
        body.append(statement)
    body.append(rng.choice(PY_RETURNS).format(**slots))
    args = rng.choice(["tenant_id: str", "tenant_id: str, limit: int = 100", "tenant_id, *, now"])
    head = f'def {slots["v"]}_{slots["n"]}s(self, {args}):\n    """{doc}"""\n'
    return _indent(head + _indent("\n".join(body), 4), 4)


def python_module(rng: random.Random, language: str, chars: int) -> Document:
    noun = rng.choice(NOUNS)
    imports = (
        "from __future__ import annotations\n\nimport logging\nfrom collections import Counter\n"
        "from datetime import datetime, timedelta\n\nimport requests\n\n"
        f"from app.{noun}s.models import {_pascal(noun)}, {_pascal(noun)}SyncError\n\n"
        "logger = logging.getLogger(__name__)"
    )
    blocks = [imports]
    while sum(len(b) + 2 for b in blocks) < chars:
        if len(blocks) == 1 or rng.random() < 0.15:
            cls = _pascal(rng.choice(NOUNS), rng.choice(["service", "repository", "client"]))
            blocks.append(
                f"class {cls}:\n    def __init__(self, client, repo, metrics) -> None:\n"
                "        self.client = client\n        self.repo = repo\n"
                "        self.metrics = metrics"
            )
        blocks.append(_python_method(rng, language))
    return Document("python", blocks, fence="python")


# --- JavaScript --------------------------------------------------------------------------

JS_SHAPES = ["\n".join(lines) for lines in TABLES["JS_SHAPES"]]


def javascript_module(rng: random.Random, language: str, chars: int) -> Document:
    head = (
        "import { debounce } from 'lodash-es';\nimport { createSlice } from '@reduxjs/toolkit';\n"
        "import { search, formatMoney } from '../lib/api';"
    )
    blocks = [head]
    while sum(len(b) + 2 for b in blocks) < chars:
        blocks.append(rng.choice(JS_SHAPES).format(**_slots(rng, language)))
    return Document("javascript", blocks, fence="javascript")


# --- SQL ---------------------------------------------------------------------------------

SQL_SHAPES = ["\n".join(lines) for lines in TABLES["SQL_SHAPES"]]


def sql_script(rng: random.Random, language: str, chars: int) -> Document:
    blocks = [f"-- migration {rng.randrange(30, 120):04d}\nBEGIN;"]
    while sum(len(b) + 2 for b in blocks) < chars:
        slots = _slots(rng, language)
        slots["label"] = f"{slots['zn']}金额" if language == "zh" else f"amount of the {slots['n']}"
        statement = rng.choice(SQL_SHAPES).format(**slots)
        if rng.random() < 0.4:
            statement = f"-- {slots['c']}\n" + statement
        blocks.append(statement)
    blocks.append("COMMIT;")
    return Document("sql", blocks, fence="sql")


# --- logs --------------------------------------------------------------------------------

TRACEBACK = """Traceback (most recent call last):
  File "/srv/app/{n}s/service.py", line {line}, in {v}_{n}s
    response.raise_for_status()
  File "/srv/venv/lib/python3.11/site-packages/requests/models.py", line 1021, in raise_for_status
    raise HTTPError(http_error_msg, response=self)
requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: \
https://internal/{n}s/{id}"""
AGENTS = ["okhttp/4.12.0", "Mozilla/5.0 (X11; Linux x86_64)", "python-requests/2.32", "curl/8.5.0"]


def _app_line(rng: random.Random, when: datetime, language: str) -> str:
    level = rng.choice(LEVELS)
    message = _fill(rng, rng.choice(LOG_MESSAGES[language]), language)
    stamp = when.strftime("%Y-%m-%d %H:%M:%S") + f",{when.microsecond // 1000:03d}"
    line = f"{stamp} {level:<5} [{rng.choice(SERVICES)}/{rng.choice(HOSTS)}] {message}"
    if level == "ERROR" and rng.random() < 0.5:
        line += "\n" + TRACEBACK.format(
            n=rng.choice(NOUNS),
            v=rng.choice(VERBS),
            line=rng.randrange(40, 400),
            id=rng.randrange(1000, 99999),
        )
    return line


def _access_line(rng: random.Random, when: datetime) -> str:
    noun = rng.choice(NOUNS)
    method = rng.choice(["GET"] * 4 + ["POST", "PUT", "DELETE"])
    status = rng.choice([200] * 8 + [201, 304, 404, 500, 502])
    ip = f"10.{rng.randrange(0, 8)}.{rng.randrange(0, 255)}.{rng.randrange(1, 255)}"
    if rng.random() < 0.6:
        path = f"/api/v2/{noun}s/{rng.randrange(1, 99999)}"
    else:
        path = f"/api/v2/{noun}s?page={rng.randrange(1, 40)}"
    stamp = when.strftime("%d/%b/%Y:%H:%M:%S")
    size, seconds = rng.randrange(120, 60000), rng.randrange(1, 3000) / 1000
    return (
        f'{ip} - - [{stamp} +0000] "{method} {path} HTTP/1.1" {status} '
        f'{size} "-" "{rng.choice(AGENTS)}" {seconds:.3f}'
    )


def _json_line(rng: random.Random, when: datetime, language: str) -> str:
    message = _fill(rng, rng.choice(LOG_MESSAGES[language]), language).replace('"', "'")
    stamp = when.isoformat(timespec="milliseconds")
    return (
        f'{{"ts":"{stamp}Z","level":"{rng.choice(LEVELS).lower()}","svc":"{rng.choice(SERVICES)}",'
        f'"trace_id":"{rng.getrandbits(64):016x}","msg":"{message}"}}'
    )


def log_excerpt(rng: random.Random, language: str, chars: int, start: datetime) -> Document:
    """Timestamped lines of one format (app, access or JSON), in blocks of 5-15 lines."""
    style = rng.choice(["app", "app", "access", "json"])
    when = start
    blocks: list[str] = []
    total = 0
    while total < chars:
        lines = []
        for _ in range(rng.randrange(5, 16)):
            when += timedelta(milliseconds=rng.randrange(5, 90_000))
            if style == "access":
                lines.append(_access_line(rng, when))
            elif style == "json":
                lines.append(_json_line(rng, when, language))
            else:
                lines.append(_app_line(rng, when, language))
        blocks.append("\n".join(lines))
        total += len(blocks[-1]) + 1
    return Document(f"log-{style}", blocks, fence=None, joiner="\n")
