// Runs one handler under its deadline and a cancel signal. The handler is raced against the
// signal, so a handler that ignores its AbortSignal still yields a timeout or canceled result
// on time (its promise is left to settle in the background and is logged if it fails late).
import type { Logger } from 'pino';
import { MeshError, statusForCode, type ErrorBody, type ResultStatus } from '@toolmesh/protocol';
import type { RunnableTool, ToolContext } from './define.ts';

export class TimeoutReason extends Error {
  readonly code = 'timeout';
}
export class CancelReason extends Error {
  readonly code = 'canceled';
}

export type Outcome =
  | { kind: 'result'; status: ResultStatus; result?: unknown; error?: ErrorBody }
  /** Infrastructure trouble inside the handler: the call is retried, not failed. */
  | { kind: 'retry'; error: MeshError };

function errorBody(
  code: ErrorBody['code'],
  message: string,
  details?: Record<string, unknown>,
): ErrorBody {
  return details ? { code, message, details } : { code, message };
}

export async function runHandler(
  def: RunnableTool,
  args: unknown,
  ctx: Omit<ToolContext, 'signal' | 'deadline'>,
  timeoutMs: number,
  controller: AbortController,
  log: Logger,
): Promise<Outcome> {
  const deadline = Date.now() + timeoutMs;
  const timer = setTimeout(
    () =>
      controller.abort(
        new TimeoutReason(`${ctx.toolName} exceeded its deadline of ${timeoutMs} ms`),
      ),
    timeoutMs,
  );
  const signal = controller.signal;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, rejectAbort) => {
    onAbort = () => rejectAbort(signal.reason as Error);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  // A call canceled before it started never reaches its handler.
  const running = signal.aborted
    ? aborted
    : Promise.resolve().then(() => def.handler(args, { ...ctx, signal, deadline }));
  try {
    const result = await Promise.race([running, aborted]);
    return { kind: 'result', status: 'succeeded', result };
  } catch (err) {
    const reason = signal.aborted ? (signal.reason as unknown) : err;
    if (reason instanceof TimeoutReason) {
      running.catch((late: unknown) =>
        log.debug({ err: late }, 'handler settled after its deadline'),
      );
      return {
        kind: 'result',
        status: 'timeout',
        error: errorBody('timeout', reason.message, { timeout_ms: timeoutMs }),
      };
    }
    if (reason instanceof CancelReason) {
      running.catch((late: unknown) => log.debug({ err: late }, 'handler settled after cancel'));
      return { kind: 'result', status: 'canceled', error: errorBody('canceled', reason.message) };
    }
    if (reason instanceof MeshError) {
      if (reason.retryable) return { kind: 'retry', error: reason };
      return {
        kind: 'result',
        status: statusForCode(reason.code),
        error: errorBody(reason.code, reason.message, reason.details),
      };
    }
    log.error({ err: reason }, 'tool handler crashed');
    const message = reason instanceof Error ? reason.message : String(reason);
    return {
      kind: 'result',
      status: 'failed',
      error: errorBody('internal_error', `${ctx.toolName} crashed: ${message}`),
    };
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
