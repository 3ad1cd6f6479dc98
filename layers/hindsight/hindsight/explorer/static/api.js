// The public HTTP API, as any client calls it: the key the user signed in with goes in
// the Authorization header; nothing here reaches the server any other way.
import { t } from "./strings.js";

const KEY_NAME = "hindsight.explorer.key";
// "/explorer" on hindsight serve, "/Prod/explorer" behind API Gateway: the API is beside it
export const API_ROOT = location.pathname.replace(/\/explorer\/?$/, "");

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function apiKey() {
  return sessionStorage.getItem(KEY_NAME) || "";
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_NAME, key);
  else sessionStorage.removeItem(KEY_NAME);
}

function explain(status, body) {
  const message = (body && typeof body.message === "string" && body.message) || `HTTP ${status}`;
  if (status === 401) return t("error.401", { message });
  return message;
}

export async function call(method, path, { query, body } = {}) {
  const url = new URL(API_ROOT + path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  const headers = { Accept: "application/json" };
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, t("error.network"));
  }
  let data = null;
  try {
    data = await response.json();
  } catch (error) {
    data = null;
  }
  if (!response.ok) throw new ApiError(response.status, explain(response.status, data));
  return data;
}

const enc = encodeURIComponent;
export const api = {
  health: () => call("GET", "/v1/health"),
  list: (userId, query) => call("GET", `/v1/users/${enc(userId)}/memories`, { query }),
  get: (memoryId) => call("GET", `/v1/memories/${enc(memoryId)}`),
  remove: (memoryId) => call("DELETE", `/v1/memories/${enc(memoryId)}`),
  erase: (userId) => call("DELETE", `/v1/users/${enc(userId)}`),
  approve: (memoryId) => call("POST", `/v1/semantic/${enc(memoryId)}/approve`),
  reject: (memoryId) => call("POST", `/v1/semantic/${enc(memoryId)}/reject`),
  retrieve: (body) => call("POST", "/v1/retrieve", { body }),
  reflect: (body) => call("POST", "/v1/reflect", { body }),
  reflection: (userId) => call("GET", `/v1/users/${enc(userId)}/reflection`),
};

// Every page of a listing, up to `max` memories (for counts and the timeline).
export async function listAll(userId, query, max) {
  const items = [];
  let cursor;
  for (;;) {
    const page = await api.list(userId, { ...query, limit: 50, cursor });
    items.push(...page.results);
    if (!page.has_more || items.length >= max) return { items, more: page.has_more };
    cursor = page.next_cursor;
  }
}

// A date typed by a person as the API wants it: a bare date is midnight UTC, a time
// without a zone is UTC. Anything else goes as typed (the API says what is wrong).
export function isoTime(field, value) {
  const text = (value || "").trim();
  if (!text) return undefined;
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return `${text}T00:00:00Z`;
  if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text)) {
    return `${text.replace(" ", "T")}Z`;
  }
  if (Number.isNaN(Date.parse(text))) {
    throw new ApiError(422, t("error.date", { field: t(field), value: text }));
  }
  return text;
}
