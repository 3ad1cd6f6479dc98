// The explorer's shell: sign-in, the user, the views and the URL that names them.
// Every view is addressed by the query string (?user_id=u1&view=memories&kind=semantic,
// ?user_id=u1&view=memory&memory=ID), so any screen can be shared as a link.
import { api, apiKey, setApiKey } from "./api.js";
import { h } from "./dom.js";
import { t } from "./strings.js";
import { memoriesView, memoryView, whyView } from "./memories.js";
import { askView, forgetView, reflectionView, reviewView, timelineView } from "./tools.js";

const VIEWS = {
  memories: memoriesView,
  memory: memoryView,
  why: whyView,
  timeline: timelineView,
  review: reviewView,
  ask: askView,
  reflection: reflectionView,
  forget: forgetView,
};
const NAV = ["memories", "timeline", "review", "ask", "reflection", "forget"];
const NAV_OF = { memory: "memories", why: "memories" };

const main = document.getElementById("main");
const message = document.getElementById("message");
let rendering = 0;

export function linkTo(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, value);
  }
  return `${location.pathname}?${search}`;
}

export function go(params, { replace = false } = {}) {
  const url = linkTo(params);
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  render();
}

// Links inside the page change the view without reloading it (and still open in a new tab)
document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-internal]");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
  event.preventDefault();
  history.pushState(null, "", link.getAttribute("href"));
  render();
});
window.addEventListener("popstate", () => render());

export function notify(text) {
  message.className = "message info";
  message.replaceChildren(text);
}

export function fail(error) {
  message.className = "message error";
  message.replaceChildren(error && error.message ? error.message : String(error));
}

function clearMessage() {
  message.className = "message";
  message.replaceChildren();
}

function params() {
  return Object.fromEntries(new URLSearchParams(location.search));
}

// --- sign-in -------------------------------------------------------------------------
function showAuth() {
  const key = apiKey();
  const status = document.getElementById("auth-status");
  status.textContent = key ? t("auth.signed.in", { tail: key.slice(-4) }) : t("auth.keyless");
  document.getElementById("signout").hidden = !key;
}

document.getElementById("auth-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("api-key");
  setApiKey(input.value.trim());
  input.value = "";
  showAuth();
  render();
});
document.getElementById("signout").addEventListener("click", () => {
  setApiKey("");
  showAuth();
  render();
});

document.getElementById("user-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const userId = document.getElementById("user-id").value.trim();
  const view = params().view;
  go({ user_id: userId, view: NAV.includes(view) ? view : "memories" });
});

// --- the pending badge ------------------------------------------------------------------
export async function refreshBadge(userId) {
  const badge = document.getElementById("pending-badge");
  if (!userId) {
    badge.hidden = true;
    return;
  }
  try {
    const page = await api.list(userId, { kind: "semantic", status: "pending", limit: 50 });
    const count = `${page.results.length}${page.has_more ? "+" : ""}`;
    badge.textContent = count;
    badge.setAttribute("aria-label", t("badge.pending", { count }));
    badge.hidden = false;
  } catch (error) {
    badge.hidden = true;
  }
}

function showNav(current, userId) {
  const nav = document.getElementById("views");
  for (const link of nav.querySelectorAll("a")) {
    const view = link.dataset.view;
    link.setAttribute("href", linkTo({ user_id: userId, view }));
    if (view === (NAV_OF[current] || current)) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

// --- rendering ------------------------------------------------------------------------------
export async function render() {
  const ticket = ++rendering;
  const state = params();
  const userId = state.user_id || "";
  const view = VIEWS[state.view] ? state.view : "memories";
  document.getElementById("user-id").value = userId;
  showNav(view, userId);
  clearMessage();
  const container = h("section", { class: `view view-${view}`, "aria-busy": "true" });
  main.replaceChildren(container);
  if (!userId) {
    container.append(h("p", { class: "hint" }, t("user.none")));
    container.removeAttribute("aria-busy");
    container.dataset.ready = "true";
    refreshBadge("");
    return;
  }
  refreshBadge(userId);
  const context = { params: state, userId, container, stale: () => ticket !== rendering };
  try {
    await VIEWS[view](context);
  } catch (error) {
    if (ticket === rendering) fail(error);
  } finally {
    container.removeAttribute("aria-busy");
    container.dataset.ready = "true";
  }
}

function buildNav() {
  const nav = document.getElementById("views");
  nav.setAttribute("aria-label", t("nav.label"));
  const list = h("ul");
  for (const view of NAV) {
    const label = [t(`nav.${view}`)];
    if (view === "review") {
      label.push(" ", h("span", { id: "pending-badge", class: "badge", hidden: true }));
    }
    list.append(h("li", {}, h("a", { href: "#", "data-internal": true, dataset: { view } }, label)));
  }
  nav.replaceChildren(list);
}

function translateStatic() {
  for (const element of document.querySelectorAll("[data-t]")) {
    element.textContent = t(element.dataset.t);
  }
  document.title = t("app.title");
}

translateStatic();
buildNav();
showAuth();
render();
