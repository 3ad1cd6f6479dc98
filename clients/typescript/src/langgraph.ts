/**
 * LangGraph.js long-term memory backed by Hindsight: a `BaseStore` whose items are memories.
 *
 *     import { Hindsight } from "@hindsight-memory/client";
 *     import { HindsightStore } from "@hindsight-memory/client/langgraph";
 *
 *     const store = new HindsightStore({ client: new Hindsight() });
 *     const graph = builder.compile({ checkpointer, store });
 *
 * Namespaces map to Hindsight users and scopes as the Python `HindsightStore` maps them:
 * `[userId]` or `[userId, scope]`, after an optional fixed `prefix` (e.g. `prefix:
 * ["memories"]` for `["memories", userId]`). Each item is one episodic memory whose content is
 * the item's text (`index` fields, else `content`/`memory`/`text`/`data`, else the value as
 * JSON); the item itself (key, namespace, value) rides in the memory's metadata, in the same
 * shape as the Python store's, so both languages read each other's items. `search` with a query
 * is Hindsight retrieval (meaning, keywords, time, approved facts first), so it also finds what
 * the user told another agent and the facts reflection distilled; those come back with their
 * memory id as key and `{content, kind, ...}` as value, and can be read or deleted by that key.
 *
 * Semantics to know: `put` replaces the key's memory (the old one is deleted first); Hindsight
 * keeps one memory per text per user and scope within its dedup window (1 h by default), so a
 * put of text another item already holds leaves the key unset (search finds the text).
 *
 * Needs the optional peer `@langchain/langgraph-checkpoint` (with `@langchain/core`).
 */
import {
  BaseStore,
  type GetOperation,
  InvalidNamespaceError,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  getTextAtPath,
} from "@langchain/langgraph-checkpoint";
import { Hindsight, type Memory, type RetrievedMemory } from "./client.js";
import { NotFoundError } from "./errors.js";

export const METADATA_KEY = "langgraph"; // memory.metadata.langgraph = {namespace, key, value, created_at}
export const MAX_METADATA_BYTES = 16_384; // the server's limit for one memory's metadata
const TEXT_FIELDS = ["content", "memory", "text", "data"]; // tried in order for an item's text
const PASSED_FIELDS = ["category", "emotion", "speaker"] as const; // value fields Hindsight keeps
const MEMORY_ID = /^(mem_|fact_)/;
const LIST_PAGE = 50; // the server's largest list page
const RETRIEVE_PAGE = 20; // the server's largest retrieve page
const MAX_SCAN = 2_000; // memories read at most to answer one search without a query, or a listing

type Value = Record<string, unknown>;
interface Stored {
  namespace: string[];
  key: string;
  value: Value;
  created_at?: string;
}
/** Where a namespace lives in Hindsight: a user and, optionally, one scope. */
export interface Target {
  userId: string;
  scope?: string;
}

/** Python's `json.dumps` of a string (ASCII only, `\uXXXX` escapes), for the same digest. */
function pyJson(text: string): string {
  return JSON.stringify(text).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** The `session_id` that finds an item in one request: `kv-` and a digest of namespace and key
 * (the Python store's, byte for byte). Items get a session of their own, so `get` lists
 * exactly that session instead of paging through the user's memories. */
export async function keySession(namespace: string[], key: string): Promise<string> {
  const text = `[[${namespace.map(pyJson).join(", ")}], ${pyJson(key)}]`;
  const digest = await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `kv-${hex.slice(0, 40)}`;
}

/** The text Hindsight embeds and searches for an item. */
export function itemText(value: Value, fields?: string[]): string {
  if (fields?.length) {
    const text = fields
      .flatMap((path) => getTextAtPath(value, path))
      .filter((part) => part.trim())
      .join("\n");
    if (text.trim()) return text;
  }
  for (const name of TEXT_FIELDS) {
    const candidate = value[name];
    if (typeof candidate === "string" && candidate.trim()) return candidate;
  }
  return JSON.stringify(value);
}

/** LangGraph's filter semantics: exact values, nested objects, `$eq $ne $gt $gte $lt $lte`. */
export function matchesFilter(value: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) {
    return Array.isArray(value) && value.length === wanted.length && wanted.every((w, i) => matchesFilter(value[i], w));
  }
  if (wanted && typeof wanted === "object") {
    const entries = Object.entries(wanted);
    const operators = entries.filter(([k]) => k.startsWith("$"));
    if (operators.length) return operators.every(([op, operand]) => compare(value, op, operand));
    if (!value || typeof value !== "object") return false;
    return entries.every(([k, v]) => matchesFilter((value as Value)[k], v));
  }
  return value === wanted;
}

function compare(value: unknown, operator: string, operand: unknown): boolean {
  if (operator === "$eq") return matchesFilter(value, operand);
  if (operator === "$ne") return !matchesFilter(value, operand);
  const ordered: Record<string, (a: number, b: number) => boolean> = {
    $gt: (a, b) => a > b,
    $gte: (a, b) => a >= b,
    $lt: (a, b) => a < b,
    $lte: (a, b) => a <= b,
  };
  if (!ordered[operator]) throw new Error(`unsupported filter operator ${operator}; use $eq $ne $gt $gte $lt $lte`);
  const [a, b] = [Number(value), Number(operand)];
  return value !== null && value !== "" && !Number.isNaN(a) && !Number.isNaN(b) && ordered[operator](a, b);
}

function namespaceMatches(namespace: string[], condition: MatchCondition): boolean {
  const path = condition.path;
  if (namespace.length < path.length) return false;
  const part = condition.matchType === "prefix" ? namespace.slice(0, path.length) : namespace.slice(-path.length);
  return part.every((have, i) => path[i] === "*" || path[i] === have);
}

function storedItem(metadata: unknown): Stored | undefined {
  const stored = (metadata as Value | null | undefined)?.[METADATA_KEY] as Partial<Stored> | undefined;
  if (
    stored &&
    typeof stored.key === "string" &&
    Array.isArray(stored.namespace) &&
    stored.value &&
    typeof stored.value === "object"
  ) {
    return stored as Stored;
  }
  return undefined;
}

/** When the item was first put (kept across puts), else when the memory was created. */
function createdAt(memory: Memory | RetrievedMemory): Date {
  const first = storedItem(memory.metadata)?.created_at;
  const when = first ? new Date(first) : undefined;
  if (when && !Number.isNaN(when.getTime())) return when;
  return memory.created_at ? new Date(memory.created_at) : new Date(0);
}

/** The value of a memory the store did not write (stored by another client, or a fact). */
export function memoryValue(memory: Memory | RetrievedMemory): Value {
  const value: Value = { content: memory.content, kind: memory.kind };
  const extra: Value = {
    category: memory.category,
    confidence: memory.confidence,
    status: (memory as Memory).status,
    session_id: memory.session_id,
    occurred_at: memory.occurred_at,
    metadata: memory.metadata && Object.keys(memory.metadata).length ? memory.metadata : undefined,
  };
  for (const [k, v] of Object.entries(extra)) if (v !== null && v !== undefined) value[k] = v;
  return value;
}

export interface HindsightStoreOptions {
  /** The client (default: `new Hindsight()` from HINDSIGHT_URL / HINDSIGHT_API_KEY). */
  client?: Hindsight;
  /** Labels every namespace starts with before `[userId, scope?]`. */
  prefix?: string[];
  /** Default JSON paths of an item's text (`put(..., index)` overrides). */
  fields?: string[];
}

/** A LangGraph `BaseStore` whose items are Hindsight memories. */
export class HindsightStore extends BaseStore {
  readonly client: Hindsight;
  readonly prefix: string[];
  readonly fields?: string[];

  constructor(options: HindsightStoreOptions = {}) {
    super();
    this.client = options.client ?? new Hindsight();
    this.prefix = [...(options.prefix ?? [])];
    this.fields = options.fields?.length ? [...options.fields] : undefined;
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    for (const op of operations) {
      if ("namespacePrefix" in op) results.push(await this.searchOp(op));
      else if ("value" in op) results.push(await this.putOp(op));
      else if ("key" in op) results.push(await this.getOp(op));
      else results.push(await this.listOp(op as ListNamespacesOperation));
    }
    return results as OperationResults<Op>;
  }

  // --- namespaces ---------------------------------------------------------------------------
  /** The user and scope of a namespace. */
  target(namespace: string[]): Target {
    const n = this.prefix.length;
    if (namespace.slice(0, n).some((label, i) => label !== this.prefix[i]) || namespace.length < n) {
      throw new InvalidNamespaceError(`namespace ${JSON.stringify(namespace)} must start with this store's prefix ${JSON.stringify(this.prefix)}`);
    }
    const rest = namespace.slice(n);
    if (rest.length > 2) {
      throw new InvalidNamespaceError(
        `namespace ${JSON.stringify(namespace)} is too deep: after the prefix give [userId] or [userId, scope]`,
      );
    }
    if (!rest.length) {
      throw new InvalidNamespaceError(
        `namespace ${JSON.stringify(namespace)} names no user: Hindsight keeps memories per user, so give ${JSON.stringify([...this.prefix, "<userId>"])} (and optionally a scope after it)`,
      );
    }
    return { userId: rest[0], scope: rest[1] };
  }

  /** The namespace an item reports: where it was put, else [prefix, user, scope]. */
  private memoryNamespace(memory: Memory | RetrievedMemory, userId: string): string[] {
    return storedItem(memory.metadata)?.namespace ?? [...this.prefix, userId, memory.scope];
  }

  // --- get / put / delete -------------------------------------------------------------------
  /** The memories that hold `key` in `namespace`, newest first. */
  private async find(namespace: string[], key: string): Promise<Memory[]> {
    const { userId } = this.target(namespace);
    const session = await keySession(namespace, key);
    const found: Memory[] = [];
    for await (const memory of this.client.iterMemories(userId, { session_id: session, kind: "episodic", page_size: LIST_PAGE, limit: MAX_SCAN })) {
      const stored = storedItem(memory.metadata);
      if (stored?.key === key && JSON.stringify(stored.namespace) === JSON.stringify(namespace)) found.push(memory);
    }
    return found;
  }

  /** A memory addressed by its own id, if it belongs to the namespace's user and scope. */
  private async byMemoryId(namespace: string[], key: string): Promise<Memory | undefined> {
    if (!MEMORY_ID.test(key)) return undefined;
    const target = this.target(namespace);
    let memory: Memory;
    try {
      memory = await this.client.get(key);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
    if (memory.user_id !== target.userId || (target.scope !== undefined && memory.scope !== target.scope)) return undefined;
    return memory;
  }

  private async getOp({ namespace, key }: GetOperation): Promise<Item | null> {
    const [found] = await this.find(namespace, key);
    if (found) return this.item(found, namespace, key);
    const memory = await this.byMemoryId(namespace, key);
    return memory ? this.item(memory, this.memoryNamespace(memory, memory.user_id), key) : null;
  }

  private async forget(memoryId: string): Promise<void> {
    try {
      await this.client.delete(memoryId);
    } catch (error) {
      // deleted meanwhile (or with the episode a fact was derived from)
      if (!(error instanceof NotFoundError)) throw error;
    }
  }

  private async putOp(op: PutOperation): Promise<void> {
    const { namespace, key } = op;
    const existing = await this.find(namespace, key);
    if (op.value === null) {
      const own = existing.length ? existing : [await this.byMemoryId(namespace, key)].filter((m): m is Memory => !!m);
      for (const memory of own) await this.forget(memory.memory_id);
      return;
    }
    const target = this.target(namespace);
    const value = { ...op.value };
    const created = existing.length ? createdAt(existing[0]) : new Date();
    const record = JSON.parse(JSON.stringify({ namespace, key, value, created_at: created.toISOString() }));
    const size = new TextEncoder().encode(JSON.stringify(record)).length;
    if (size > MAX_METADATA_BYTES - 64) {
      throw new Error(
        `the item ${JSON.stringify(namespace)}/${key} is ${size} bytes as JSON; a Hindsight memory keeps at most ${MAX_METADATA_BYTES} bytes of metadata — put a shorter value`,
      );
    }
    const fields = Array.isArray(op.index) ? op.index : this.fields;
    const passed: Value = {};
    for (const name of PASSED_FIELDS) if (typeof value[name] === "string") passed[name] = value[name];
    for (const memory of existing) await this.forget(memory.memory_id);
    await this.client.store(target.userId, itemText(value, fields), {
      ...passed,
      scope: target.scope,
      session_id: await keySession(namespace, key),
      metadata: { [METADATA_KEY]: record },
    });
  }

  // --- search -------------------------------------------------------------------------------
  private async searchOp(op: SearchOperation): Promise<SearchItem[]> {
    const prefix = op.namespacePrefix;
    const target = this.target(prefix);
    const [limit, offset] = [op.limit ?? 10, op.offset ?? 0];
    const found: SearchItem[] = [];
    let skipped = 0;
    for await (const candidate of this.candidates(target, op.query)) {
      if (prefix.some((label, i) => candidate.namespace[i] !== label)) continue;
      if (op.filter && !matchesFilter(candidate.value, op.filter)) continue;
      if (skipped < offset) {
        skipped++;
        continue;
      }
      found.push(candidate);
      if (found.length >= limit) break;
    }
    return found;
  }

  private async *candidates(target: Target, query: string | undefined): AsyncGenerator<SearchItem> {
    if (query?.trim()) {
      // a store's search ranks every match up to its limit (as LangGraph's own stores do)
      const hits = this.client.iterRetrieve(target.userId, query, {
        scopes: target.scope ? [target.scope] : undefined,
        top_k: RETRIEVE_PAGE,
        min_score: 0,
      });
      for await (const hit of hits) yield this.searchItem(hit, target.userId, hit.score);
      return;
    }
    const memories = this.client.iterMemories(target.userId, { scope: target.scope, page_size: LIST_PAGE, limit: MAX_SCAN });
    for await (const memory of memories) {
      if (memory.kind === "semantic" && memory.status !== "approved") continue; // not knowledge yet
      yield this.searchItem(memory, target.userId, undefined);
    }
  }

  private searchItem(memory: Memory | RetrievedMemory, userId: string, score: number | undefined): SearchItem {
    const stored = storedItem(memory.metadata);
    const item: SearchItem = this.item(memory, this.memoryNamespace(memory, userId), stored?.key ?? memory.memory_id);
    if (score !== undefined) item.score = score;
    return item;
  }

  private item(memory: Memory | RetrievedMemory, namespace: string[], key: string): Item {
    const stored = storedItem(memory.metadata);
    const created = createdAt(memory);
    return {
      namespace,
      key,
      value: stored ? { ...stored.value } : memoryValue(memory),
      createdAt: created,
      updatedAt: memory.created_at ? new Date(memory.created_at) : created,
    };
  }

  // --- listNamespaces -----------------------------------------------------------------------
  private async listOp(op: ListNamespacesOperation): Promise<string[][]> {
    const conditions = op.matchConditions ?? [];
    const userId = this.listedUser(conditions);
    const seen = new Map<string, string[]>();
    for await (const memory of this.client.iterMemories(userId, { page_size: LIST_PAGE, limit: MAX_SCAN })) {
      let namespace = this.memoryNamespace(memory, userId);
      if (!conditions.every((c) => namespaceMatches(namespace, c))) continue;
      if (op.maxDepth !== undefined) namespace = namespace.slice(0, op.maxDepth);
      seen.set(JSON.stringify(namespace), namespace);
    }
    const sorted = [...seen.values()].sort((a, b) => (a.join("\u0000") < b.join("\u0000") ? -1 : 1));
    return sorted.slice(op.offset, op.offset + op.limit);
  }

  private listedUser(conditions: MatchCondition[]): string {
    const at = this.prefix.length;
    for (const condition of conditions) {
      const label = condition.path[at];
      if (condition.matchType === "prefix" && condition.path.length > at && label !== "*") return label;
    }
    throw new InvalidNamespaceError(
      `Hindsight lists namespaces of one user at a time (it has no list of users): pass prefix ${JSON.stringify([...this.prefix, "<userId>"])}`,
    );
  }
}
