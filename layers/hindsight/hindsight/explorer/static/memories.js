// The memories of a user: the filtered list, one memory's detail with its provenance,
// and "Why this fact?".
import { api, isoTime, listAll } from "./api.js";
import { confirmAction, field, h, highlighted, select, short, when } from "./dom.js";
import { fail, go, linkTo, notify, refreshBadge } from "./explorer.js";
import { t } from "./strings.js";
import { reflectionResult } from "./tools.js";

const TEXT_FILTERS = ["scope", "category", "emotion", "text"];
const DATE_FILTERS = ["since", "until", "stored_since", "stored_until"];
const FILTERS = ["kind", "status", "expiring", "include_expired", "order", "limit", ...TEXT_FILTERS, ...DATE_FILTERS];
const DAY_MS = 86_400_000;
let pages = { key: "", cursors: [undefined] };

export function memoryLink(userId, memory, label) {
  return h(
    "a",
    { href: linkTo({ user_id: userId, view: "memory", memory: memory.memory_id }), "data-internal": true },
    label ?? short(memory.content, 120),
  );
}

function labels(memory) {
  const parts = [memory.category, memory.status, memory.confidence && `${memory.confidence}`, memory.emotion];
  return parts.filter(Boolean).join(" · ");
}

// --- the list ------------------------------------------------------------------------------
function filterForm(userId, state) {
  const text = (name) => field(`f-${name}`, t(`filters.${name}`), h("input", { name, value: state[name] || "" }));
  const date = (name) =>
    field(`f-${name}`, t(`filters.${name}`), h("input", { name, value: state[name] || "", placeholder: "2026-03-01" }));
  const form = h(
    "form",
    { class: "filters", id: "filters" },
    h(
      "fieldset",
      {},
      h("legend", {}, t("filters.legend")),
      field(
        "f-kind",
        t("filters.kind"),
        select("kind", [["", t("filters.any")], ["episodic", t("filters.kind.episodic")], ["semantic", t("filters.kind.semantic")]], state.kind),
      ),
      field(
        "f-status",
        t("filters.status"),
        select("status", [["", t("filters.any")], ...["pending", "approved", "rejected", "superseded"].map((s) => [s, s])], state.status),
      ),
      TEXT_FILTERS.map(text),
      DATE_FILTERS.map(date),
      field(
        "f-expiring",
        t("filters.expiring"),
        select("expiring", [["", t("filters.expiring.any")], ["1", t("filters.expiring.1")], ["7", t("filters.expiring.7")], ["30", t("filters.expiring.30")]], state.expiring),
      ),
      field(
        "f-order",
        t("filters.order"),
        select("order", [["newest", t("filters.order.newest")], ["oldest", t("filters.order.oldest")]], state.order),
      ),
      field("f-limit", t("filters.limit"), select("limit", [["20", "20"], ["50", "50"]], state.limit || "20")),
      h(
        "div",
        { class: "field check" },
        h("input", { type: "checkbox", id: "f-include_expired", name: "include_expired", value: "true", checked: state.include_expired === "true" }),
        h("label", { for: "f-include_expired" }, t("filters.include_expired")),
      ),
      h("small", { class: "help" }, t("filters.date.help")),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit" }, t("filters.apply")),
        h("button", { type: "button", onclick: () => go({ user_id: userId, view: "memories" }) }, t("filters.clear")),
      ),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(form));
    const next = { user_id: userId, view: "memories" };
    for (const name of FILTERS) if (values[name]) next[name] = String(values[name]).trim();
    go(next);
  });
  return form;
}

export function listQuery(state) {
  const query = {};
  for (const name of ["kind", "status", "scope", "category", "emotion", "text", "order", "limit", "include_expired"]) {
    if (state[name]) query[name] = state[name];
  }
  for (const name of DATE_FILTERS) query[name] = isoTime(`filters.${name}`, state[name]);
  if (state.expiring) {
    query.expires_before = new Date(Date.now() + Number(state.expiring) * DAY_MS).toISOString();
  }
  return query;
}

function memoryTable(userId, items) {
  return h(
    "table",
    { class: "memories", id: "memory-table" },
    h("caption", {}, t("list.caption", { user: userId })),
    h(
      "thead",
      {},
      h("tr", {}, ["list.occurred", "list.kind", "list.content", "list.labels", "list.scope"].map((key) => h("th", { scope: "col" }, t(key)))),
    ),
    h(
      "tbody",
      {},
      items.map((memory) =>
        h(
          "tr",
          { dataset: { memoryId: memory.memory_id, kind: memory.kind } },
          h("td", { class: "time" }, when(memory.occurred_at)),
          h("td", {}, memory.kind),
          h("td", { class: "content", lang: "" }, memoryLink(userId, memory)),
          h("td", {}, labels(memory)),
          h("td", {}, memory.scope),
        ),
      ),
    ),
  );
}

export async function memoriesView({ params: state, userId, container, stale }) {
  container.append(filterForm(userId, state));
  const query = listQuery(state);
  const key = JSON.stringify([userId, state]);
  if (pages.key !== key) pages = { key, cursors: [undefined], index: 0 };
  const results = h("div", { id: "results" }, t("list.loading"));
  container.append(results);
  const page = await api.list(userId, { ...query, cursor: pages.cursors[pages.index] });
  if (stale()) return;
  const move = (step) => {
    if (step > 0) pages.cursors[pages.index + 1] = page.next_cursor;
    pages.index += step;
    memoriesAgain(container, state, userId, stale);
  };
  results.replaceChildren(
    page.results.length
      ? memoryTable(userId, page.results)
      : h("p", { class: "empty" }, t(page.has_more ? "list.scanned" : "list.empty", { user: userId })),
    h(
      "div",
      { class: "pager" },
      h("button", { type: "button", id: "previous-page", disabled: pages.index === 0, onclick: () => move(-1) }, t("list.previous")),
      h("span", {}, t("list.page", { page: pages.index + 1 })),
      h("button", { type: "button", id: "next-page", disabled: !page.has_more, onclick: () => move(1) }, t("list.next")),
    ),
  );
}

function memoriesAgain(container, state, userId, stale) {
  container.replaceChildren();
  memoriesView({ params: state, userId, container, stale }).catch(fail);
}

// --- one memory -------------------------------------------------------------------------------
const FIELDS = [
  "memory_id", "kind", "user_id", "scope", "content", "category", "emotion", "status", "confidence",
  "topic", "speaker", "participants", "session_id", "agent_action", "outcome", "occurred_at",
  "created_at", "updated_at", "expires_at", "reflector", "mention_count", "metadata",
];

function fieldList(memory, model) {
  const rows = [];
  const shownElsewhere = new Set(["event_time", "source_memory_ids", "supersedes", "superseded_by"]);
  const others = Object.keys(memory).filter((name) => !FIELDS.includes(name) && !shownElsewhere.has(name));
  for (const name of [...FIELDS, ...others.sort()]) {
    let value = memory[name];
    if (value === undefined || value === null || (Array.isArray(value) && !value.length)) continue;
    if (name.endsWith("_at")) value = when(value);
    else if (typeof value === "object") value = JSON.stringify(value, null, 1);
    const key = `field.${name}`;
    const label = t(key) === key ? name.replaceAll("_", " ") : t(key);
    rows.push(h("dt", {}, label), h("dd", { class: `f-${name}` }, String(value)));
  }
  if (memory.event_time && memory.event_time.length) {
    const ranges = memory.event_time.map((r) => `${r.expression}: ${when(r.start)} → ${when(r.end)}`);
    rows.push(h("dt", {}, t("detail.event_time")), h("dd", { class: "f-event_time" }, ranges.join("; ")));
  }
  rows.push(h("dt", {}, t("detail.embedding")), h("dd", { class: "f-embedding" }, model || "—"));
  return h("dl", { class: "fields" }, rows);
}

async function readAll(ids) {
  return Promise.all(ids.map((id) => api.get(id).then((r) => r.memory).catch(() => null)));
}

// The facts this one superseded (older) and the ones that superseded it (newer), in order;
// a fact retired by an episode ends the chain with that episode.
export async function chainOf(fact) {
  const older = [];
  let cursor = fact;
  for (let i = 0; i < 20 && cursor.supersedes && cursor.supersedes.length; i++) {
    const [previous] = await readAll([cursor.supersedes[0]]);
    if (!previous) break;
    older.unshift(previous);
    cursor = previous;
  }
  const newer = [];
  cursor = fact;
  for (let i = 0; i < 20 && cursor.superseded_by; i++) {
    const [next] = await readAll([cursor.superseded_by]);
    if (!next) break;
    newer.push(next);
    if (next.kind !== "semantic") break;
    cursor = next;
  }
  return [...older, fact, ...newer];
}

async function provenance(userId, memory) {
  const section = h("section", { class: "provenance", "aria-labelledby": "provenance-title" }, h("h3", { id: "provenance-title" }, t("detail.provenance")));
  if (memory.kind === "semantic") {
    const sources = (await readAll(memory.source_memory_ids || [])).filter(Boolean);
    section.append(
      h("h4", {}, t("detail.sources")),
      sources.length
        ? h("ul", { class: "sources" }, sources.map((s) => h("li", {}, h("span", { class: "time" }, when(s.occurred_at)), " ", memoryLink(userId, s, s.content))))
        : h("p", {}, t("detail.no_sources")),
    );
    const chain = await chainOf(memory);
    section.append(
      h("h4", {}, t("detail.chain")),
      h(
        "ol",
        { class: "chain" },
        chain.map((fact) =>
          h(
            "li",
            { class: fact.memory_id === memory.memory_id ? "current" : "" },
            fact.memory_id === memory.memory_id ? h("strong", {}, `${fact.content} (${t("detail.chain.current")})`) : memoryLink(userId, fact, fact.content),
            fact.kind === "semantic" ? ` — ${fact.status}, ${fact.confidence}` : ` — ${t("detail.chain.episode", { when: when(fact.occurred_at) })}`,
          ),
        ),
      ),
    );
    return section;
  }
  const { items } = await listAll(userId, { kind: "semantic", include_expired: "true" }, 200);
  const derived = items.filter((fact) => (fact.source_memory_ids || []).includes(memory.memory_id));
  section.append(
    h("h4", {}, t("detail.derived")),
    derived.length
      ? h("ul", { class: "derived" }, derived.map((fact) => h("li", {}, memoryLink(userId, fact, fact.content), ` — ${fact.status}`)))
      : h("p", {}, t("detail.derived.none", { count: 200 })),
  );
  return section;
}

async function review(userId, memory, action) {
  await (action === "approve" ? api.approve(memory.memory_id) : api.reject(memory.memory_id));
  go({ user_id: userId, view: "memory", memory: memory.memory_id }, { replace: true });
  notify(t("review.done", { count: 1, action: t(action === "approve" ? "review.approved" : "review.rejected") }));
}

async function deleteMemory(userId, memory) {
  const { items } = await listAll(userId, { kind: "semantic", include_expired: "true" }, 200);
  const facts = items.filter((fact) => (fact.source_memory_ids || []).includes(memory.memory_id)).length;
  if (!(await confirmAction(t("forget.delete.confirm", { facts })))) return;
  const result = await api.remove(memory.memory_id);
  go({ user_id: userId, view: "memories" });
  notify(
    t("forget.deleted", { id: result.memory_id, deleted: result.deleted_facts.length, updated: result.updated_facts.length }),
  );
}

function actions(userId, memory) {
  const buttons = [];
  const run = (work) => () => work().catch(fail);
  if (memory.kind === "semantic") {
    if (memory.status !== "approved" && memory.status !== "superseded") {
      buttons.push(h("button", { type: "button", id: "approve", onclick: run(() => review(userId, memory, "approve")) }, t("detail.approve")));
    }
    if (memory.status !== "rejected" && memory.status !== "superseded") {
      buttons.push(h("button", { type: "button", id: "reject", onclick: run(() => review(userId, memory, "reject")) }, t("detail.reject")));
    }
    buttons.push(h("a", { id: "why-link", class: "button", href: linkTo({ user_id: userId, view: "why", memory: memory.memory_id }), "data-internal": true }, t("detail.why")));
  }
  buttons.push(h("button", { type: "button", id: "delete", class: "danger", onclick: run(() => deleteMemory(userId, memory)) }, t("detail.delete")));
  return h("div", { class: "actions" }, buttons);
}

async function loadMemory(id) {
  try {
    return (await api.get(id)).memory;
  } catch (error) {
    if (error.status === 404) throw new Error(`${t("detail.missing", { id })} (${error.message})`);
    throw error;
  }
}

export async function memoryView({ params: state, userId, container, stale }) {
  const [memory, health] = await Promise.all([loadMemory(state.memory), api.health().catch(() => ({}))]);
  if (stale()) return;
  const back = h("a", { href: linkTo({ user_id: userId, view: "memories" }), "data-internal": true }, `← ${t("detail.back")}`);
  container.append(
    back,
    h("h2", {}, t("detail.title", { id: memory.memory_id })),
    h("p", { class: "content big", id: "memory-content" }, memory.content),
    actions(userId, memory),
    h("h3", {}, t("detail.fields")),
    fieldList(memory, health.embedding_model || health.model),
  );
  container.append(await provenance(userId, memory));
}

// --- why this fact --------------------------------------------------------------------------
// The words of a text: Latin words of 3+ letters, and pairs of CJK characters (no spaces there)
export function wordsOf(text) {
  const lower = String(text).toLowerCase();
  const words = new Set(lower.match(/[\p{L}\p{N}]{3,}/gu)?.filter((w) => !/\p{Script=Han}/u.test(w)) || []);
  for (const run of lower.match(/\p{Script=Han}+/gu) || []) {
    for (let i = 0; i + 1 < run.length; i++) words.add(run.slice(i, i + 2));
  }
  for (const common of ["the", "and", "user", "用户"]) words.delete(common);
  return words;
}

function stems(words) {
  return [...words].map((w) => (/^\p{Script=Latin}{6,}$/u.test(w) ? w.slice(0, w.length - 2) : w));
}

export async function whyView({ params: state, userId, container, stale }) {
  const fact = await loadMemory(state.memory);
  if (stale()) return;
  const sources = (await readAll(fact.source_memory_ids || [])).filter(Boolean);
  const chain = fact.kind === "semantic" ? await chainOf(fact) : [fact];
  const factWords = stems(wordsOf(fact.content));
  const dry = h("div", { id: "why-dry-run" });
  const runDry = async () => {
    const first = sources.map((s) => Date.parse(s.created_at)).sort((a, b) => a - b)[0];
    const since = new Date((first || Date.parse(fact.created_at)) - 1000).toISOString();
    dry.replaceChildren(t("list.loading"));
    const result = await api.reflect({ user_id: userId, since, dry_run: true });
    dry.replaceChildren(reflectionResult(userId, result));
  };
  container.append(
    h("a", { href: linkTo({ user_id: userId, view: "memory", memory: fact.memory_id }), "data-internal": true }, `← ${short(fact.content, 60)}`),
    h("h2", {}, t("why.title")),
    h("p", { class: "content big" }, fact.content),
    h("dl", { class: "fields" }, h("dt", {}, t("why.reflector")), h("dd", { id: "why-reflector" }, fact.reflector || "—"), h("dt", {}, t("why.mentions")), h("dd", {}, String(fact.mention_count ?? "—"))),
    h("h3", {}, t("why.sources")),
    sources.length
      ? h("ul", { class: "sources", id: "why-sources" }, sources.map((s) => h("li", {}, h("span", { class: "time" }, when(s.occurred_at)), " ", h("span", {}, highlighted(s.content, factWords)), " ", memoryLink(userId, s, "↗"))))
      : h("p", {}, t("detail.no_sources")),
    h("h3", {}, t("why.confidence")),
    h(
      "table",
      { class: "history", id: "why-history" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("why.confidence.when")), h("th", { scope: "col" }, t("why.confidence.value")), h("th", { scope: "col" }, t("why.confidence.status")))),
      h("tbody", {}, chain.map((f) => h("tr", {}, h("td", {}, when(f.updated_at)), h("td", {}, f.confidence), h("td", {}, f.status)))),
    ),
    h("p", {}, h("button", { type: "button", id: "why-dry", "aria-describedby": "why-dry-help", onclick: () => runDry().catch(fail) }, t("why.dryrun")), " ", h("small", { id: "why-dry-help" }, t("why.dryrun.help"))),
    dry,
  );
}
