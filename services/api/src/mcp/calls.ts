// A `tools/call` of the MCP facade as a tool call on the mesh: the call is published and its
// result awaited, its execution row `queued` (as POST /executions does) for a keyed call or a
// task before the publish, for any other call only if it lasts (see prepare);
// progress events of the call become `notifications/progress`, a cancelled request cancels the
// call on the mesh. With an idempotency key in `_meta`, the tool_call_id is a hash of the project
// and the key: a re-sent request finds the same row and answers from the same card, never a
// second run.
import { createHash, randomUUID } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { subscribeGuarded } from '@toolmesh/bus';
import {
  isOutcomeUnknown,
  ResultWaitTimeoutError,
  type Client,
  type ToolCallRequest,
  type ToolResult,
} from '@toolmesh/client';
import type { Config } from '@toolmesh/config';
import {
  decodeMessage,
  splitToolName,
  type McpCallEnvelope,
  type ToolProgressEvent,
  type ToolResultContent,
} from '@toolmesh/protocol';
import type { CallsStore, RegistryStore, ToolRecord } from '@toolmesh/store';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { watchApproval } from './approval-watch.ts';
import { answerAsks, type CallerAsk } from './call-asks.ts';
import { DETACHED, errorResult, toCallToolResult } from './call-results.ts';

/** The `_meta` key a client sets to make a re-sent call the same call. */
export const IDEMPOTENCY_META_KEY = 'io.toolmesh/idempotency-key';
/** The channel MCP calls travel on (executions list it as their channel). */
export const MCP_CHANNEL = 'mcp';
/** Written as the instance of a queued row; the tool service overwrites it when it starts. */
const QUEUED_BY = 'api';
/**
 * A call without a key still unanswered this long after its publish gets its queued row; the
 * tool service opens its running row after as long (packages/tool-service/src/service.ts).
 */
const QUEUED_ROW_AFTER_MS = 50;

/**
 * The tool_call_id of a keyed call: the project and the key hashed into a UUID-shaped id, so a
 * key of one project never names a call of another, and the id reveals neither.
 */
export function idempotentCallId(project: string, key: string): string {
  const h = createHash('sha256').update(`mcp\u0000${project}\u0000${key}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface CallDeps {
  store: CallsStore & RegistryStore;
  /** Publishes on `nc`: run relies on the order of one connection's messages. */
  client: Client;
  nc: NatsConnection;
  config: Config;
  logger: Logger;
}

export interface MeshCall {
  project: string;
  tool: ToolRecord;
  arguments: Record<string, unknown>;
  idempotencyKey?: string | undefined;
  traceparent?: string | undefined;
  /** A 2026-07-28 client's envelope: an MCP tool's server gets the call on that revision. */
  mcp?: McpCallEnvelope | undefined;
  /** Aborted when the client cancels the request (or the connection is gone). */
  signal: AbortSignal;
  /**
   * Aborted to stop waiting for the result without cancelling the call: it is answered another
   * way (a 2026-07-28 request answered input_required while the call waits for its approval).
   * run then returns DETACHED.
   */
  detach?: AbortSignal | undefined;
  /** Called once per progress event of the call. */
  onProgress?: ((ev: ToolProgressEvent) => void) | undefined;
  /**
   * Asks the MCP client that made the call what the call's MCP server asks it (sampling,
   * elicitation), while the call is awaited; without it nobody answers and the server is
   * refused.
   */
  ask?: CallerAsk | undefined;
}

type ProgressOf = Pick<MeshCall, 'project' | 'tool' | 'onProgress'>;

export function createMeshCalls(deps: CallDeps) {
  const { store, client, nc, config } = deps;
  const log = deps.logger.child({ component: 'mcp' });
  const publishTimeoutMs = config.api.publish_ack_timeout_ms;

  /**
   * A call sent but not acknowledged may run: its queued row stays, and the answer says so
   * instead of inviting a retry that would run it again (a keyed re-send is safe).
   */
  function outcomeUnknown(id: string, keyed: boolean): CallToolResult {
    return errorResult(
      'outcome_unknown',
      keyed
        ? `the call ${id} was sent but the message bus did not acknowledge it: it may run. Send the same request again with the same idempotency key: it is answered from this call and never runs twice.`
        : `the call ${id} was sent but the message bus did not acknowledge it: it may run. Check its execution before calling again; an idempotency key (_meta "${IDEMPOTENCY_META_KEY}") makes a re-send safe.`,
      { tool_call_id: id },
    );
  }

  // The client keeps one waiter per tool_call_id: a re-send arriving here while the first is
  // still waiting joins that wait instead of replacing it.
  const inflight = new Map<string, Promise<ToolResult>>();

  function awaitResult(req: ToolCallRequest & { toolCallId: string }, signal: AbortSignal) {
    const key = `${req.project}/${req.toolCallId}`;
    let shared = inflight.get(key);
    if (!shared) {
      shared = client.callTool(req, { publishTimeoutMs });
      inflight.set(key, shared);
      const forget = () => inflight.delete(key);
      shared.then(forget, forget);
    }
    return new Promise<ToolResult>((resolve, reject) => {
      const onAbort = () =>
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      shared.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /** The card of a finished call as MCP content, or undefined while it runs. */
  async function answered(project: string, id: string): Promise<CallToolResult | undefined> {
    const e = await store.executions.get(project, id);
    if (!e?.card_id) return undefined;
    const card = await store.cards.byId(project, e.card_id);
    if (!card) return undefined;
    const tool = await store.tools.get(project, e.tool_name);
    return toCallToolResult(card.content as ToolResultContent, id, tool?.origin);
  }

  function listenProgress(
    call: ProgressOf,
    id: string,
    seen?: Set<string>,
  ): Subscription | undefined {
    if (!call.onProgress) return undefined;
    const onProgress = call.onProgress;
    const subject = client.subjects.toolProgress({
      project: call.project,
      channel: MCP_CHANNEL,
      target: call.tool.target,
    });
    return subscribeGuarded(nc, subject, {
      log: log.child({ project: call.project, tool_call_id: id }),
      onMessage: (msg) => {
        try {
          const ev = decodeMessage('tool_progress', msg.data);
          if (ev.tool_call_id !== id) return;
          const approval = ev.detail?.['approval_id'];
          if (typeof approval === 'string' && ev.detail?.['status'] === 'awaiting_approval') {
            // Told over the bus: the Postgres check need not tell it again.
            if (seen?.has(approval)) return;
            seen?.add(approval);
          }
          onProgress(ev);
        } catch {
          // Another sender's malformed event: not this call's to judge.
        }
      },
    });
  }

  /**
   * Writes the queued row (or finds the row of a re-sent keyed call) and builds the bus request.
   * A re-send whose call finished comes back with its answer; one for another tool is refused.
   * With `deferRow`, a call without a key does not wait for its row (see run).
   */
  async function prepare(
    call: Omit<MeshCall, 'signal' | 'onProgress'>,
    deferRow = false,
  ): Promise<{
    id: string;
    queued: boolean;
    req: ToolCallRequest;
    /**
     * Settles (never rejects) once no queued row is pending: it was written, found to exist, or
     * is no longer needed because the call was answered first.
     */
    settleRow: (write?: boolean) => Promise<void>;
    answer?: CallToolResult;
    conflict?: CallToolResult;
  }> {
    const { project, tool } = call;
    const id = call.idempotencyKey ? idempotentCallId(project, call.idempotencyKey) : randomUUID();
    const registered = (tool.options as { timeout_ms?: unknown }).timeout_ms;
    const deadline =
      typeof registered === 'number'
        ? Math.min(registered, config.tools.max_timeout_ms)
        : undefined;
    const req: ToolCallRequest = {
      project,
      channel: MCP_CHANNEL,
      tool: tool.name,
      arguments: call.arguments,
      toolCallId: id,
      ...(deadline !== undefined ? { timeoutMs: deadline } : {}),
      ...(call.traceparent ? { traceparent: call.traceparent } : {}),
      ...(call.mcp ? { mcp: call.mcp } : {}),
    };
    const enqueue = () =>
      store.executions.enqueue({
        projectId: project,
        toolCallId: id,
        channel: MCP_CHANNEL,
        toolName: tool.name,
        target: splitToolName(tool.name).target,
        instanceId: QUEUED_BY,
      });
    if (deferRow && !call.idempotencyKey) {
      // A fresh random id has no row to find, so nothing waits on this write. Like the tool
      // service's running row, the queued row is written only for a call that lasts: most are
      // answered within milliseconds, and their row is written once, with the card, before the
      // result event. A call still unanswered after QUEUED_ROW_AFTER_MS gets its queued row then,
      // and its answer waits for that write. The rows agree in either order: the tool service's
      // writes update a queued row; a queued row after them is a no-op (ON CONFLICT DO NOTHING).
      // A keyed call and a task write the row first: it is how a re-send is found, and a task's
      // record must precede its publish.
      let written: Promise<void> | undefined;
      const write = () =>
        (written ??= enqueue().then(
          () => undefined,
          (err: unknown) => log.warn({ err, tool_call_id: id }, 'could not record the queued call'),
        ));
      const timer = setTimeout(() => void write(), QUEUED_ROW_AFTER_MS);
      // `write`: the call goes on unawaited (detached), so its row must exist now.
      const settleRow = async (now = false) => {
        clearTimeout(timer);
        await (now ? write() : written);
      };
      return { id, queued: true, req, settleRow };
    }
    const settleRow = async () => {};
    const queued = await enqueue();
    if (queued) return { id, queued: true, req, settleRow };
    // A re-send of a keyed call: answer from its card when it has one, else wait for it (the
    // publish is deduplicated; the tool service never runs a known id twice).
    const e = await store.executions.get(project, id);
    if (e && e.tool_name !== tool.name) {
      const conflict = errorResult(
        'idempotency_conflict',
        `idempotency key already used for a call of ${e.tool_name}`,
      );
      return { id, queued: false, req, settleRow, answer: conflict, conflict };
    }
    const done = await answered(project, id);
    return { id, queued: false, req, settleRow, ...(done ? { answer: done } : {}) };
  }

  /**
   * Follows a task's progress events after its request was answered, until its result event (or
   * its deadline plus a grace) is seen on the bus. Lives in this instance only: if it stops, the
   * task goes on without progress.
   */
  function followProgress(call: ProgressOf, id: string, deadlineMs: number): () => void {
    const progress = listenProgress(call, id);
    if (!progress) return () => undefined;
    const results = subscribeGuarded(
      nc,
      client.subjects.toolResult({
        project: call.project,
        channel: MCP_CHANNEL,
        target: call.tool.target,
      }),
      {
        log: log.child({ project: call.project, tool_call_id: id }),
        // Nothing would end the follow but its deadline: stop now.
        onRefused: () => stop(),
        onMessage: (msg) => {
          try {
            if (decodeMessage('tool_result', msg.data).tool_call_id === id) stop();
          } catch {
            // Another sender's malformed event.
          }
        },
      },
    );
    const timer = setTimeout(() => stop(), deadlineMs + 5_000);
    timer.unref();
    function stop() {
      clearTimeout(timer);
      progress?.unsubscribe();
      results.unsubscribe();
    }
    return stop;
  }

  /** Publishes a call and returns at once (an MCP task); the card answers it later. */
  async function start(
    call: Omit<MeshCall, 'signal'>,
    /** Runs once the id is known and before anything is published (records the task). */
    beforePublish: (id: string) => Promise<void>,
  ): Promise<{ id: string; refused?: CallToolResult }> {
    const { id, queued, req, conflict } = await prepare(call);
    if (conflict) return { id, refused: conflict };
    await beforePublish(id);
    if (!queued) return { id };
    const stopProgress = call.onProgress
      ? followProgress(call, id, req.timeoutMs ?? config.tools.max_timeout_ms)
      : undefined;
    try {
      if (stopProgress) await nc.flush();
      await client.publishToolCall(req, { publishTimeoutMs });
      return { id };
    } catch (err) {
      stopProgress?.();
      if (isOutcomeUnknown(err)) {
        // The task stands (its call may run) rather than a refusal that invites a second call;
        // tasks/get follows it, and a keyed re-send publishes it again safely.
        log.warn({ err, tool_call_id: id }, 'an MCP task was sent but not acknowledged');
        return { id };
      }
      await store.executions.dropQueued(call.project, id);
      log.warn({ err, tool_call_id: id }, 'publishing an MCP task failed');
      return {
        id,
        refused: errorResult(
          'unavailable',
          `the message bus is unavailable: ${(err as Error).message}`,
        ),
      };
    }
  }

  async function run(call: MeshCall): Promise<CallToolResult> {
    const { project } = call;
    const { id, queued, req, settleRow, answer } = await prepare(call, true);
    if (answer) return answer;
    const seen = new Set<string>();
    const progress = listenProgress(call, id, seen);
    const asking = answerAsks({ nc, client, log, channel: MCP_CHANNEL }, call, id);
    const stopWatching = watchApproval(store, call, id, seen);
    const onAbort = () => {
      client
        .cancel({ project, channel: MCP_CHANNEL, toolCallId: id, reason: 'MCP request cancelled' })
        .catch((err: unknown) => log.warn({ err, tool_call_id: id }, 'publishing a cancel failed'));
    };
    call.signal.addEventListener('abort', onAbort, { once: true });
    try {
      // No flush (a round trip) before the publish: the subscriptions above and the call's
      // publish go out on the same connection (the client is built on `nc`), and a NATS server
      // handles one connection's messages in order, so its interest is registered before the
      // call reaches the stream, and before anything of the call can be sent.
      const waitSignal = call.detach ? AbortSignal.any([call.signal, call.detach]) : call.signal;
      const result = await awaitResult({ ...req, toolCallId: id }, waitSignal);
      return toCallToolResult(result.content, id, call.tool.origin);
    } catch (err) {
      if (call.detach?.aborted && !call.signal.aborted) {
        await settleRow(true);
        return DETACHED;
      }
      if (call.signal.aborted) {
        // The SDK sends no response to a cancelled request; this value is never seen.
        return errorResult('canceled', 'the request was cancelled', { tool_call_id: id });
      }
      if (err instanceof ResultWaitTimeoutError) {
        return errorResult('timeout', (err as Error).message, { tool_call_id: id });
      }
      if (isOutcomeUnknown(err)) {
        log.warn({ err, tool_call_id: id }, 'an MCP tool call was sent but not acknowledged');
        return outcomeUnknown(id, call.idempotencyKey !== undefined);
      }
      if (queued) {
        await settleRow();
        await store.executions.dropQueued(project, id);
      }
      log.warn({ err, tool_call_id: id }, 'publishing an MCP tool call failed');
      return errorResult(
        'unavailable',
        `the message bus is unavailable: ${(err as Error).message}`,
      );
    } finally {
      call.signal.removeEventListener('abort', onAbort);
      progress?.unsubscribe();
      asking?.unsubscribe();
      stopWatching();
      // The answer follows any row write under way: a client that reads its executions next
      // finds this call's row (the tool service wrote it with the card, or this one queued it).
      await settleRow();
    }
  }

  /**
   * Waits for the answer of a call published earlier (by this instance or another), without
   * publishing anything: its card if it has one, else its result event on the bus, then its card.
   * Waits `notBeforeMs` (the time left to decide its approval) plus the tool's deadline and a
   * grace; undefined when that passes first; rejects when `signal` aborts.
   */
  async function follow(
    project: string,
    tool: ToolRecord,
    id: string,
    notBeforeMs: number,
    signal: AbortSignal,
  ): Promise<CallToolResult | undefined> {
    const registered = (tool.options as { timeout_ms?: unknown }).timeout_ms;
    const deadline =
      typeof registered === 'number'
        ? Math.min(registered, config.tools.max_timeout_ms)
        : config.tools.max_timeout_ms;
    const waitMs = Math.max(0, notBeforeMs) + deadline + 5_000;
    let resolveEvent!: (content: ToolResultContent | undefined) => void;
    const event = new Promise<ToolResultContent | undefined>((r) => (resolveEvent = r));
    const sub = subscribeGuarded(
      nc,
      client.subjects.toolResult({ project, channel: MCP_CHANNEL, target: tool.target }),
      {
        log: log.child({ project, tool_call_id: id }),
        // No result event will come: the card is read once more and the wait ends.
        onRefused: () => resolveEvent(undefined),
        onMessage: (msg) => {
          try {
            const ev = decodeMessage('tool_result', msg.data);
            if (ev.tool_call_id === id) resolveEvent(ev.content);
          } catch {
            // Another sender's malformed event.
          }
        },
      },
    );
    const timer = setTimeout(() => resolveEvent(undefined), waitMs);
    const onAbort = () => resolveEvent(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      // Subscribed before the card is read: a result written in between is seen either way.
      await nc.flush();
      const done = await answered(project, id);
      if (done) return done;
      const content = await event;
      if (signal.aborted)
        throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
      if (!content) return undefined;
      // The card is written before the result event; the event's content is the same card's.
      return (await answered(project, id)) ?? toCallToolResult(content, id, tool.origin);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      sub.unsubscribe();
    }
  }

  return { run, start, answered, follow };
}
export type MeshCalls = ReturnType<typeof createMeshCalls>;
