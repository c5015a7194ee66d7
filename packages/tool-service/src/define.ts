// What a tool service declares: per tool, a name, an argument schema and a handler. The handler
// gets an AbortSignal that fires on deadline or cancel; what it returns becomes the result.
import type { Logger } from 'pino';
import type { z } from 'zod';

export interface ToolContext {
  readonly project: string;
  readonly channel: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly agentId: string | undefined;
  /** Epoch milliseconds at which the call times out. */
  readonly deadline: number;
  /** Fires on deadline or cancel; `signal.reason` is a TimeoutError or CancelError. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  /** The tool token: the full name is `<target>.<name>`. */
  readonly name: string;
  readonly description: string;
  readonly args: S;
  /** The default deadline of this tool when the call gives none (config default otherwise). */
  readonly timeoutMs?: number;
  handler(args: z.infer<S>, ctx: ToolContext): Promise<unknown>;
}

export function defineTool<S extends z.ZodType>(def: ToolDefinition<S>): ToolDefinition<S> {
  return def;
}
