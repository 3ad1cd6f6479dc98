"""Filler for the long-memory benchmark: source code (Python, JavaScript, SQL) and logs.

What a user pastes into a chat: a module to review, a failing query, last night's logs.
Each generator returns a ``Document``: blocks of text (a function, a statement, a run of
log lines) that the dataset joins, and between which it may put a needle. Comments,
docstrings and log messages are English or Chinese after the user's language (identifiers
stay English, as they do in real Chinese code bases). Everything is drawn from the word
lists below with the dataset's seeded ``random.Random``; nothing is copied from anywhere.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta


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


NOUNS = ["order", "invoice", "customer", "shipment", "payment", "session", "report", "ticket"]
NOUNS += ["coupon", "warehouse", "refund", "subscription", "account", "device", "reading"]
NOUNS += ["booking", "route", "parcel", "cart", "product", "review", "tenant", "quota", "webhook"]
VERBS = ["load", "fetch", "parse", "validate", "compute", "normalize", "sync", "merge", "export"]
VERBS += ["render", "schedule", "retry", "archive", "reconcile", "enqueue", "dispatch", "resolve"]
STATES = ["pending", "active", "expired", "failed", "archived", "settled", "cancelled", "queued"]
SERVICES = ["billing-api", "order-worker", "auth-gateway", "search-indexer", "notifier", "ledger"]
HOSTS = ["ip-10-0-3-14", "ip-10-0-7-201", "web-02", "web-05", "worker-11", "db-replica-1"]
CURRENCIES = ["EUR", "USD", "CNY", "GBP", "JPY"]

COMMENTS = {
    "en": [
        "skip records older than the retention window",
        "the upstream API pages by cursor, not by offset",
        "keep this in sync with the migration in 0042",
        "TODO: move the retry policy into settings",
        "amounts are stored in minor units (cents)",
        "this runs inside the nightly batch, so no locking here",
        "the partner sends duplicate events; dedupe on the external id",
        "rounding must match what finance reports",
        "do not log the full payload, it may hold personal data",
        "fast path: most tenants have fewer than a hundred rows",
    ],
    "zh": [
        "跳过超过保留期限的记录",
        "上游接口按游标分页，不是按偏移量",
        "这里要和 0042 号迁移脚本保持一致",
        "TODO：重试策略挪到配置里",
        "金额按分存储，避免浮点误差",
        "这段在夜间批处理里跑，不需要加锁",
        "合作方会重复推送事件，用外部 id 去重",
        "四舍五入规则必须和财务报表一致",
        "不要打印完整报文，里面可能有个人信息",
        "快速路径：大部分租户的数据不到一百行",
    ],
}
DOCSTRINGS = {
    "en": [
        "Return the {noun}s that still need attention, newest first.",
        "{Verb} one {noun} and report what changed.",
        "Look the {noun} up by id; raise if it does not exist.",
        "Group the {noun}s by state and count them.",
        "Write the {noun}s back in one transaction.",
    ],
    "zh": [
        "返回仍需处理的{noun}，按时间倒序。",
        "{verb}一个{noun}，并返回变更内容。",
        "按 id 查找{noun}，不存在时抛出异常。",
        "按状态分组统计{noun}数量。",
        "在一个事务里把{noun}写回数据库。",
    ],
}
ZH_NOUN = {"order": "订单", "invoice": "发票", "customer": "客户", "shipment": "发货单"}
ZH_NOUN |= {"payment": "支付记录", "session": "会话", "report": "报表", "ticket": "工单"}
ZH_NOUN |= {"coupon": "优惠券", "warehouse": "仓库", "refund": "退款单", "subscription": "订阅"}
ZH_NOUN |= {"account": "账户", "device": "设备", "reading": "读数", "booking": "预订"}
ZH_NOUN |= {"route": "路线", "parcel": "包裹", "cart": "购物车", "product": "商品"}
ZH_NOUN |= {"review": "评价", "tenant": "租户", "quota": "配额", "webhook": "回调"}
ZH_VERB = {"load": "加载", "fetch": "拉取", "parse": "解析", "validate": "校验"}
ZH_VERB |= {"compute": "计算", "normalize": "规整", "sync": "同步", "merge": "合并"}
ZH_VERB |= {"export": "导出", "render": "渲染", "schedule": "排期", "retry": "重试"}
ZH_VERB |= {"archive": "归档", "reconcile": "对账", "enqueue": "入队", "dispatch": "分发"}
ZH_VERB |= {"resolve": "解析"}

LOG_MESSAGES = {
    "en": [
        "synced {n} {noun}s in {ms} ms",
        "retrying {noun} {id} after timeout (attempt {k}/5)",
        "cache miss for key {noun}:{id}",
        "upstream returned {code} for {noun} {id}",
        "connection pool exhausted, waiting {ms} ms",
        "{noun} {id} moved from {state} to {state2}",
        "slow query on {noun}s took {ms} ms",
        "scheduled {n} jobs for tenant t-{id}",
        "webhook delivery to partner failed: read timeout",
        "health check ok, {n} workers alive",
    ],
    "zh": [
        "同步{noun}完成，共 {n} 条，耗时 {ms} ms",
        "{noun} {id} 请求超时，第 {k}/5 次重试",
        "缓存未命中：{noun}:{id}",
        "上游返回 {code}，{noun} {id} 处理失败",
        "连接池已满，等待 {ms} ms",
        "{noun} {id} 状态由 {state} 变为 {state2}",
        "慢查询：{noun}表耗时 {ms} ms",
        "为租户 t-{id} 调度了 {n} 个任务",
        "回调推送给合作方失败：读取超时",
        "健康检查正常，存活 worker {n} 个",
    ],
}
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
PY_STATEMENTS = [
    "cutoff = now - timedelta(days={days})",
    "{n}s = self.repo.list(tenant_id=tenant_id, state={state!r})",
    'if not {n}s:\n    logger.info("no {state} {n}s", extra={{"tenant": tenant_id}})\n'
    "    return []",
    "kept = []\nfor item in {n}s:\n    if item.updated_at < cutoff:\n        continue\n"
    "    kept.append(item)",
    "total = sum(x.amount for x in {n}s if x.currency == {currency!r})",
    "by_state = Counter(item.state for item in {n}s)",
    "try:\n    response = self.client.post(\n"
    '        "/v{version}/{n}s", json=[x.as_dict() for x in {n}s], timeout={timeout}\n'
    "    )\n    response.raise_for_status()\nexcept requests.Timeout as exc:\n"
    "    raise {N}SyncError(str(exc)) from exc",
    'self.metrics.gauge("{n}s.{state}", len({n}s))',
    "{n}s.sort(key=lambda item: (item.priority, item.created_at), reverse=True)",
]
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

JS_SHAPES = [
    """export async function {v}{N}s(api, tenantId, {{ page = 1 }} = {{}}) {{
  // {c}
  const res = await api.get(`/v2/{n}s?tenant=${{tenantId}}&page=${{page}}`);
  if (!res.ok) {{
    throw new Error(`{v} {n}s failed: ${{res.status}}`);
  }}
  const body = await res.json();
  return body.items.filter((x) => x.state !== '{state}');
}}""",
    """function {N}Row({{ {n}, onSelect }}) {{
  const label = {n}.title ?? `#${{{n}.id}}`;
  return (
    <tr onClick={{() => onSelect({n}.id)}} className="{n}-row">
      <td>{{label}}</td>
      <td>{{formatMoney({n}.amount, '{currency}')}}</td>
    </tr>
  );
}}""",
    """router.post('/api/{n}s/:id/{v}', requireAuth, async (req, res, next) => {{
  // {c}
  try {{
    const item = await {n}Store.get(req.params.id);
    if (!item) return res.status(404).json({{ error: '{n} not found' }});
    await queue.publish('{n}.{v}', {{ id: item.id, by: req.user.id }});
    res.status(202).json({{ status: 'queued' }});
  }} catch (err) {{
    next(err);
  }}
}});""",
    """const {v}Debounced = debounce(async (query) => {{
  const results = await search('{n}s', query, {{ limit: {limit} }});
  setState((s) => ({{ ...s, results, loading: false }}));
}}, {delay});""",
    """export const {n}Slice = createSlice({{
  name: '{n}s',
  initialState: {{ items: [], status: 'idle' }},
  reducers: {{
    {v}ed(state, action) {{
      // {c}
      state.items = state.items.map((x) => (x.id === action.payload.id ? action.payload : x));
    }},
  }},
}});""",
]


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

SQL_SHAPES = [
    """CREATE TABLE {n}s (
    id BIGSERIAL PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    {other}_id BIGINT REFERENCES {other}s(id),
    state TEXT NOT NULL DEFAULT 'pending',
    amount_cents BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
COMMENT ON COLUMN {n}s.amount_cents IS '{label}';""",
    "CREATE INDEX CONCURRENTLY idx_{n}s_tenant_state ON {n}s (tenant_id, state);",
    """SELECT o.tenant_id, date_trunc('day', o.created_at) AS day, count(*) AS n,
       sum(o.amount_cents) / 100.0 AS total
FROM {n}s o
JOIN {other}s x ON x.id = o.{other}_id
WHERE o.state = '{state}'
  AND o.created_at >= now() - interval '{days} days'
GROUP BY 1, 2
ORDER BY day DESC
LIMIT 500;""",
    "ALTER TABLE {n}s ADD COLUMN {v}ed_at TIMESTAMPTZ;",
    """UPDATE {n}s SET state = '{state}'
WHERE state = 'pending'
  AND created_at < now() - interval '{hours} hours';""",
    """WITH ranked AS (
    SELECT id,
           row_number() OVER (PARTITION BY {other}_id ORDER BY created_at DESC) AS rn
    FROM {n}s
)
DELETE FROM {n}s WHERE id IN (SELECT id FROM ranked WHERE rn > 1);""",
]


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
