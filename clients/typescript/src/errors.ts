/**
 * Errors: every failure is a `HindsightError` carrying `status` and `message`.
 *
 * The server answers errors as `{"status": "error", "message": "<what to do>"}` with an
 * HTTP status; `errorForStatus` turns that into the matching subclass, so callers can catch
 * what they can act on (`NotFoundError`, `RateLimitedError`...) or everything
 * (`HindsightError`). Failures with no HTTP answer (the server could not be reached, the
 * answer did not arrive in time) have `status` `undefined`. The classes and their names are
 * the Python client's (`hindsight_client.errors`).
 */
import type { components } from "./schema.js";

/** Base of every error this client throws. */
export class HindsightError extends Error {
  /** The HTTP status the server answered, or `undefined` when there was no answer. */
  readonly status: number | undefined;

  constructor(message: string, status?: number, options?: { cause?: unknown }) {
    // `message`: the server's message (what to do about it), or a description of the failure
    super(message, options);
    this.name = new.target.name;
    this.status = status;
  }
}

/** The server answered with an error status (`status` is always set). */
export class APIError extends HindsightError {
  declare readonly status: number;

  constructor(message: string, status: number) {
    super(message, status);
  }
}

/** 400: the body is not a JSON object (malformed JSON, empty, not UTF-8). */
export class BadRequestError extends APIError {}
/** 401: no API key, or not a valid one. */
export class AuthenticationError extends APIError {}
/** 403: the API key may not read or write that scope, or call that route. */
export class PermissionDeniedError extends APIError {}
/** 404: no such memory (or route), or not visible to this API key. */
export class NotFoundError extends APIError {}
/** 409: the request conflicts with what is stored (e.g. another embedding model). */
export class ConflictError extends APIError {}
/** 413: the request body is over 1 MiB; send fewer or shorter memories per request. */
export class PayloadTooLargeError extends APIError {}
/** 422: fields are invalid; the message names each one and what is wrong with it. */
export class InvalidRequestError extends APIError {}
/** 429: too many requests (retried automatically before this is thrown). */
export class RateLimitedError extends APIError {}
/** 5xx: the server failed (500: misconfigured; the message names the setting). */
export class ServerError extends APIError {}
/** 503: a backing service is down (retried automatically before this is thrown). */
export class UnavailableError extends ServerError {}

/** The server could not be reached, or the connection broke (`status` is undefined). */
export class HindsightConnectionError extends HindsightError {}
/** No answer within the timeout (`status` is undefined). */
export class HindsightTimeoutError extends HindsightConnectionError {}

/** A write accepted as a job ended without being done (`status` is undefined: the job's
 * `GET` answered 200). `message` is the job's `error`: why, and what to do (for instance a
 * secret in the content under a key whose secrets policy is `refuse`). */
export class JobFailedError extends HindsightError {
  /** The failed job's id. */
  readonly jobId: string;
  /** The job as the server last answered it (`state: "failed"`, `error`, `attempts`, ...). */
  readonly job: components["schemas"]["JobResponse"];

  constructor(message: string, job: components["schemas"]["JobResponse"]) {
    super(message);
    this.jobId = job.job_id;
    this.job = job;
  }
}

const BY_STATUS: Record<number, new (message: string, status: number) => APIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  422: InvalidRequestError,
  429: RateLimitedError,
  503: UnavailableError,
};

/** The error for an error answer: its own class, else ServerError or APIError. */
export function errorForStatus(status: number, message: string): APIError {
  const cls = BY_STATUS[status] ?? (status >= 500 ? ServerError : APIError);
  return new cls(message, status);
}
