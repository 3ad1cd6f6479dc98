/**
 * Sending one call: the request, its timeout and abort signal, the retry policy, and the
 * answer turned into JSON or a typed error. The client (`client.ts`) says what to send;
 * everything about the wire lives here, as in the Python client's `_calls.py`.
 */
import {
  HindsightConnectionError,
  HindsightError,
  HindsightTimeoutError,
  errorForStatus,
} from "./errors.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";
export const URL_ENV = "HINDSIGHT_URL";
export const API_KEY_ENV = "HINDSIGHT_API_KEY";
export const IDEMPOTENCY_HEADER = "Idempotency-Key";
export const DEFAULT_TIMEOUT_MS = 30_000;
// an erase rewrites the user's store files on the embedded server (seconds per 100k
// memories): it waits this long whatever the timeout, as the Python client's erase_user
export const ERASE_TIMEOUT_MS = 600_000;
export const USER_AGENT = "hindsight-client-typescript/0.1.0";

/** What every call accepts besides its fields. */
export interface RequestOptions {
  /** Aborts the call (and its retries); the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Milliseconds one attempt may take, answer included (default: the client's). */
  timeout?: number;
}

/** One request: what to send, and whether repeating it is safe. */
export interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  body?: unknown;
  query?: Record<string, unknown>;
  /** Safe to repeat after a lost answer (reads, deletes, writes with an Idempotency-Key). */
  idempotent: boolean;
  headers?: Record<string, string>;
  /** The attempt's timeout is raised to at least this (erase). */
  leastTimeout?: number;
  /** The answer is read as text (NDJSON export), not as a JSON object. */
  text?: boolean;
}

// --- configuration ------------------------------------------------------------------------
export function env(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return proc?.env?.[name] || undefined;
}

export function resolveBaseUrl(baseUrl: string | undefined): string {
  const url = baseUrl || env(URL_ENV) || DEFAULT_URL;
  if (!/^https?:\/\//.test(url)) {
    throw new HindsightError(
      `baseUrl ${JSON.stringify(url)} must start with http:// or https:// ` +
        `(e.g. ${DEFAULT_URL}, or your API's invoke URL with its stage)`,
    );
  }
  return url.replace(/\/+$/, "");
}

/** A fresh Idempotency-Key: a retry of the same write sends it again and the server answers
 * with the first answer, storing nothing new (the Python client's `once()`). */
export function newIdempotencyKey(): string {
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (crypto?.randomUUID) return `hindsight-ts-${crypto.randomUUID().replace(/-/g, "")}`;
  let hex = "";
  for (let i = 0; i < 32; i++) hex += Math.floor(Math.random() * 16).toString(16);
  return `hindsight-ts-${hex}`;
}

// --- retries ------------------------------------------------------------------------------
const RETRY_ALWAYS = new Set([429, 503]); // the server wrote nothing; worth another try
const RETRY_IF_IDEMPOTENT = new Set([502, 504]); // a gateway lost the answer; may have run
// a 409 with Retry-After is a store whose Idempotency-Key is still being processed: asking
// again gets its answer; other conflicts carry none and need a different request
const RETRY_IF_ASKED = new Set([409]);
// connection errors raised before the request left this process: always safe to repeat
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

export interface RetryOptions {
  /** Retries after the first attempt (default 3). */
  maxRetries: number;
  /** Milliseconds of the first backoff; attempt n waits half to all of backoff * 2^n. */
  backoff: number;
  /** The longest backoff in milliseconds (default 8000). */
  maxBackoff: number;
  /** A server's Retry-After is honoured up to this many milliseconds (default 60000). */
  maxRetryAfter: number;
}

export const DEFAULT_RETRY: RetryOptions = {
  maxRetries: 3,
  backoff: 500,
  maxBackoff: 8_000,
  maxRetryAfter: 60_000,
};

export function shouldRetryStatus(
  status: number,
  idempotent: boolean,
  retryAfter: number | undefined,
): boolean {
  if (RETRY_IF_ASKED.has(status)) return retryAfter !== undefined;
  return RETRY_ALWAYS.has(status) || (idempotent && RETRY_IF_IDEMPOTENT.has(status));
}

export function backoffDelay(policy: RetryOptions, attempt: number, retryAfter?: number): number {
  if (retryAfter !== undefined) return Math.max(0, Math.min(retryAfter, policy.maxRetryAfter));
  const ceiling = Math.min(policy.maxBackoff, policy.backoff * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** `Retry-After` in milliseconds: seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (value.trim() !== "" && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const when = Date.parse(value);
  return Number.isNaN(when) ? undefined : Math.max(0, when - Date.now());
}

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === "object"; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

// --- one attempt --------------------------------------------------------------------------
/** How an attempt ended without an HTTP answer: timed out, or the connection failed. */
class NoAnswer {
  constructor(
    readonly error: HindsightError,
    readonly sent: boolean,
  ) {}
}

/** A signal that fires when the caller's does or when `ms` pass, and a way to release it. */
function attemptSignal(caller: AbortSignal | undefined, ms: number) {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, ms);
  const onAbort = () => controller.abort(caller?.reason);
  caller?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    release: () => {
      clearTimeout(timer);
      caller?.removeEventListener("abort", onAbort);
    },
  };
}

function queryString(query: Record<string, unknown> | undefined): string {
  if (!query) return "";
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (value instanceof Date) params.set(key, value.toISOString());
    else if (typeof value === "object") params.set(key, JSON.stringify(value));
    else params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

function errorMessage(text: string, response: Response): string {
  try {
    const body = JSON.parse(text) as { message?: unknown };
    if (body && typeof body.message === "string") return body.message;
  } catch {
    // not JSON: the text itself says what went wrong
  }
  return text.trim().slice(0, 500) || response.statusText || "error";
}

function jsonObject(text: string, status: number): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new HindsightError(
      `the server answered ${status} with a body that is not JSON; is the base URL a Hindsight API?`,
      status,
      { cause: error },
    );
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    throw new HindsightError(`the server answered ${status} with JSON that is not an object`, status);
  }
  return body as Record<string, unknown>;
}

export interface Transport {
  baseUrl: string;
  headers: Record<string, string>;
  timeout: number;
  retry: RetryOptions;
  fetch: typeof fetch;
}

type Outcome = { response: Response; text: string } | NoAnswer;

async function attempt(t: Transport, call: Call, url: string, options: RequestOptions): Promise<Outcome> {
  const ms = Math.max(options.timeout ?? t.timeout, call.leastTimeout ?? 0);
  const guard = attemptSignal(options.signal, ms);
  const init: RequestInit = {
    method: call.method,
    headers: { ...t.headers, ...call.headers },
    signal: guard.signal,
  };
  if (call.body !== undefined) {
    init.body = JSON.stringify(call.body);
    (init.headers as Record<string, string>)["Content-Type"] = "application/json";
  }
  let sent = false;
  try {
    const response = await t.fetch(url, init);
    sent = true;
    return { response, text: await response.text() };
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    const where = `${call.method} ${url}`;
    if (guard.timedOut()) {
      const message =
        `no answer from ${where} within ${ms} ms; the server may be busy or unreachable — ` +
        "raise timeout or check the URL";
      return new NoAnswer(new HindsightTimeoutError(message, undefined, { cause: error }), true);
    }
    const code = errorCode(error);
    const message =
      `cannot reach ${where} (${code ?? String(error)}); is the server running ` +
      "(make run) and is the base URL right?";
    const notSent = !sent && code !== undefined && NOT_SENT.has(code);
    return new NoAnswer(new HindsightConnectionError(message, undefined, { cause: error }), !notSent);
  } finally {
    guard.release();
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Send a call, retrying as the policy says; the answer's JSON object (or text). */
export async function send<T>(t: Transport, call: Call, options: RequestOptions = {}): Promise<T> {
  return (await respond<T>(t, call, options)).body;
}

/** `send`, with the answer's status (a write's 202 says it was accepted as a job). */
export async function respond<T>(
  t: Transport,
  call: Call,
  options: RequestOptions = {},
): Promise<{ status: number; body: T }> {
  const url = `${t.baseUrl}${call.path}${queryString(call.query)}`;
  for (let n = 0; ; n++) {
    const outcome = await attempt(t, call, url, options);
    const last = n >= t.retry.maxRetries;
    if (outcome instanceof NoAnswer) {
      if (last || !(call.idempotent || !outcome.sent)) throw outcome.error;
      await sleep(backoffDelay(t.retry, n), options.signal);
      continue;
    }
    const { response, text } = outcome;
    if (response.ok) {
      const body = (call.text ? text : jsonObject(text, response.status)) as T;
      return { status: response.status, body };
    }
    const retryAfter = retryAfterMs(response.headers.get("Retry-After"));
    if (last || !shouldRetryStatus(response.status, call.idempotent, retryAfter)) {
      throw errorForStatus(response.status, errorMessage(text, response));
    }
    await sleep(backoffDelay(t.retry, n, retryAfter), options.signal);
  }
}
