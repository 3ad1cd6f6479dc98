/**
 * Writes that need not wait: `Job`, the handle of a write the server accepted as a job.
 *
 *     const job = await memory.store("u1", longText, { wait: false }); // a Job, at once
 *     const result = await job.wait({ onProgress: ({ done, total }) => console.log(done, total) });
 *
 * A store, batch or document sent with `Prefer: respond-async` is answered 202 by
 * `hindsight serve` with a job id; the write runs in the background and
 * `GET /v1/jobs/{job_id}` says how far it got (texts embedded of all) and, once it
 * succeeded, holds the body the write would have answered. `wait()` polls it and resolves
 * to that body, or rejects with `JobFailedError` carrying the job's error. A server that
 * keeps no jobs (the AWS deployment, the gateway) answers the write when it is done: the
 * handle is then finished from the start. The Python client's `hindsight_client.jobs`.
 */
import { HindsightError, HindsightTimeoutError, JobFailedError } from "./errors.js";
import type { RequestOptions } from "./http.js";
import type { components } from "./schema.js";

/** `GET /v1/jobs/{job_id}`: how the job is doing, and how it ended. */
export type JobStatus = components["schemas"]["JobResponse"];
/** The 202 answer of a write sent with `Prefer: respond-async`. */
export type JobAccepted = components["schemas"]["JobAccepted"];
export type JobState = JobStatus["state"];

export const PREFER_ASYNC = { Prefer: "respond-async" };
/** Longer content than this is sent as a job and followed by default: a long memory takes
 * seconds to minutes to embed, past the timeout of one plain request. */
export const ASYNC_CHARS = 20_000;
/** How often `wait()` asks by default, in milliseconds. */
export const POLL_INTERVAL_MS = 500;

/** What `onProgress` is told each time the job moved. */
export interface JobProgressEvent {
  /** Texts embedded so far (a long memory's chunks, a batch's memories, a document's chunks). */
  done: number;
  /** Texts to embed in all; 0 until the job has started. */
  total: number;
  state: JobState;
  /** The job as last read (undefined for a write the server answered when done). */
  job?: JobStatus;
}

export interface WaitOptions {
  /** Called with the first reading and whenever `done`, `total` or `state` changed (never
   * for a write the server answered when done). */
  onProgress?: (progress: JobProgressEvent) => void;
  /** Stops waiting (the job itself runs on: the server has no way to cancel one); the
   * promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Milliseconds between two readings (default 500). */
  pollIntervalMs?: number;
  /** Stop waiting after this many milliseconds with `HindsightTimeoutError` (default: no
   * limit); `wait()` again to keep waiting. */
  timeoutMs?: number;
  /** Milliseconds each reading may take (default: the client's timeout). */
  timeout?: number;
}

/** Reads a job's status: the client's `jobStatus`. */
export type StatusReader = (jobId: string, options: RequestOptions) => Promise<JobStatus>;
/** Turns a succeeded job's `result` into what the write resolves to. */
export type ResultParser<T> = (result: Record<string, unknown>) => T;

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function positive(value: number | undefined, name: string): void {
  if (value !== undefined && !(Number.isFinite(value) && value >= 0)) {
    throw new HindsightError(`${name} must be a number of milliseconds, at least 0, got ${value}`);
  }
}

/** A write accepted as a job: read its status, wait for its result. */
export class Job<T> {
  /** The job's id; null when the server answered the write when done (it keeps no jobs). */
  readonly jobId: string | null;
  private last: JobStatus | undefined;
  private readonly answer: T | undefined;

  /** Not for callers: `store(..., { wait: false })`, `storeMany` and `storeDocument` make
   * them; `Job.done` wraps a write the server answered at once. */
  constructor(
    jobId: string | null,
    private readonly read: StatusReader,
    private readonly parse: ResultParser<T>,
    answer?: T,
  ) {
    this.jobId = jobId;
    this.answer = answer;
  }

  /** The handle of a write answered when done: finished, its result known, never polled. */
  static done<T>(answer: T): Job<T> {
    const never: StatusReader = () => Promise.reject(new HindsightError("this write was not kept as a job"));
    return new Job<T>(null, never, () => answer, answer);
  }

  /** A handle on the same job that resolves to `f` of its result (a batch's `results`). */
  map<U>(f: (value: T) => U): Job<U> {
    if (this.jobId === null) return Job.done(f(this.answer as T));
    return new Job<U>(this.jobId, this.read, (result) => f(this.parse(result)));
  }

  /** The last status read (undefined before the first, and for a write answered when done). */
  get lastStatus(): JobStatus | undefined {
    return this.last;
  }

  /** Whether the job is known to have finished (succeeded or failed), from what was read. */
  get finished(): boolean {
    return this.jobId === null || this.last?.state === "succeeded" || this.last?.state === "failed";
  }

  /** The job as the server sees it now (`GET /v1/jobs/{job_id}`; no request once it has
   * finished). A write the server answered when done has no job to read: this rejects,
   * and `wait()` resolves to its answer. */
  async status(options: RequestOptions = {}): Promise<JobStatus> {
    if (this.jobId === null) {
      throw new HindsightError("this write was answered when done (the server keeps no jobs): use wait()");
    }
    if (!this.last || !this.finished) this.last = await this.read(this.jobId, options);
    return this.last;
  }

  /** Wait until the job has finished and resolve to what the write would have answered;
   * `JobFailedError` (with the job's `error`) if it failed. */
  async wait(options: WaitOptions = {}): Promise<T> {
    positive(options.pollIntervalMs, "pollIntervalMs");
    positive(options.timeoutMs, "timeoutMs");
    const { onProgress, signal } = options;
    if (this.jobId === null) {
      if (signal?.aborted) throw signal.reason;
      return this.answer as T; // nothing was followed: no progress to tell
    }
    const interval = options.pollIntervalMs ?? POLL_INTERVAL_MS;
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    let seen = "";
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      const status = await this.status({ signal, timeout: options.timeout });
      const moved = `${status.progress.done}/${status.progress.total}/${status.state}`;
      if (onProgress && moved !== seen) {
        onProgress({ done: status.progress.done, total: status.progress.total, state: status.state, job: status });
      }
      seen = moved;
      if (signal?.aborted) throw signal.reason; // stopped from onProgress: stop now
      if (status.state === "succeeded" || status.state === "failed") return this.outcome(status);
      if (deadline !== undefined && Date.now() >= deadline) {
        throw new HindsightTimeoutError(
          `job ${this.jobId} is still ${status.state} after ${options.timeoutMs} ms ` +
            `(${status.progress.done}/${status.progress.total} texts embedded); call wait() again to keep waiting`,
        );
      }
      await sleep(deadline === undefined ? interval : Math.min(interval, Math.max(0, deadline - Date.now())), signal);
    }
  }

  private outcome(status: JobStatus): T {
    if (status.state !== "succeeded" || !status.result) {
      throw new JobFailedError(status.error ?? `job ${status.job_id} failed`, status);
    }
    return this.parse(status.result);
  }
}
