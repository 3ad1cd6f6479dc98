// The explorer's other views: timeline, review queue, ask, reflection, forget.
import { api, isoTime, listAll } from "./api.js";
import { confirmAction, field, h, select, short, when } from "./dom.js";
import { fail, go, linkTo, notify, refreshBadge } from "./explorer.js";
import { memoryLink } from "./memories.js";
import { t } from "./strings.js";

const TIMELINE_MAX = 2000;
const COUNT_MAX = 1000;
const CONFIDENCE_LEVEL = { high: 3, medium: 2, low: 1 };

// --- timeline ------------------------------------------------------------------------------
// Each chart's axis fits its own data: from the start of the first one's day to the end of
// the last one's (one day of memories shows that day, a year shows the year); memories are
// counted per hour when they span a few days at most, else per day.
const HOUR_S = 3_600;
const DAY_S = 86_400;
const HOURLY_UP_TO_S = 3 * DAY_S;
const MAX_DAYS = 3660;
const COLOURS = ["#2463c4", "#c2571a", "#16794a", "#6b3fa0", "#b42318", "#8a6d00", "#5b6575"];
const MAX_GROUPS = 6;
const LEVEL_NAMES = { 1: "low", 2: "medium", 3: "high" };

function groupOf(memory, by) {
  return by === "category" ? memory.category || "(none)" : memory.kind;
}

// The x range every chart of the view shares: whole days around the memories' times
function spanOf(seconds) {
  const last = Math.max(...seconds);
  const first = Math.max(Math.min(...seconds), last - MAX_DAYS * DAY_S);
  const from = Math.floor(first / DAY_S) * DAY_S;
  const to = (Math.floor(last / DAY_S) + 1) * DAY_S;
  return { first, from, to, bin: last - first <= HOURLY_UP_TO_S ? HOUR_S : DAY_S };
}

// Memories per bin (hour or day) and group, every bin of the span (a bin without any is 0)
function perBin(items, by, span) {
  const totals = new Map();
  for (const memory of items) totals.set(groupOf(memory, by), (totals.get(groupOf(memory, by)) || 0) + 1);
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1]).map(([name]) => name);
  const groups = ranked.length > MAX_GROUPS ? [...ranked.slice(0, MAX_GROUPS - 1), t("timeline.other")] : ranked;
  const bins = items.map((m) => Math.floor(Date.parse(m.occurred_at) / 1000 / span.bin) * span.bin);
  const xs = [];
  for (let at = span.from; at < span.to; at += span.bin) xs.push(at);
  const columns = groups.map(() => xs.map(() => 0));
  items.forEach((memory, i) => {
    if (bins[i] < span.from) return;
    const index = groups.indexOf(groupOf(memory, by));
    columns[index === -1 ? groups.length - 1 : index][(bins[i] - span.from) / span.bin] += 1;
  });
  return { xs, groups, columns, bin: span.bin, span };
}

// uPlot draws its axes on a canvas: give it the page's own font list (CJK fallbacks included)
function axisFont() {
  return `12px ${getComputedStyle(document.body).fontFamily}`;
}

function chart(target, options, data, span) {
  const width = Math.max(280, Math.min(target.clientWidth || 900, 1100));
  const font = axisFont();
  target.dataset.from = new Date(span.from * 1000).toISOString();
  target.dataset.to = new Date(span.to * 1000).toISOString();
  const axes = (options.axes || [{}, {}]).map((axis) => ({ font, ...axis }));
  const scales = { ...options.scales, x: { time: true, range: () => [span.from, span.to] } };
  // times in UTC, as the table of counts lists them
  // eslint-disable-next-line no-undef
  const tzDate = (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC");
  // eslint-disable-next-line no-undef
  return new uPlot({ width, height: 260, tzDate, ...options, axes, scales }, data, target);
}

function binLabel(at, bin) {
  const iso = new Date(at * 1000).toISOString();
  return bin === HOUR_S ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : iso.slice(0, 10);
}

function binTable({ xs, groups, columns, bin }) {
  const unit = bin === HOUR_S ? t("timeline.hour") : t("timeline.day");
  return h("details", {}, h("summary", {}, t(bin === HOUR_S ? "timeline.table.hour" : "timeline.table")),
    h("table", { id: "timeline-table" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, unit), groups.map((g) => h("th", { scope: "col" }, g)))),
      h("tbody", {}, xs.map((at, i) => (columns.some((c) => c[i]) ? h("tr", {}, h("td", {}, binLabel(at, bin)), columns.map((c) => h("td", {}, c[i]))) : null)))));
}

function confidenceChart(target, facts, span) {
  const level = (value) => (value == null ? "" : t(`timeline.level.${LEVEL_NAMES[value] || "none"}`));
  chart(
    target,
    {
      series: [{}, { label: t("timeline.confidence"), stroke: "#6b3fa0", points: { show: true, size: 7 }, width: 0, value: (u, v) => level(v) }],
      scales: { y: { range: [0.5, 3.5] } },
      axes: [{}, { splits: () => [1, 2, 3], values: (u, splits) => splits.map(level), size: 70 }],
    },
    [facts.map((f) => Date.parse(f.updated_at) / 1000), facts.map((f) => CONFIDENCE_LEVEL[f.confidence] || null)],
    span,
  );
}

export async function timelineView({ params: state, userId, container, stale }) {
  const by = state.group === "category" ? "category" : "kind";
  const { items } = await listAll(userId, {}, TIMELINE_MAX);
  if (stale()) return;
  const chooser = field("timeline-group", t("timeline.group"), select("group", [["kind", t("timeline.group.kind")], ["category", t("timeline.group.category")]], by));
  chooser.querySelector("select").addEventListener("change", (event) => go({ user_id: userId, view: "timeline", group: event.target.value }));
  container.append(h("h2", {}, t("timeline.title")), h("p", {}, t("timeline.help", { count: TIMELINE_MAX })), chooser);
  if (!items.length) {
    container.append(h("p", { class: "empty" }, t("timeline.empty")));
    return;
  }
  const facts = items.filter((m) => m.kind === "semantic").sort((a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at));
  const series = perBin(items, by, spanOf(items.map((m) => Date.parse(m.occurred_at) / 1000)));
  const counts = h("div", { class: "chart", id: "timeline-chart", role: "img", "aria-label": t("timeline.title") });
  const confidence = h("div", { class: "chart", id: "confidence-chart", role: "img", "aria-label": t("timeline.facts") });
  container.append(counts, h("h3", {}, t("timeline.facts")), confidence);
  chart(
    counts,
    {
      series: [{}, ...series.groups.map((label, i) => ({ label, stroke: COLOURS[i % COLOURS.length], width: 2, points: { show: series.xs.length < 120 } }))],
      // counts: whole-number ticks only, from 0
      scales: { y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { label: t(series.bin === HOUR_S ? "timeline.axis.hour" : "timeline.axis.day"), incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }],
    },
    [series.xs, ...series.columns],
    series.span,
  );
  if (facts.length) confidenceChart(confidence, facts, spanOf(facts.map((f) => Date.parse(f.updated_at) / 1000)));
  else confidence.replaceWith(h("p", { class: "empty", id: "confidence-none" }, t("timeline.facts.none")));
  container.append(binTable(series));
}

// --- review queue ------------------------------------------------------------------------------
async function sourcesOf(fact) {
  const sources = await Promise.all((fact.source_memory_ids || []).map((id) => api.get(id).then((r) => r.memory).catch(() => null)));
  return sources.filter(Boolean);
}

export async function reviewView({ userId, container, stale }) {
  const page = await api.list(userId, { kind: "semantic", status: "pending", limit: 50 });
  if (stale()) return;
  container.append(h("h2", {}, t("review.title")), h("p", {}, t("review.help")));
  if (!page.results.length) {
    container.append(h("p", { class: "empty", id: "review-empty" }, t("review.empty")));
    return;
  }
  const withSources = await Promise.all(page.results.map(async (fact) => [fact, await sourcesOf(fact)]));
  const rows = withSources.map(([fact, sources]) =>
    h(
      "tr",
      { dataset: { memoryId: fact.memory_id } },
      h("td", {}, h("input", { type: "checkbox", class: "pick", value: fact.memory_id, "aria-label": t("review.select", { id: short(fact.content, 40) }) })),
      h("td", { class: "content" }, memoryLink(userId, fact, fact.content), h("br"), h("small", {}, `${fact.category || ""} · ${fact.confidence}`)),
      h("td", {}, h("ul", { class: "sources" }, sources.map((s) => h("li", {}, memoryLink(userId, s, s.content))))),
      h("td", { class: "result" },
        h("button", { type: "button", class: "small", dataset: { action: "approve" }, "aria-label": `${t("detail.approve")}: ${short(fact.content, 40)}` }, t("detail.approve")),
        " ",
        h("button", { type: "button", class: "small", dataset: { action: "reject" }, "aria-label": `${t("detail.reject")}: ${short(fact.content, 40)}` }, t("detail.reject"))),
    ),
  );
  const table = h(
    "table",
    { class: "review", id: "review-table" },
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, h("input", { type: "checkbox", id: "pick-all", "aria-label": t("review.select_all"), onchange: (e) => table.querySelectorAll(".pick").forEach((box) => { box.checked = e.target.checked; }) })),
      h("th", { scope: "col" }, t("review.fact")), h("th", { scope: "col" }, t("review.sources")), h("th", { scope: "col" }, ""))),
    h("tbody", {}, rows),
  );
  const decide = async (action, only) => {
    const picked = only ? [only] : [...table.querySelectorAll(".pick:checked")].map((box) => box.value);
    if (!picked.length) throw new Error(t("error.select"));
    let done = 0;
    for (const id of picked) {
      await (action === "approve" ? api.approve(id) : api.reject(id));
      const row = table.querySelector(`tr[data-memory-id="${CSS.escape(id)}"]`);
      row.querySelector(".result").textContent = t(action === "approve" ? "review.approved" : "review.rejected");
      row.querySelector(".pick").disabled = true;
      row.querySelector(".pick").checked = false;
      row.classList.add("decided");
      done += 1;
    }
    notify(t("review.done", { count: done, action: t(action === "approve" ? "review.approved" : "review.rejected") }));
    refreshBadge(userId);
  };
  table.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    decide(button.dataset.action, button.closest("tr").dataset.memoryId).catch(fail);
  });
  container.append(
    h("div", { class: "actions" },
      h("button", { type: "button", id: "approve-selected", onclick: () => decide("approve").catch(fail) }, t("review.approve_selected")),
      h("button", { type: "button", id: "reject-selected", onclick: () => decide("reject").catch(fail) }, t("review.reject_selected"))),
    table,
  );
}

// --- ask like the agent -----------------------------------------------------------------------
const WHY_PARTS = [
  ["similarity", "vector"], ["keyword", "keyword"], ["relevance", "relevance"], ["recency", "recency"],
  ["confidence_weight", "confidence"], ["kind_boost", "kind boost"], ["time_boost", "time boost"],
  ["speaker_boost", "speaker boost"], ["assistant_weight", "assistant weight"], ["use_weight", "use weight"],
  ["probability", "probability"], ["score", "score"],
];

function whyBars(why, scale) {
  return h(
    "div",
    { class: "why", role: "list", "aria-label": t("ask.why") },
    WHY_PARTS.filter(([key]) => typeof why[key] === "number").map(([key, label]) => {
      const value = why[key];
      const width = Math.max(0, Math.min(100, (Math.abs(value) / (scale[key] || 1)) * 100));
      return h(
        "div",
        { class: "why-part", role: "listitem", dataset: { part: key, value: String(value) } },
        h("span", { class: "why-label" }, label),
        h("span", { class: "why-track", "aria-hidden": "true" }, h("span", { class: `why-bar part-${key}`, style: `width:${width.toFixed(1)}%` })),
        h("span", { class: "why-value" }, value.toFixed(3)),
      );
    }),
  );
}

export async function askView({ params: state, userId, container }) {
  const form = h(
    "form",
    { id: "ask-form", class: "ask filters" },
    field("ask-query", t("ask.query"), h("input", { name: "q", value: state.q || "", required: true })),
    field("ask-as-of", t("ask.as_of"), h("input", { name: "as_of", value: state.as_of || "", placeholder: "2026-03-01" })),
    field("ask-kinds", t("ask.kinds"), select("kinds", [["", t("filters.any")], ["episodic", "episodic"], ["semantic", "semantic"]], state.kinds)),
    field("ask-category", t("filters.category"), h("input", { name: "category", value: state.category || "" })),
    field("ask-status", t("filters.status"), select("status", [["", t("filters.any")], ...["pending", "approved", "rejected", "superseded"].map((v) => [v, v])], state.status)),
    field("ask-top-k", t("ask.top_k"), select("top_k", [["10", "10"], ["5", "5"], ["20", "20"]], state.top_k)),
    h("div", { class: "actions" }, h("button", { type: "submit" }, t("ask.submit"))),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(form));
    if (!String(values.q).trim()) return fail(new Error(t("error.query")));
    go({ user_id: userId, view: "ask", q: values.q, as_of: values.as_of, kinds: values.kinds, category: values.category.trim(), status: values.status, top_k: values.top_k });
  });
  container.append(h("h2", {}, t("ask.title")), form);
  if (!state.q) return;
  const body = { user_id: userId, query: state.q, top_k: Number(state.top_k || 10) };
  if (state.as_of) body.as_of = isoTime("ask.as_of", state.as_of);
  if (state.kinds) body.kinds = [state.kinds];
  if (state.category) body.categories = [state.category];
  if (state.status) body.statuses = [state.status];
  const answer = await api.retrieve(body);
  const scale = {};
  for (const result of answer.results) {
    for (const [key, value] of Object.entries(result.why || {})) {
      if (typeof value === "number") scale[key] = Math.max(scale[key] || 0, Math.abs(value), key === "score" ? 0 : 1);
    }
  }
  container.append(
    h("h3", {}, t("ask.results")),
    h("p", { class: "hint" }, t("ask.order")),
    answer.partial ? h("p", { class: "warning" }, t("ask.partial")) : "",
    answer.results.length
      ? h("ol", { class: "ranked", id: "ask-results" }, answer.results.map((result) =>
          h("li", { dataset: { memoryId: result.memory_id } },
            h("div", { class: "ranked-head" }, memoryLink(userId, result, result.content), h("span", { class: "score" }, t("ask.score", { score: result.score.toFixed(4) }))),
            h("small", {}, `${result.kind} · ${when(result.occurred_at)}${result.status ? ` · ${result.status}` : ""}`),
            whyBars(result.why || {}, scale))))
      : h("p", { class: "empty", id: "ask-empty" }, answer.unknown_names?.length
        ? t("ask.unknown_names", { names: answer.unknown_names.join(", ") })
        : t("ask.empty")),
  );
}

// --- reflection -------------------------------------------------------------------------------
function factList(userId, title, facts, id) {
  return h("section", { class: "reflected", id },
    h("h4", {}, `${title} (${facts.length})`),
    facts.length ? h("ul", {}, facts.map((f) => h("li", {}, f.memory_id && !f.memory_id.startsWith("dry") ? memoryLink(userId, f, f.content) : f.content, ` — ${f.confidence || ""} ${f.category || ""}`))) : h("p", {}, t("reflection.none")));
}

export function reflectionResult(userId, result) {
  const mode = t(result.dry_run ? "reflection.mode.dry" : "reflection.mode.real");
  return h("div", { class: "reflection-result" },
    h("p", { class: "summary" }, t("reflection.result", { mode, episodes: result.episodes_considered, reflector: result.reflector })),
    factList(userId, t("reflection.created"), result.created, "reflected-created"),
    factList(userId, t("reflection.updated"), result.updated, "reflected-updated"),
    factList(userId, t("reflection.superseded"), result.superseded, "reflected-superseded"),
    factList(userId, t("reflection.pending"), result.pending, "reflected-pending"));
}

const LAST_RUN = "hindsight.explorer.lastReflection";

export async function reflectionView({ userId, container, stale }) {
  const status = await api.reflection(userId);
  if (stale()) return;
  const lastRun = JSON.parse(sessionStorage.getItem(LAST_RUN) || "{}")[userId];
  const output = h("div", { id: "reflection-output", "aria-live": "polite" });
  const run = async (dryRun) => {
    if (!dryRun && !(await confirmAction(t("reflection.confirm", { user: userId })))) return;
    output.replaceChildren(t("list.loading"));
    const result = await api.reflect({ user_id: userId, dry_run: dryRun });
    if (!dryRun) {
      const runs = JSON.parse(sessionStorage.getItem(LAST_RUN) || "{}");
      runs[userId] = new Date().toISOString();
      sessionStorage.setItem(LAST_RUN, JSON.stringify(runs));
      refreshBadge(userId);
      const fresh = await api.reflection(userId);
      container.querySelector("#reflection-cursor").textContent = fresh.cursor ? when(fresh.cursor) : t("reflection.never");
      container.querySelector("#reflection-waiting").textContent = `${fresh.episodes_waiting}${fresh.episodes_waiting_more ? "+" : ""}`;
    }
    output.replaceChildren(reflectionResult(userId, result));
  };
  container.append(
    h("h2", {}, t("reflection.title")),
    h("dl", { class: "fields" },
      h("dt", {}, t("reflection.cursor")), h("dd", { id: "reflection-cursor" }, status.cursor ? when(status.cursor) : t("reflection.never")),
      h("dt", {}, t("reflection.waiting")), h("dd", { id: "reflection-waiting" }, `${status.episodes_waiting}${status.episodes_waiting_more ? "+" : ""}`),
      h("dt", {}, t("reflection.last_run")), h("dd", {}, lastRun ? when(lastRun) : "—")),
    h("div", { class: "actions" },
      h("button", { type: "button", id: "dry-run", onclick: () => run(true).catch(fail) }, t("reflection.dry")),
      h("button", { type: "button", id: "run-reflection", onclick: () => run(false).catch(fail) }, t("reflection.run"))),
    output,
  );
}

// --- forget -------------------------------------------------------------------------------------
export async function forgetView({ userId, container }) {
  const erase = async () => {
    notify(t("forget.counting"));
    const [episodes, facts] = await Promise.all([
      listAll(userId, { kind: "episodic", include_expired: "true" }, COUNT_MAX),
      listAll(userId, { kind: "semantic", include_expired: "true" }, COUNT_MAX),
    ]);
    const count = (found) => `${found.items.length}${found.more ? "+" : ""}`;
    const question = t("forget.erase.confirm", { user: userId, episodes: count(episodes), facts: count(facts), limit: COUNT_MAX });
    if (!(await confirmAction(question))) return notify("");
    const result = await api.erase(userId);
    go({ user_id: userId, view: "memories" });
    notify(t("forget.erased", { user: userId, deleted: result.deleted }));
  };
  container.append(
    h("h2", {}, t("forget.title")),
    h("p", {}, t("forget.erase.help")),
    h("button", { type: "button", id: "erase-user", class: "danger", onclick: () => erase().catch(fail) }, t("forget.erase", { user: userId })),
    h("p", {}, h("a", { href: linkTo({ user_id: userId, view: "memories" }), "data-internal": true }, t("nav.memories"))),
  );
}
