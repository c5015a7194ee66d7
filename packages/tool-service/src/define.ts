// What a tool service declares. A static service lists its tools: per tool, a name, an argument
// schema and a handler. A registry service (services/tools) resolves each call's tool at run
// time instead (see resolve.ts). Either way the handler gets an AbortSignal that fires on
// deadline or cancel, and what it returns becomes the result.
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { McpCallEnvelope } from '@toolmesh/protocol';

/** An estimate of what a call cost, written on its execution row and card metadata. */
export interface CallCost {
  readonly amount: number;
  readonly currency: string;
}

export interface ToolContext {
  readonly project: string;
  readonly channel: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly agentId: string | undefined;
  /** A 2026-07-28 MCP client's envelope, when the call came from one (MCP tools use it). */
  readonly mcp?: McpCallEnvelope | undefined;
  /** Epoch milliseconds at which the call times out. */
  readonly deadline: number;
  /** Fires on deadline or cancel; `signal.reason` is a TimeoutError or CancelError. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /**
   * Adds fields to the result card's metadata (e.g. the attempts made upstream). Kept whatever
   * the outcome, so a failed or timed-out call still shows what it tried. Later keys win.
   */
  annotate(metadata: Record<string, unknown>): void;
  /** Sets the call's cost estimate (the last one set wins; undefined: nothing to charge). */
  charge(cost: CallCost | undefined): void;
  /**
   * Publishes a progress event of the call (`evt.tool.<target>.progress`, core NATS): a sign of
   * life beside the result, never in its slot. Lossy by design.
   */
  progress(detail?: Record<string, unknown>): void;
}

/** What the runtime needs to run a tool: its handler and its default deadline. */
export interface RunnableTool {
  /** The tool token: the full name is `<target>.<name>`. */
  readonly name: string;
  /** The default deadline of this tool when the call gives none (config default otherwise). */
  readonly timeoutMs?: number | undefined;
  /**
   * Whether running a call twice is harmless (default true). A call of a tool that is not, taken
   * over from an instance that died mid-run, ends `interrupted` instead of running again, unless
   * the call says `rerun_on_takeover`.
   */
  readonly idempotent?: boolean | undefined;
  /**
   * The handler only computes its result from its arguments, in this process: no effect
   * anywhere, nothing to stop. Its calls take no lease (copies may run side by side; the card
   * statement keeps one result and files a call canceled when a cancel was stored first).
   */
  readonly pure?: boolean | undefined;
  handler(args: unknown, ctx: ToolContext): Promise<unknown>;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  /** The tool token: the full name is `<target>.<name>`. */
  readonly name: string;
  readonly description: string;
  readonly args: S;
  /** The default deadline of this tool when the call gives none (config default otherwise). */
  readonly timeoutMs?: number;
  /** See RunnableTool.idempotent (default true). */
  readonly idempotent?: boolean;
  /** See RunnableTool.pure (default false). */
  readonly pure?: boolean;
  handler(args: z.infer<S>, ctx: ToolContext): Promise<unknown>;
}

export function defineTool<S extends z.ZodType>(def: ToolDefinition<S>): ToolDefinition<S> {
  return def;
}
