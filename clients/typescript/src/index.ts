/**
 * The Hindsight client for TypeScript and JavaScript: `fetch` only (Node 18+, browsers, edge
 * runtimes), ESM, typed from the server's OpenAPI document. Framework integrations are
 * subpath exports: `@hindsight-memory/client/ai` (Vercel AI SDK) and
 * `@hindsight-memory/client/langgraph` (a LangGraph store).
 */
export * from "./client.js";
export * from "./errors.js";
export {
  ASYNC_CHARS,
  Job,
  type JobAccepted,
  type JobProgressEvent,
  type JobState,
  type JobStatus,
  type WaitOptions,
} from "./jobs.js";
export {
  API_KEY_ENV,
  DEFAULT_URL,
  IDEMPOTENCY_HEADER,
  URL_ENV,
  newIdempotencyKey,
} from "./http.js";
export type { components, operations, paths } from "./schema.js";
