// The seam of a registry-backed tool service: instead of a fixed list of tools for one target,
// the service consumes every tool call and asks its resolver, per call, what to do with it.
// `serves` is the cheap first cut (no I/O): calls for targets it answers false to are acked
// untouched, since on a limits-retention stream every consumer sees every call and another
// service owns them. `resolve` looks the tool up (cached registry, argument schema) and answers
// run, reject (a failed result filed under the call's id) or skip (served by another process).
import { MeshError, type ErrorCode } from '@toolmesh/protocol';
import type { RunnableTool } from './define.ts';
import {
  deadlineOf,
  type Bound,
  type Intake,
  type IntakeLimits,
  type Rejection,
} from './stages/intake.ts';

export interface ResolveRequest {
  readonly project: string;
  readonly target: string;
  readonly tool: string;
  readonly arguments: unknown;
}

export type Resolution =
  /** Run `tool` with `args` (already validated and, where the schema says so, defaulted). */
  | { readonly kind: 'run'; readonly tool: RunnableTool; readonly args: unknown }
  /** A failed result with this code: unknown_tool, tool_disabled, invalid_arguments, ... */
  | {
      readonly kind: 'reject';
      readonly code: ErrorCode;
      readonly message: string;
      readonly details?: Record<string, unknown>;
    }
  /** Another process serves this tool: ack the call here without taking its lease. */
  | { readonly kind: 'skip'; readonly reason: string };

export interface ToolResolver {
  /** False for targets another service owns (e.g. skills, builtin): no lookup, no lease. */
  serves(target: string): boolean;
  /** May throw a RetryableError (registry unreachable): the call is retried, not failed. */
  resolve(req: ResolveRequest): Promise<Resolution>;
}

/** A call another service serves: acked without a lease. */
export interface Skip {
  skip: string;
}

/** Binds a well-formed call through the resolver: the tool to run, a rejection, or a skip. */
export async function bindResolved(
  accepted: Intake,
  resolver: ToolResolver,
  limits: IntakeLimits,
): Promise<Bound | Rejection | Skip> {
  const { ids, call } = accepted;
  const r = await resolver.resolve({
    project: ids.project,
    target: ids.target,
    tool: ids.tool,
    arguments: call.arguments,
  });
  switch (r.kind) {
    case 'skip':
      return { skip: r.reason };
    case 'reject':
      return {
        ok: false,
        ids,
        code: r.code,
        message: r.message,
        ...(r.details ? { details: r.details } : {}),
      };
    case 'run':
      try {
        return {
          tool: r.tool,
          args: r.args,
          timeoutMs: deadlineOf(call, r.tool.timeoutMs, limits),
        };
      } catch (err) {
        if (!(err instanceof MeshError)) throw err;
        return {
          ok: false,
          ids,
          code: err.code,
          message: err.message,
          ...(err.details ? { details: err.details } : {}),
        };
      }
    default: {
      const never: never = r;
      throw new Error(`unknown resolution ${JSON.stringify(never)}`);
    }
  }
}
