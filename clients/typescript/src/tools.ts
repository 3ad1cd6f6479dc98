/**
 * What the framework tool shapes share: the three memory tools, their words and answers (the
 * Python client's `_tools.py`, word for word, so agents read the same tools in both languages).
 *
 * The tools are bound to one user, never chosen by the model, so a model cannot read or write
 * another user's memories. Answers are short text the model reads; `forget` refuses a memory
 * id of another user (or another scope) as if it did not exist.
 */
import type { DeleteResult, Hindsight, RetrievePage, StoreResult } from "./client.js";
import { NotFoundError } from "./errors.js";
import type { RequestOptions } from "./http.js";

export const STORE_NAME = "memory_store";
export const RETRIEVE_NAME = "memory_retrieve";
export const FORGET_NAME = "memory_forget";

export const STORE_DESCRIPTION =
  "Save something the user told you that will matter in later conversations: facts about " +
  "them, preferences, constraints (allergies, budgets, deadlines), plans and events. Save " +
  "one self-contained statement per call, in the user's words and language. Do not save " +
  "small talk, greetings or what you said yourself.";
export const RETRIEVE_DESCRIPTION =
  "Look up what you remember about the user that matters now: facts, preferences, " +
  "constraints and past events, most relevant first, each with its memory id. Ask before " +
  "recommending anything the user might have a constraint about (food, travel, dates).";
export const FORGET_DESCRIPTION =
  "Forget one memory by its id (from memory_retrieve) when the user asks you to forget it " +
  "or says it is wrong. Facts that only this memory supported are forgotten with it.";
export const CONTENT_HELP =
  "the statement to remember, self-contained (e.g. 'The user is allergic to peanuts')";
export const CATEGORY_HELP = "optional label such as constraint, preference, plan, event or profile";
export const QUERY_HELP = "what you need to know, as a question or keywords (e.g. 'food allergies')";
export const TOP_K_HELP = "how many memories to return (1-20)";
export const MEMORY_ID_HELP = "the id of the memory to forget, as memory_retrieve showed it";

/** Whose memories a tool call reads and writes: a user, a session, a scope. */
export interface Who {
  userId: string;
  sessionId?: string;
  scope?: string;
}

/** The three memory operations behind every tool shape, for one client. */
export class MemoryToolbox {
  constructor(
    readonly client: Hindsight,
    readonly topK = 5,
  ) {}

  store(who: Who, content: string, category?: string, options: RequestOptions = {}): Promise<StoreResult> {
    return this.client.store(who.userId, content, {
      session_id: who.sessionId,
      scope: who.scope,
      category: category || undefined,
      ...options,
    });
  }

  retrieve(who: Who, query: string, topK?: number, options: RequestOptions = {}): Promise<RetrievePage> {
    const wanted = Math.max(1, Math.min(20, topK || this.topK));
    return this.client.retrieve(who.userId, query, {
      top_k: wanted,
      scopes: who.scope ? [who.scope] : undefined,
      ...options,
    });
  }

  /** Delete one of this user's memories; NotFoundError for anyone else's. */
  async forget(who: Who, memoryId: string, options: RequestOptions = {}): Promise<DeleteResult> {
    const memory = await this.client.get(memoryId, options);
    if (memory.user_id !== who.userId || (who.scope && memory.scope !== who.scope)) {
      throw new NotFoundError(`no memory ${memoryId} for this user; use an id that memory_retrieve showed`, 404);
    }
    return this.client.delete(memoryId, options);
  }
}

export function storeText(result: StoreResult): string {
  if (result.status === "skipped") {
    return `Already remembered (memory ${result.memory_id}); nothing new to save.`;
  }
  return `Remembered (memory ${result.memory_id}).`;
}

export function retrieveText(page: RetrievePage): string {
  if (!page.results.length && page.unknown_names?.length) {
    return `No memories mention ${page.unknown_names.join(", ")}.`;
  }
  if (!page.results.length) return "No memories about this.";
  return page.results
    .map((memory, i) => {
      const labels = [memory.kind !== "episodic" ? memory.kind : "event"];
      if (memory.category) labels.push(memory.category);
      if (memory.confidence) labels.push(`${memory.confidence} confidence`);
      const when = memory.occurred_at ? `, ${memory.occurred_at.slice(0, 10)}` : "";
      return `${i + 1}. [${memory.memory_id}] (${labels.join(", ")}${when}) ${memory.content}`;
    })
    .join("\n");
}

export function forgetText(result: DeleteResult): string {
  let text = `Forgot memory ${result.memory_id}.`;
  if (result.deleted_facts?.length) text += ` Facts forgotten with it: ${result.deleted_facts.join(", ")}.`;
  return text;
}
