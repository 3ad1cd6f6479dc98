/**
 * Vercel AI SDK memory for Hindsight: three tools and the working-memory block in a system
 * prompt.
 *
 *     import { generateText, stepCountIs } from "ai";
 *     import { Hindsight } from "@hindsight-memory/client";
 *     import { memoryTools, memorySystem } from "@hindsight-memory/client/ai";
 *
 *     const memory = new Hindsight();
 *     const who = { client: memory, userId: "alice", sessionId: "chat-42" };
 *     const { text } = await generateText({
 *       model,
 *       system: await memorySystem("You are a helpful cook.", { ...who, query: prompt }),
 *       tools: memoryTools(who),
 *       stopWhen: stepCountIs(5),
 *       prompt,
 *     });
 *
 * The tools (`memory_store`, `memory_retrieve`, `memory_forget`) act for the user given here,
 * never one the model picks. A refused argument (422), or a memory id the user may not touch
 * (404, 403), is an answer the model reads and can act on; other failures (the server
 * unreachable, 5xx after retries) throw, and the AI SDK reports them as the tool call's error.
 * Each call is cancelled with the generation (`abortSignal`).
 *
 * Needs the optional peers `ai` (5 or 6) and `zod`.
 */
import { type Tool, tool } from "ai";
import { z } from "zod";
import { type ContextOptions, Hindsight } from "./client.js";
import { InvalidRequestError, NotFoundError, PermissionDeniedError } from "./errors.js";
import {
  CATEGORY_HELP,
  CONTENT_HELP,
  FORGET_DESCRIPTION,
  FORGET_NAME,
  MEMORY_ID_HELP,
  MemoryToolbox,
  QUERY_HELP,
  RETRIEVE_DESCRIPTION,
  RETRIEVE_NAME,
  STORE_DESCRIPTION,
  STORE_NAME,
  TOP_K_HELP,
  type Who,
  forgetText,
  retrieveText,
  storeText,
} from "./tools.js";

export { FORGET_NAME, RETRIEVE_NAME, STORE_NAME };

export interface MemoryOptions {
  /** The client (default: `new Hindsight()` from HINDSIGHT_URL / HINDSIGHT_API_KEY). */
  client?: Hindsight;
  /** Whose memories the tools read and write. */
  userId: string;
  /** The conversation the stored memories belong to (its recent turns shape the context). */
  sessionId?: string;
  /** One scope to read and write (default: the API key's default scope, every readable one). */
  scope?: string;
}

export interface MemoryToolsOptions extends MemoryOptions {
  /** Results a retrieve returns unless the model asks for another number (default 5). */
  topK?: number;
}

const storeInput = z.object({
  content: z.string().min(1).max(8_000).describe(CONTENT_HELP),
  category: z.string().max(64).optional().describe(CATEGORY_HELP),
});
const retrieveInput = z.object({
  query: z.string().min(1).max(2_000).describe(QUERY_HELP),
  top_k: z.number().int().min(1).max(20).optional().describe(TOP_K_HELP),
});
const forgetInput = z.object({
  memory_id: z.string().min(1).describe(MEMORY_ID_HELP),
});

// a type, not an interface: an object type is assignable to the AI SDK's `ToolSet` (a record
// of tools), which an interface (no index signature) is not
export type MemoryTools = {
  memory_store: Tool<z.infer<typeof storeInput>, string>;
  memory_retrieve: Tool<z.infer<typeof retrieveInput>, string>;
  memory_forget: Tool<z.infer<typeof forgetInput>, string>;
};

/** Run one Hindsight call for the model: what it can act on comes back as text it reads. */
async function forModel(call: () => Promise<string>): Promise<string> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof InvalidRequestError) return `Hindsight refused the arguments: ${error.message}`;
    if (error instanceof NotFoundError || error instanceof PermissionDeniedError) {
      return `Hindsight: ${error.message}`;
    }
    throw error;
  }
}

function who(options: MemoryOptions): Who {
  if (!options.userId) {
    throw new TypeError("the memory tools need the user whose memories they are: pass userId");
  }
  return { userId: options.userId, sessionId: options.sessionId, scope: options.scope };
}

/** `memory_store`, `memory_retrieve` and `memory_forget` as AI SDK tools, for one user. */
export function memoryTools(options: MemoryToolsOptions): MemoryTools {
  const user = who(options);
  const toolbox = new MemoryToolbox(options.client ?? new Hindsight(), options.topK ?? 5);
  return {
    [STORE_NAME]: tool({
      description: STORE_DESCRIPTION,
      inputSchema: storeInput,
      execute: ({ content, category }, { abortSignal }) =>
        forModel(async () => storeText(await toolbox.store(user, content, category, { signal: abortSignal }))),
    }),
    [RETRIEVE_NAME]: tool({
      description: RETRIEVE_DESCRIPTION,
      inputSchema: retrieveInput,
      execute: ({ query, top_k }, { abortSignal }) =>
        forModel(async () => retrieveText(await toolbox.retrieve(user, query, top_k, { signal: abortSignal }))),
    }),
    [FORGET_NAME]: tool({
      description: FORGET_DESCRIPTION,
      inputSchema: forgetInput,
      execute: ({ memory_id }, { abortSignal }) =>
        forModel(async () => forgetText(await toolbox.forget(user, memory_id, { signal: abortSignal }))),
    }),
  } as MemoryTools;
}

export interface ContextBlockOptions extends MemoryOptions, ContextOptions {
  /** What the user asked now: the block's facts are chosen for it (first 2000 characters). */
  query?: string;
}

/** Hindsight's working-memory block (`POST /v1/context`: the user's approved facts, the
 * session's recent turns and summary) for the user and session; "" when there is nothing. */
export async function contextBlock(options: ContextBlockOptions): Promise<string> {
  const { client, userId, sessionId, scope: _scope, query, ...rest } = options;
  const memory = client ?? new Hindsight();
  const result = await memory.context(who(options).userId, sessionId || userId, query?.slice(0, 2_000) || null, rest);
  return result.context ?? "";
}

/** A `system` prompt with the working-memory block after it (the prompt alone when the block
 * is empty), for `generateText({ system })` and `streamText({ system })`. */
export async function memorySystem(system: string | undefined, options: ContextBlockOptions): Promise<string> {
  const block = await contextBlock(options);
  return [system?.trim(), block.trim()].filter(Boolean).join("\n\n");
}
