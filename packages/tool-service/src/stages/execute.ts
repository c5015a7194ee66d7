// Stage 6, execute: runs the bound handler (handler.ts) under its deadline and the call's cancel
// signal, keeping the lease renewed and, for a call that lasts, a `running` row in the execution
// log; then turns what it returned into the result's content (a result past the size limit
// fails payload_too_large). Infrastructure trouble inside the handler is thrown, to be retried.
import type { Lease } from '@toolmesh/bus';
import type { ToolCall, ToolResultContent } from '@toolmesh/protocol';
import type { CancelRegistry } from '../cancel.ts';
import type { CallCost } from '../define.ts';
import { emitProgress } from '../emit.ts';
import { runHandler } from '../handler.ts';
import { traced } from '../observe.ts';
import { failure } from '../takeover.ts';
import type { CallInHand, ServiceParts } from './context.ts';
import type { Bound } from './intake.ts';
import type { Quota } from './quota.ts';

/** Calls still running after this long get a `running` row in the execution log. */
const RUNNING_ROW_AFTER_MS = 50;

export interface ExecuteInput {
  call: ToolCall;
  bound: Bound;
  lease: Lease | undefined;
  cancels: CancelRegistry | undefined;
  quota: Quota;
}

/** What the finish stage files: the content, the card's metadata and the handler's charge. */
export interface Executed {
  content: ToolResultContent;
  metadata: Record<string, unknown>;
  cost: CallCost | undefined;
}

export async function execute(
  parts: ServiceParts,
  c: CallInHand,
  x: ExecuteInput,
): Promise<Executed> {
  const { store, limits, instanceId, bus } = parts;
  const { ids, clog } = c;
  const { call, lease } = x;
  const { tool, args, timeoutMs } = x.bound;
  // The running row is written only for calls that last: most finish within milliseconds and
  // their row is written once, with the card. A late start cannot reopen a finished row.
  const openRow = setTimeout(() => {
    store.executions
      .start({
        projectId: ids.project,
        toolCallId: ids.toolCallId,
        channel: ids.channel,
        toolName: call.tool_name,
        target: ids.target,
        agentId: ids.agentId,
        instanceId,
        arguments: parts.argumentsOf(ids),
        turnId: ids.turnId,
        context: ids.context,
        credentialId: ids.credentialId,
        timeoutMs: call.timeout_ms,
      })
      .catch((err: unknown) => clog.warn({ err }, 'could not record the running execution'));
  }, RUNNING_ROW_AFTER_MS);

  const controller = new AbortController();
  const unregister = x.cancels?.register(ids.project, ids.toolCallId, controller);
  const renew = lease
    ? setInterval(
        () => {
          lease.renew().then(
            (held) => {
              if (!held) clog.error('lease lost to another owner while running');
            },
            (err: unknown) => clog.warn({ err }, 'lease renewal failed'),
          );
        },
        Math.max(1_000, Math.floor(limits.leaseTtlMs / 3)),
      )
    : undefined;
  const annotations: Record<string, unknown> = {};
  let cost: CallCost | undefined;
  let outcome;
  try {
    outcome = await traced(`handler ${call.tool_name}`, ids, () =>
      runHandler(
        tool,
        args,
        {
          project: ids.project,
          channel: ids.channel,
          toolCallId: ids.toolCallId,
          toolName: call.tool_name,
          agentId: ids.agentId,
          ...(call.mcp ? { mcp: call.mcp } : {}),
          logger: clog,
          annotate: (m) => Object.assign(annotations, m),
          charge: (charged) => {
            cost = charged;
          },
          progress: (detail) => {
            try {
              emitProgress(bus, ids, detail);
            } catch (err) {
              clog.debug({ err }, 'progress event not published');
            }
          },
        },
        timeoutMs,
        controller,
        clog,
      ),
    );
  } finally {
    clearInterval(renew);
    clearTimeout(openRow);
    unregister?.();
    // Before the result is out: a caller that sends its next call on this result must find
    // the slot free.
    await x.quota.release(c);
  }
  if (outcome.kind === 'retry') {
    await lease?.release().catch(() => undefined);
    throw outcome.error;
  }
  const durationMs = Math.round((performance.now() - c.started) * 1000) / 1000;
  let content: ToolResultContent = { status: outcome.status, duration_ms: durationMs };
  if (outcome.error) content.error = outcome.error;
  if (outcome.status === 'succeeded') {
    const size = Buffer.byteLength(JSON.stringify(outcome.result ?? null));
    content =
      size > limits.maxResultBytes
        ? {
            ...failure(
              'payload_too_large',
              `result of ${size} bytes exceeds the limit of ${limits.maxResultBytes} bytes`,
              { size_bytes: size, limit_bytes: limits.maxResultBytes },
            ),
            duration_ms: durationMs,
          }
        : { ...content, result: outcome.result ?? null };
  }
  const metadata = {
    ...annotations,
    ...(cost ? { cost } : {}),
    after_execution: call.after_execution,
    attempt: c.d.deliveryCount,
  };
  return { content, metadata, cost };
}
