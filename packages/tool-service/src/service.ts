// The runtime every tool service runs on. For each call on `cmd.tool.<target>.>` (a static
// service) or on every `cmd.tool.>` its resolver serves (a registry service): validate, take
// the lease, run the handler under its deadline and cancel signal, write the tool_result card
// (ON CONFLICT DO NOTHING), close the execution row, publish the result event and, when an
// agent waits, its inbox row and wakeup; then ack. Bad input is answered with a failed result,
// never dropped; infrastructure trouble is retried, never turned into a result.
import type { Logger } from 'pino';
import {
  isTerminalError,
  type Bus,
  type Consumption,
  type Delivery,
  type Disposition,
  type Lease,
} from '@toolmesh/bus';
import { cappedArguments, type Store } from '@toolmesh/store';
import { Header, MeshError, RetryableError, type ToolResultContent } from '@toolmesh/protocol';
import { metrics } from '@toolmesh/telemetry';
import type { CallCost, ToolDefinition } from './define.ts';
import { emitProgress, reemitCard } from './emit.ts';
import { finishCall } from './finish.ts';
import { execute } from './execute.ts';
import {
  bindStatic,
  intake,
  type Bound,
  type CallIds,
  type Intake,
  type Rejection,
} from './intake.ts';
import { bindResolved, type Skip, type ToolResolver } from './resolve.ts';
import type { Registry } from './registry.ts';
import { createCancelRegistry, type CancelRegistry } from './cancel.ts';
import { failure, interruptedOnTakeover } from './takeover.ts';
import { createPersist } from './persist.ts';
import { traced } from './observe.ts';
import { takeCallSlot } from './call-slot.ts';
import { createBusRate } from './bus-rate.ts';
import { createApprovalGate, type ApprovalGate } from './approvals.ts';

export interface ToolServiceLimits {
  concurrency: number;
  /** Slots one project may hold while another project is active (optional: no cap). */
  maxProjectInFlight?: number;
  maxCallBytes: number;
  /** tools.max_arguments_depth (optional: 64). */
  maxArgumentsDepth?: number;
  maxResultBytes: number;
  /** Largest arguments kept on the execution row (optional: 8 KiB). */
  executionArgumentsMaxBytes?: number;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  ackWaitMs: number;
  /** -1 for unlimited deliveries. */
  maxDeliver: number;
  leaseTtlMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  persistRetryMaxMs: number;
  /** Approvals: the default wait for a decision (optional: 1 h). */
  approvalTimeoutMs?: number;
  /** How often this instance files approvals past their deadline (optional: 1 s). */
  approvalScanIntervalMs?: number;
  /** How long a project's approval settings are trusted without a change event (30 s). */
  policyCacheTtlMs?: number;
}

interface CommonOptions {
  bus: Bus;
  store: Store;
  limits: ToolServiceLimits;
  instanceId: string;
  logger: Logger;
  /**
   * Calls of one project in flight at once, over every instance and every service given the
   * same store (state.call_slots); a call past it fails with quota_exceeded before its handler
   * runs. 0 or absent: no quota.
   */
  callsPerProject?: number;
  /**
   * [quotas] bus_calls_per_minute: tool calls a project may start a minute, over every instance
   * and service on the same store (bus-rate.ts); a project's own value in its settings wins. A
   * call past it fails with rate_limited before its handler runs. 0 or absent: no rate, unless
   * the project has its own.
   */
  callsPerMinute?: number;
}

/** One target, a fixed set of tools (the skills service's `skills` and `builtin`). */
export interface StaticToolServiceOptions extends CommonOptions {
  target: string;
  tools: readonly ToolDefinition[];
  /**
   * When given, a tool the project has disabled in its registry fails with tool_disabled. A
   * project without a row for the tool runs it (diagnostic calls need no registry).
   */
  registry?: Registry;
}

/**
 * Every tool call on the bus, each resolved at run time (services/tools over the registry).
 * `service` names the durable consumer and the author of the cards.
 */
export interface RegistryToolServiceOptions extends CommonOptions {
  service: string;
  resolver: ToolResolver;
}

export type ToolServiceOptions = StaticToolServiceOptions | RegistryToolServiceOptions;

export interface ToolService {
  start(): Promise<void>;
  /** Stops taking calls, lets running ones finish (up to graceMs), then returns. */
  stop(graceMs?: number): Promise<void>;
  inFlight(): number;
}

/** Calls still running after this long get a `running` row in the execution log. */
const RUNNING_ROW_AFTER_MS = 50;

export function createToolService(opts: ToolServiceOptions): ToolService {
  const { bus, store, limits, instanceId } = opts;
  const resolver = 'resolver' in opts ? opts.resolver : undefined;
  const tools = 'tools' in opts ? new Map(opts.tools.map((t) => [t.name, t])) : new Map();
  const name = 'resolver' in opts ? opts.service : opts.target;
  const log = opts.logger.child({
    component: 'tool-service',
    ...('resolver' in opts ? { tool_service: name } : { target: name }),
    // Once per line: a service's logger names its instance already (pino would repeat the key).
    ...(opts.logger.bindings()['instance'] === undefined ? { instance: instanceId } : {}),
  });
  const author = `${name}@${instanceId}`;
  let consumption: Consumption | undefined;
  const argumentsOf = (ids: CallIds) =>
    cappedArguments(ids.arguments, limits.executionArgumentsMaxBytes ?? 8_192);
  let cancels: CancelRegistry | undefined;
  let approvals: ApprovalGate | undefined;
  const busRate = createBusRate(store, opts.callsPerMinute ?? 0);

  const finishDeps = {
    bus,
    store,
    author,
    instanceId,
    persist: createPersist(limits),
    argumentsOf,
  };
  const finish = (
    ids: CallIds,
    content: ToolResultContent,
    lease: Lease | undefined,
    clog: Logger,
    metadata?: Record<string, unknown>,
    cost?: CallCost,
  ) => finishCall(finishDeps, ids, content, lease, clog, metadata, cost);

  const reemit = (ids: CallIds, clog: Logger) => reemitCard(bus, store, ids, clog);

  async function handle(d: Delivery): Promise<Disposition> {
    const started = performance.now();
    const lastDelivery = limits.maxDeliver > 0 && d.deliveryCount >= limits.maxDeliver;
    const accepted = intake(d, bus.subjects, limits);
    const ids = accepted.ids;
    // A registry service sees every tool call: those of targets it does not serve are another
    // service's, acked here before any lookup or lease.
    if (resolver && (!ids || !resolver.serves(ids.target))) return { type: 'ack' };
    if (!ids) {
      // Project or channel cannot be trusted: there is no place to file a result. The SDK and
      // the CLI refuse such ids before publishing; plain-NATS publishers see this in the logs.
      const r = accepted as Rejection;
      log.warn(
        { subject: d.subject, seq: d.streamSeq, code: r.code, reason: r.message },
        'call rejected at the edge',
      );
      return { type: 'term', reason: `${r.code}: ${r.message}` };
    }
    const clog = log.child({
      project: ids.project,
      channel: ids.channel,
      tool: `${ids.target}.${ids.tool}`,
      tool_call_id: ids.toolCallId,
      ...(ids.agentId ? { agent_id: ids.agentId } : {}),
    });
    try {
      const bound = accepted.ok ? await bind(accepted) : accepted;
      if ('skip' in bound) {
        clog.debug({ reason: bound.skip }, 'served by another service; acked');
        return { type: 'ack' };
      }
      return await handleCall(d, accepted, bound, ids, started, lastDelivery, clog);
    } catch (err) {
      if (isTerminalError(err)) {
        // Every delivery would fail the same way (a stack overflow on the message, a value
        // Postgres refuses): redelivering it 50 times only delays the caller's answer by
        // minutes. Filed now, without the arguments and context, which may be the cause.
        clog.error({ err }, 'call cannot be handled on any delivery; filed failed at once');
        const code = err instanceof MeshError ? err.code : 'internal_error';
        const plain: CallIds = { ...ids, arguments: undefined, context: undefined };
        const message = `the call cannot be handled: ${(err as Error).message}`.slice(0, 2_000);
        try {
          return await finish(plain, failure(code, message), undefined, clog);
        } catch (again) {
          if (again instanceof RetryableError) throw again;
          clog.error({ err: again }, 'the failure could not be filed either; message terminated');
          return { type: 'term', reason: message };
        }
      }
      if (!lastDelivery) throw err; // the consumer naks with backoff
      // The server will not deliver this message again: file a failure rather than leave the
      // caller without any result.
      clog.error({ err }, 'failure on the last allowed delivery');
      const message = `gave up after ${d.deliveryCount} deliveries: ${(err as Error).message}`;
      return finish(ids, failure('retries_exhausted', message), undefined, clog);
    }
  }

  const registry = 'registry' in opts ? opts.registry : undefined;

  /** The tool a well-formed call runs, a rejection, or a skip (another service's tool). */
  async function bind(accepted: Intake): Promise<Bound | Rejection | Skip> {
    if (resolver) return bindResolved(accepted, resolver, limits);
    const bound = bindStatic(accepted, tools, limits);
    if (!registry || 'ok' in bound) return bound;
    const { ids } = accepted;
    const row = await registry.get(ids.project, `${ids.target}.${ids.tool}`);
    if (row && !row.enabled) {
      return {
        ok: false,
        ids,
        code: 'tool_disabled',
        message: `tool ${ids.target}.${ids.tool} is disabled in project ${ids.project}`,
      };
    }
    return bound;
  }

  /**
   * The call's lease, or how to answer its message without running it: a tombstone (canceled
   * before pickup), a finished call (its card again), or an owner still running it (look again).
   * Rejections take the lease too: a later valid call under the same id must find the failed
   * result instead of running, and two copies of one call must not race.
   */
  async function takeLease(
    d: Delivery,
    ids: CallIds,
    lastDelivery: boolean,
    clog: Logger,
  ): Promise<{ lease: Lease } | { disposition: Disposition }> {
    const key = bus.names.leaseKey(ids.project, ids.toolCallId);
    const got = await traced('lease', ids, () =>
      bus.leases().acquire(key, `${instanceId}:${d.streamSeq}`, limits.leaseTtlMs),
    );
    if (!got.acquired) {
      if (got.state === 'canceled') {
        // Canceled before any instance picked it up (the tombstone of cancel.ts). A copy of a
        // call that already has its card is answered with that card.
        const done = await reemit(ids, clog);
        if (done) return { disposition: done };
        const reason = got.holder.reason ?? 'canceled by request';
        clog.info({ reason }, 'call canceled before it started; not run');
        return { disposition: await finish(ids, failure('canceled', reason), undefined, clog) };
      }
      if (got.state === 'done') {
        const done = await reemit(ids, clog);
        if (done) return { disposition: done };
        clog.error({ lease: got.holder }, 'lease says done but no card exists; retrying');
        throw new RetryableError(`lease of ${ids.toolCallId} is done but its card is missing`);
      }
      // The holder may have finished already (its lease lapses on its own): answer from the card.
      const done = await reemit(ids, clog);
      if (done) return { disposition: done };
      if (lastDelivery) return { disposition: { type: 'ack' } }; // the holder acks its own message
      const delayMs = Math.min(Math.max(got.expiresInMs, 100), 2_000);
      clog.debug(
        { holder: got.holder.owner, delayMs },
        'call is running elsewhere; will look again',
      );
      return { disposition: { type: 'nak', delayMs } };
    }
    if (got.lease.takeover) {
      // The previous owner may have written the card before its lease lapsed.
      const done = await reemit(ids, clog);
      if (done) return { disposition: done };
      metrics.leaseTakeovers.inc({ service: name });
      clog.warn('took over the lease of a stalled or crashed owner');
    }
    return { lease: got.lease };
  }

  async function handleCall(
    d: Delivery,
    accepted: Intake | Rejection,
    bound: Bound | Rejection,
    ids: CallIds,
    started: number,
    lastDelivery: boolean,
    clog: Logger,
  ): Promise<Disposition> {
    // A pure tool's call takes no lease (define.ts): copies may run side by side, the card
    // statement keeps one result, and it files the call canceled when a cancel was stored first.
    // One that needs approval, or carries a decision, goes through the gate like any other,
    // which takes the lease.
    const pure =
      accepted.ok &&
      !('ok' in bound) &&
      bound.tool.pure === true &&
      d.header(Header.approvalId) === undefined &&
      !(await (approvals?.required(ids) ?? Promise.resolve(false)));
    let lease: Lease | undefined;
    if (!pure) {
      const taken = await takeLease(d, ids, lastDelivery, clog);
      if ('disposition' in taken) return taken.disposition;
      lease = taken.lease;
    }
    if (!accepted.ok || 'ok' in bound) {
      const r = !accepted.ok ? accepted : (bound as Rejection);
      clog.warn({ code: r.code, reason: r.message }, 'call rejected');
      return finish(ids, failure(r.code, r.message, r.details), lease, clog);
    }
    const { call } = accepted;
    const { tool, args, timeoutMs } = bound;
    if (approvals && lease) {
      const gate = await approvals.check(d, ids, call, argumentsOf(ids)).catch(async (err) => {
        await lease.release().catch(() => undefined);
        throw err;
      });
      if (gate.kind === 'wait') {
        // Nothing is held while a person decides: the decision publishes the call again.
        await lease.release().catch(() => undefined);
        clog.info(
          { approval_id: gate.approval.approval_id, expires_at: gate.approval.expires_at },
          gate.parked ? 'call awaits approval' : 'call still awaits approval; acked',
        );
        return { type: 'ack' };
      }
      if (gate.kind === 'refuse') {
        clog.info(
          { approval_id: gate.approval.approval_id, code: gate.content.error?.code },
          'call not approved; filed',
        );
        return finish(ids, gate.content, lease, clog, {
          approval_id: gate.approval.approval_id,
          after_execution: call.after_execution,
        });
      }
      if (gate.approval) clog.info({ approval_id: gate.approval.approval_id }, 'call approved');
    }
    const interrupted = lease?.takeover ? interruptedOnTakeover(tool, call) : undefined;
    if (interrupted) {
      clog.warn('took over a non-idempotent call mid-run; filed interrupted, not run again');
      return finish(ids, interrupted, lease, clog);
    }
    // The project's call rate: counted once per call, on its first delivery (a redelivery was
    // counted when it first came this far, or filed before).
    if (d.deliveryCount === 1) {
      const limited = await busRate.take(ids.project).catch(async (err: unknown) => {
        await lease?.release().catch(() => undefined);
        throw err;
      });
      if (limited) {
        clog.info(limited.error?.details ?? {}, 'call refused: project over its call rate');
        return finish(ids, limited, lease, clog);
      }
    }
    const callQuota = opts.callsPerProject ?? 0;
    if (callQuota > 0) {
      const refused = await takeCallSlot(store, ids, instanceId, timeoutMs, callQuota).catch(
        async (err: unknown) => {
          await lease?.release().catch(() => undefined);
          throw err;
        },
      );
      if (refused) {
        clog.info(refused.error?.details ?? {}, 'call refused: project at its call quota');
        return finish(ids, refused, lease, clog);
      }
    }
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
          arguments: argumentsOf(ids),
          turnId: ids.turnId,
          context: ids.context,
          credentialId: ids.credentialId,
          timeoutMs: call.timeout_ms,
        })
        .catch((err: unknown) => clog.warn({ err }, 'could not record the running execution'));
    }, RUNNING_ROW_AFTER_MS);

    const controller = new AbortController();
    const unregister = cancels?.register(ids.project, ids.toolCallId, controller);
    const held = lease;
    const renew = held
      ? setInterval(
          () => {
            held.renew().then(
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
        execute(
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
            charge: (c) => {
              cost = c;
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
      // the slot free. A failed release is not the call's failure; the slot lapses on its own.
      if (callQuota > 0) {
        await store.quotas
          .releaseCall(ids.project, ids.toolCallId)
          .catch((err: unknown) => clog.warn({ err }, 'releasing the call slot failed'));
      }
    }
    if (outcome.kind === 'retry') {
      await lease?.release().catch(() => undefined);
      throw outcome.error;
    }
    const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
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
    return finish(
      ids,
      content,
      lease,
      clog,
      {
        ...annotations,
        ...(cost ? { cost } : {}),
        after_execution: call.after_execution,
        attempt: d.deliveryCount,
      },
      cost,
    );
  }

  return {
    start: async () => {
      cancels = createCancelRegistry(bus, log, async (project, toolCallId, reason) => {
        // Stored for the calls that take no lease (pure tools) and so meet no tombstone.
        await store.results.recordCancel(project, toolCallId, reason);
        await approvals?.canceled(project, toolCallId, reason);
      });
      approvals = createApprovalGate({
        bus,
        store,
        instanceId,
        logger: log,
        defaultTimeoutMs: limits.approvalTimeoutMs ?? 3_600_000,
        scanIntervalMs: limits.approvalScanIntervalMs ?? 1_000,
        cacheTtlMs: limits.policyCacheTtlMs ?? 30_000,
      });
      approvals.start();
      // Stored cancels become tombstones before the first call is taken (cancel.ts).
      await cancels.start(limits);
      // One durable on every project's command stream; the service's `concurrency` slots are
      // handed out round robin between the projects with calls waiting (@toolmesh/bus
      // consumeProjects), so one project's backlog delays another's call by one slot at most.
      consumption = await bus.consumeProjects(
        {
          durable: resolver ? bus.names.toolServiceConsumer(name) : bus.names.toolConsumer(name),
          filter: (project) =>
            resolver
              ? bus.subjects.allToolCallsFilter(project)
              : bus.subjects.toolCallFilter(name, project),
          ackWaitMs: limits.ackWaitMs,
          maxDeliver: limits.maxDeliver,
          maxAckPending: Math.max(1_000, limits.concurrency * 16),
        },
        {
          concurrency: limits.concurrency,
          maxProjectInFlight: limits.maxProjectInFlight ?? 0,
          ackWaitMs: limits.ackWaitMs,
          retryBaseMs: limits.retryBaseMs,
          retryMaxMs: limits.retryMaxMs,
          handler: handle,
        },
      );
      log.info(
        {
          ...(resolver ? { mode: 'registry' } : { tools: [...tools.keys()] }),
          concurrency: limits.concurrency,
        },
        'tool service started',
      );
    },
    stop: async (graceMs) => {
      await consumption?.stop(graceMs);
      approvals?.stop();
      await cancels?.close(graceMs);
      log.info('tool service stopped');
    },
    inFlight: () => consumption?.inFlight() ?? 0,
  };
}
