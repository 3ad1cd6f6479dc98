/**
 * `Hindsight`: the client. One method per route of the HTTP API, with the Python client's
 * names in camelCase (`store`, `storeMany`, `retrieve`, `iterRetrieve`, `context`, ...).
 *
 *     import { Hindsight } from "@hindsight-memory/client";
 *     const memory = new Hindsight(); // HINDSIGHT_URL / HINDSIGHT_API_KEY, or pass them
 *     await memory.store("u1", "用户对花生过敏", { category: "constraint" });
 *     const page = await memory.retrieve("u1", "饮食禁忌");
 *
 * Fields are the wire's (snake_case, as in the OpenAPI document); dates may be `Date`s or
 * ISO 8601 strings. Every method takes `signal` and `timeout` (milliseconds) in its options.
 * The three writes can be kept by the server as jobs (`jobs.ts`): `{ wait: false }` resolves
 * to a `Job` at once.
 */
import { HindsightError } from "./errors.js";
import {
  API_KEY_ENV,
  type Call,
  DEFAULT_RETRY,
  DEFAULT_TIMEOUT_MS,
  ERASE_TIMEOUT_MS,
  IDEMPOTENCY_HEADER,
  type RequestOptions,
  type RetryOptions,
  type Transport,
  USER_AGENT,
  env,
  newIdempotencyKey,
  resolveBaseUrl,
  respond,
  send,
} from "./http.js";
import { ASYNC_CHARS, Job, type JobProgressEvent, type JobStatus, PREFER_ASYNC, type WaitOptions } from "./jobs.js";
import type { components, operations } from "./schema.js";

type Schemas = components["schemas"];
/** A date-time field: a `Date` or an ISO 8601 string. */
export type When = Date | string;
/** Request fields: all optional (the server fills its defaults), date-times as `When`. */
type Dated<T> = { [K in keyof T]?: string extends T[K] ? T[K] | Date : T[K] };

export type Memory = Schemas["MemoryView"];
export type RetrievedMemory = Schemas["ScoredMemory"];
export type StoreResult = Schemas["StoreOutcome"];
export type RetrievePage = Schemas["RetrieveResponse"];
export type MemoryPage = Schemas["ListResponse"];
export type ContextResult = Schemas["ContextResponse"];
export type ReflectResult = Schemas["ReflectResponse"];
export type ReflectionStatus = Schemas["ReflectionStatusResponse"];
export type DeleteResult = Schemas["DeleteResponse"];
export type EraseResult = Schemas["EraseResponse"];
export type PinResult = Schemas["PatchResponse"];
export type RestoreResult = Schemas["RestoreResponse"];
export type DocumentResult = Schemas["DocumentOutcome"];
export type Health = Schemas["HealthResponse"];
/** One line of an export: the header, a memory, or the end line. */
export type ExportRecord = Record<string, unknown>;

export type StoreFields = Dated<Omit<Schemas["StoreMemoryCommand"], "user_id" | "content">>;
export type BatchItem = string | (Dated<Omit<Schemas["BatchItem"], "user_id">> & { content: string });
export type RetrieveFields = Dated<Omit<Schemas["RetrieveCommand"], "user_id" | "query">>;
export type ContextFields = Dated<Omit<Schemas["ContextCommand"], "user_id" | "session_id">>;
export type ReflectFields = Dated<Omit<Schemas["ReflectCommand"], "user_id">>;
export type ListFilters = Dated<NonNullable<operations["list_memories"]["parameters"]["query"]>>;
export type DocumentFields = Dated<
  Omit<Schemas["DocumentUpload"], "user_id" | "file_name" | "content_base64" | "text">
>;

export type { RequestOptions, RetryOptions };

/** How a write waits for the job the server may keep it as. */
export interface JobOptions {
  /** `false`: send the write as a job (`Prefer: respond-async`) and resolve to its `Job` at
   * once. `true`: resolve to the write's result. See each method for the default. */
  wait?: boolean;
  /** Milliseconds between two readings of a job the call follows (default 500). */
  pollIntervalMs?: number;
}
/** The options of a call that resolves to a `Job`. */
type NoWait = { wait: false };
/** The options of a call that resolves to the write's result. */
type Waits = { wait?: true };

export interface StoreOptions extends StoreFields, RequestOptions, JobOptions {
  /** The write's Idempotency-Key (default: a new one, sent again on every retry; a retried
   * job-store gets the same job). */
  idempotencyKey?: string;
  /** While a store sent as a job is followed: the job's progress (chunks embedded). */
  onProgress?: (progress: JobProgressEvent) => void;
}
export interface StoreManyOptions extends RequestOptions, JobOptions {
  /** Items a request (at most the server's 100). */
  batchSize?: number;
  /** Called after each batch is stored: how many items are done out of how many. */
  onProgress?: (progress: { done: number; total: number; results: StoreResult[] }) => void;
}
export interface RetrieveOptions extends RetrieveFields, RequestOptions {}
export interface ContextOptions extends Omit<ContextFields, "query">, RequestOptions {}
export interface ReflectOptions extends ReflectFields, RequestOptions {}
export interface ListOptions extends ListFilters, RequestOptions {}
export interface DocumentOptions extends DocumentFields, RequestOptions, JobOptions {
  /** While the document's job is followed: its progress (chunks embedded). */
  onProgress?: (progress: JobProgressEvent) => void;
  /** The document's text (Markdown, plain text, HTML) ... */
  text?: string;
  /** ... or its bytes (PDF, DOCX, any of the text types). */
  content?: Uint8Array | ArrayBuffer;
}
/** Iterating over pages: at most `limit` items (default: all). */
export interface IterOptions {
  limit?: number;
}

export interface HindsightOptions {
  /** Default `$HINDSIGHT_URL`, else http://127.0.0.1:8080; a deployed API: its invoke URL with the stage. */
  baseUrl?: string;
  /** Default `$HINDSIGHT_API_KEY` (sent as `Authorization: Bearer`). */
  apiKey?: string;
  /** Milliseconds one attempt may take (default 30000). */
  timeout?: number;
  /** Retries on 429/503 (every call) and lost answers (calls safe to repeat); default 3. */
  maxRetries?: number;
  /** First backoff in milliseconds (default 500), doubling up to `maxBackoff` (8000). */
  backoff?: number;
  maxBackoff?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** Replaces the platform's `fetch` (tests, proxies, instrumentation). */
  fetch?: typeof fetch;
}

export const MAX_BATCH_ITEMS = 100; // the server's limit for POST /v1/memories/batch

function segment(value: string, name: string): string {
  if (typeof value !== "string" || !value) {
    throw new HindsightError(`${name} must be a non-empty string, got ${JSON.stringify(value)}`);
  }
  return encodeURIComponent(value);
}

/** Options of how a write is sent and waited for, never fields of the request. */
const CALL_ONLY = ["wait", "onProgress", "pollIntervalMs"];

/** `options` without the call options (`signal`, `timeout`, ...): the fields to send. */
function fields<T extends object>(options: T | undefined, ...drop: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options ?? {})) {
    if (value === undefined || ["signal", "timeout", ...drop].includes(key)) continue;
    out[key] = value;
  }
  return out;
}

/** Characters as the server counts them (code points: an emoji is one, not two). */
function characters(text: string): number {
  if (text.length <= ASYNC_CHARS) return text.length; // never more code points than units
  let count = 0;
  for (const _ of text) count++;
  return count;
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function batchItem(item: BatchItem): Record<string, unknown> {
  if (typeof item === "string") return { content: item };
  if (item && typeof item === "object") return fields(item);
  throw new HindsightError(
    `storeMany items must be strings or objects with 'content', not ${typeof item}`,
  );
}

/** A client for one Hindsight API (the local server or a deployed API). */
export class Hindsight {
  readonly baseUrl: string;
  private readonly transport: Transport;

  constructor(options: HindsightOptions = {}) {
    this.baseUrl = resolveBaseUrl(options.baseUrl);
    const apiKey = options.apiKey ?? env(API_KEY_ENV);
    const headers: Record<string, string> = { Accept: "application/json" };
    // browsers refuse to set User-Agent on fetch; a header of our own says who calls
    headers["X-Hindsight-Client"] = USER_AGENT;
    if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== "function") {
      throw new HindsightError("no fetch on this platform (Node 18+, browsers, edge): pass options.fetch");
    }
    this.transport = {
      baseUrl: this.baseUrl,
      headers: { ...headers, ...options.headers },
      timeout: options.timeout ?? DEFAULT_TIMEOUT_MS,
      retry: {
        ...DEFAULT_RETRY,
        ...(options.maxRetries !== undefined && { maxRetries: options.maxRetries }),
        ...(options.backoff !== undefined && { backoff: options.backoff }),
        ...(options.maxBackoff !== undefined && { maxBackoff: options.maxBackoff }),
      },
      fetch: (input, init) => fetchImpl(input, init),
    };
  }

  private send<T>(call: Call, options?: RequestOptions): Promise<T> {
    return send<T>(this.transport, call, { signal: options?.signal, timeout: options?.timeout });
  }

  /** Send a write, with `Prefer: respond-async` when `asJob`: a 202 with a job id is that
   * job; any other answer (a server that keeps no jobs, or a write sent without the header)
   * is a handle finished from the start, holding the answer. */
  private async submit<T>(call: Call, asJob: boolean, options: RequestOptions): Promise<Job<T>> {
    const sent = asJob ? { ...call, headers: { ...call.headers, ...PREFER_ASYNC } } : call;
    const { status, body } = await respond<Record<string, unknown>>(this.transport, sent, {
      signal: options.signal,
      timeout: options.timeout,
    });
    if (status === 202 && typeof body.job_id === "string") {
      return new Job<T>(body.job_id, (id, o) => this.jobStatus(id, o), (result) => result as T);
    }
    return Job.done(body as T);
  }

  /** The job when `wait` is false, else its result (followed with `onProgress`). */
  private async settle<T>(
    job: Job<T>,
    options: RequestOptions & JobOptions & { onProgress?: WaitOptions["onProgress"] },
  ): Promise<T | Job<T>> {
    if (options.wait === false) return job;
    const { signal, timeout, pollIntervalMs, onProgress } = options;
    return job.wait({ signal, timeout, pollIntervalMs, onProgress });
  }

  private async *pages<T>(
    first: Call | (() => Call),
    options: RequestOptions,
    limit: number | undefined,
  ): AsyncGenerator<T> {
    let call = typeof first === "function" ? first() : first;
    let yielded = 0;
    for (;;) {
      const page = await this.send<{ results: T[]; has_more: boolean; next_cursor?: string | null }>(
        call,
        options,
      );
      for (const item of page.results) {
        if (limit !== undefined && yielded >= limit) return;
        yield item;
        yielded++;
      }
      if (!page.has_more || !page.next_cursor) return;
      call = call.body
        ? { ...call, body: { ...(call.body as object), cursor: page.next_cursor } }
        : { ...call, query: { ...call.query, cursor: page.next_cursor } };
    }
  }

  // --- store ------------------------------------------------------------------------------
  /** Store one episodic memory (`POST /v1/memories`). The same content for the same user and
   * scope within the dedup window answers `status: "skipped"` with the existing memory's id.
   * Retried with one Idempotency-Key, so a retry never stores it twice.
   *
   * `wait: false`: sent as a job; resolves at once to its `Job` (`job.wait()` for the result).
   * By default content over 20,000 characters is sent as a job and followed (`onProgress` is
   * told the chunks embedded), so no single request runs for minutes; shorter content is one
   * request. `wait: true`: always one request. Either way a write the server answers with a
   * job is followed to its result, and a failed job rejects with `JobFailedError`. */
  store(userId: string, content: string, options: StoreOptions & NoWait): Promise<Job<StoreResult>>;
  store(userId: string, content: string, options?: StoreOptions & Waits): Promise<StoreResult>;
  store(userId: string, content: string, options?: StoreOptions): Promise<StoreResult | Job<StoreResult>>;
  async store(userId: string, content: string, options: StoreOptions = {}): Promise<StoreResult | Job<StoreResult>> {
    const body = { user_id: userId, content, ...fields(options, ...CALL_ONLY, "idempotencyKey") };
    const headers = { [IDEMPOTENCY_HEADER]: options.idempotencyKey ?? newIdempotencyKey() };
    const call: Call = { method: "POST", path: "/v1/memories", body, idempotent: true, headers };
    const long = typeof content === "string" && characters(content) > ASYNC_CHARS;
    const asJob = options.wait === false || (options.wait === undefined && long);
    return this.settle(await this.submit<StoreResult>(call, asJob, options), options);
  }

  /** How a write accepted as a job is doing (`GET /v1/jobs/{job_id}`): its state, progress
   * and, once done, its `result` or `error`. `NotFoundError` for an unknown id (or one
   * finished more than a day ago, or sent with another key). */
  async jobStatus(jobId: string, options: RequestOptions = {}): Promise<JobStatus> {
    const path = `/v1/jobs/${segment(jobId, "jobId")}`;
    return this.send({ method: "GET", path, idempotent: true }, options);
  }

  /** Store many memories of one user (`POST /v1/memories/batch`, 100 a request). Items are
   * strings (the content) or objects with `content` and any field of `store`. One result per
   * item, in order. A failing batch throws; the batches before it stay stored (each batch is
   * all-or-nothing on the server). `onProgress` is told after each batch.
   *
   * A batch over 20,000 characters in all is sent as a job and followed. `wait: false`:
   * every batch is sent as a job and the call resolves to their `Job`s, one per request of
   * `batchSize` items, in order (each resolves to its batch's results); a batch refused at
   * once (422, 413, 403) throws, and the jobs accepted before it run on. */
  storeMany(userId: string, items: Iterable<BatchItem>, options: StoreManyOptions & NoWait): Promise<Job<StoreResult[]>[]>;
  storeMany(userId: string, items: Iterable<BatchItem>, options?: StoreManyOptions & Waits): Promise<StoreResult[]>;
  storeMany(
    userId: string,
    items: Iterable<BatchItem>,
    options?: StoreManyOptions,
  ): Promise<StoreResult[] | Job<StoreResult[]>[]>;
  async storeMany(
    userId: string,
    items: Iterable<BatchItem>,
    options: StoreManyOptions = {},
  ): Promise<StoreResult[] | Job<StoreResult[]>[]> {
    const size = options.batchSize ?? MAX_BATCH_ITEMS;
    if (!Number.isInteger(size) || size < 1 || size > MAX_BATCH_ITEMS) {
      throw new HindsightError(`batchSize must be between 1 and ${MAX_BATCH_ITEMS}`);
    }
    const wired = [...items].map(batchItem);
    const results: StoreResult[] = [];
    const jobs: Job<StoreResult[]>[] = [];
    const { signal, timeout, pollIntervalMs } = options;
    for (let start = 0; start < wired.length; start += size) {
      const slice = wired.slice(start, start + size);
      const body = { user_id: userId, items: slice };
      const headers = { [IDEMPOTENCY_HEADER]: newIdempotencyKey() };
      const call: Call = { method: "POST", path: "/v1/memories/batch", body, idempotent: true, headers };
      const chars = slice.reduce((sum, item) => sum + characters(String(item.content ?? "")), 0);
      const asJob = options.wait === false || (options.wait === undefined && chars > ASYNC_CHARS);
      const job = await this.submit<Schemas["StoreBatchResponse"]>(call, asJob, options);
      if (options.wait === false) {
        jobs.push(job.map((batch) => batch.results));
        continue;
      }
      const batch = await job.wait({ signal, timeout, pollIntervalMs });
      results.push(...batch.results);
      options.onProgress?.({ done: results.length, total: wired.length, results: batch.results });
    }
    return options.wait === false ? jobs : results;
  }

  /** Store a document (Markdown, text, HTML, PDF, DOCX) as one memory (`POST /v1/documents`):
   * `text`, or `content` as bytes. Storing the same `document_id` again replaces it.
   *
   * Sent as a job (as the Python client does): by default followed to its result, with
   * `onProgress` told the chunks embedded; `wait: false` resolves to the `Job` at once;
   * `wait: true` is one request that answers when done. */
  storeDocument(userId: string, fileName: string, options: DocumentOptions & NoWait): Promise<Job<DocumentResult>>;
  storeDocument(userId: string, fileName: string, options: DocumentOptions & Waits): Promise<DocumentResult>;
  storeDocument(
    userId: string,
    fileName: string,
    options: DocumentOptions,
  ): Promise<DocumentResult | Job<DocumentResult>>;
  async storeDocument(
    userId: string,
    fileName: string,
    options: DocumentOptions,
  ): Promise<DocumentResult | Job<DocumentResult>> {
    const { text, content } = options;
    if ((text === undefined) === (content === undefined)) {
      throw new HindsightError("storeDocument needs the document's text or its bytes (content), one of them");
    }
    const body: Record<string, unknown> = {
      user_id: userId,
      file_name: fileName,
      ...fields(options, ...CALL_ONLY, "text", "content"),
    };
    if (text !== undefined) body.text = text;
    else body.content_base64 = base64(content instanceof Uint8Array ? content : new Uint8Array(content!));
    const call: Call = { method: "POST", path: "/v1/documents", body, idempotent: false };
    return this.settle(await this.submit<DocumentResult>(call, options.wait !== true, options), options);
  }

  // --- retrieve ---------------------------------------------------------------------------
  /** One page of the memories that matter for `query` (`POST /v1/retrieve`). `top_k` is the
   * page size (at most 20); `has_more`/`next_cursor` lead on. */
  async retrieve(userId: string, query: string, options: RetrieveOptions = {}): Promise<RetrievePage> {
    const body = { user_id: userId, query, ...fields(options) };
    return this.send({ method: "POST", path: "/v1/retrieve", body, idempotent: true }, options);
  }

  /** Every result of `retrieve` across pages (at most `limit`), best first. */
  iterRetrieve(
    userId: string,
    query: string,
    options: RetrieveOptions & IterOptions = {},
  ): AsyncGenerator<RetrievedMemory> {
    const body = { user_id: userId, query, ...fields(options, "limit") };
    return this.pages({ method: "POST", path: "/v1/retrieve", body, idempotent: true }, options, options.limit);
  }

  /** The working-memory prompt block for a session (`POST /v1/context`). */
  async context(
    userId: string,
    sessionId: string,
    query?: string | null,
    options: ContextOptions = {},
  ): Promise<ContextResult> {
    const body = { user_id: userId, session_id: sessionId, ...fields(options), ...(query ? { query } : {}) };
    return this.send({ method: "POST", path: "/v1/context", body, idempotent: true }, options);
  }

  // --- reflect and review -----------------------------------------------------------------
  /** Distil the user's new episodes into facts (`POST /v1/reflect`). */
  async reflect(userId: string, options: ReflectOptions = {}): Promise<ReflectResult> {
    const body = { user_id: userId, ...fields(options) };
    return this.send({ method: "POST", path: "/v1/reflect", body, idempotent: false }, options);
  }

  /** Where a user's reflection stands (`GET /v1/users/{user_id}/reflection`). */
  async reflectionStatus(userId: string, options: RequestOptions = {}): Promise<ReflectionStatus> {
    const path = `/v1/users/${segment(userId, "userId")}/reflection`;
    return this.send({ method: "GET", path, idempotent: true }, options);
  }

  /** Approve a pending fact (`POST /v1/semantic/{id}/approve`); resolves to the fact. */
  async approve(memoryId: string, options: RequestOptions = {}): Promise<Memory> {
    return (await this.review(memoryId, "approve", options)).memory;
  }

  /** Reject a pending fact (`POST /v1/semantic/{id}/reject`); resolves to the fact. */
  async reject(memoryId: string, options: RequestOptions = {}): Promise<Memory> {
    return (await this.review(memoryId, "reject", options)).memory;
  }

  private review(memoryId: string, verb: string, options: RequestOptions) {
    const path = `/v1/semantic/${segment(memoryId, "memoryId")}/${verb}`;
    return this.send<Schemas["MemoryResponse"]>({ method: "POST", path, idempotent: true }, options);
  }

  /** Pin a memory (never archived for lack of use, full weight in ranking) or unpin it
   * (`PATCH /v1/memories/{id}`, the one field a caller may change). */
  async pin(memoryId: string, pinned = true, options: RequestOptions = {}): Promise<PinResult> {
    const path = `/v1/memories/${segment(memoryId, "memoryId")}`;
    return this.send({ method: "PATCH", path, body: { pinned }, idempotent: true }, options);
  }

  /** Bring an archived memory back (`POST /v1/memories/{id}/restore`). */
  async restore(memoryId: string, options: RequestOptions = {}): Promise<RestoreResult> {
    const path = `/v1/memories/${segment(memoryId, "memoryId")}/restore`;
    return this.send({ method: "POST", path, idempotent: true }, options);
  }

  // --- browse and forget ------------------------------------------------------------------
  /** One page of a user's memories (`GET /v1/users/{user_id}/memories`). */
  async listMemories(userId: string, options: ListOptions = {}): Promise<MemoryPage> {
    const path = `/v1/users/${segment(userId, "userId")}/memories`;
    return this.send({ method: "GET", path, query: fields(options), idempotent: true }, options);
  }

  /** Every memory `listMemories` finds (at most `limit`), `page_size` a request. */
  iterMemories(
    userId: string,
    options: Omit<ListOptions, "limit"> & IterOptions & { page_size?: number } = {},
  ): AsyncGenerator<Memory> {
    const query = { ...fields(options, "limit", "page_size"), limit: options.page_size };
    const call = (): Call => {
      const path = `/v1/users/${segment(userId, "userId")}/memories`;
      return { method: "GET", path, query, idempotent: true };
    };
    return this.pages(call, options, options.limit);
  }

  /** One memory by id (`GET /v1/memories/{id}`). */
  async get(memoryId: string, options: RequestOptions = {}): Promise<Memory> {
    const path = `/v1/memories/${segment(memoryId, "memoryId")}`;
    const answer = await this.send<Schemas["MemoryResponse"]>({ method: "GET", path, idempotent: true }, options);
    return answer.memory;
  }

  /** Forget one memory, and the facts only it supported (`DELETE /v1/memories/{id}`). */
  async delete(memoryId: string, options: RequestOptions = {}): Promise<DeleteResult> {
    const path = `/v1/memories/${segment(memoryId, "memoryId")}`;
    return this.send({ method: "DELETE", path, idempotent: true }, options);
  }

  /** Erase a user and everything derived from them (`DELETE /v1/users/{user_id}`). It waits
   * at least 10 minutes for the answer whatever the timeout: the server rewrites the user's
   * store files (seconds per 100k memories). */
  async eraseUser(userId: string, options: RequestOptions = {}): Promise<EraseResult> {
    const path = `/v1/users/${segment(userId, "userId")}`;
    const call: Call = { method: "DELETE", path, idempotent: true, leastTimeout: ERASE_TIMEOUT_MS };
    return this.send(call, options);
  }

  /** A user's whole memory as records (`GET /v1/users/{user_id}/export`, JSON lines: a header,
   * one line per memory, an end line; up to 5 MB, `hindsight export` streams any size). */
  async exportUser(userId: string, options: RequestOptions = {}): Promise<ExportRecord[]> {
    const path = `/v1/users/${segment(userId, "userId")}/export`;
    const text = await this.send<string>({ method: "GET", path, idempotent: true, text: true }, options);
    return text
      .split("\n")
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line) as ExportRecord);
  }

  /** The server's model, reflector and index size (`GET /v1/health`; no key needed). */
  async health(options: RequestOptions = {}): Promise<Health> {
    return this.send({ method: "GET", path: "/v1/health", idempotent: true }, options);
  }

  /** The OpenAPI document the server serves (`GET /v1/openapi.json`). */
  async openapi(options: RequestOptions = {}): Promise<Record<string, unknown>> {
    return this.send({ method: "GET", path: "/v1/openapi.json", idempotent: true }, options);
  }
}
