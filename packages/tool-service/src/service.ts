// The runtime every tool service runs on. Each call on `cmd.tool.<target>.>` (a static
// service) or on every `cmd.tool.>` its resolver serves (a registry service) passes through
// named stages (stages/*.ts):
//   intake   read the delivery as a call, or as a rejection that can still be filed
//   bind     the tool it runs, its validated arguments and deadline
//   lease    the call's lease, or the answer of a copy (canceled, done, running elsewhere)
//   gate     a person's approval; a non-idempotent call taken over mid-run is not run again
//   quota    the project's call rate and calls in flight
//   execute  the handler under its deadline and cancel signal
//   finish   the one tool_result card (with the execution row and the answer to an agent's turn), the
//            result event and wakeup; then ack
// Bad input is answered with a failed result, never dropped; infrastructure trouble is retried,
// never turned into a result.
import type { Logger } from 'pino';
import type { Bus, Consumption, Delivery, Disposition } from '@toolmesh/bus';
import { cappedArguments, type CallsStore, type RegistryStore } from '@toolmesh/store';
import type { ToolDefinition } from './define.ts';
import { reemitCard } from './emit.ts';
import type { ToolServiceLimits } from './limits.ts';
import type { Registry } from './registry.ts';
import type { ToolResolver } from './resolve.ts';
import { createCancelRegistry, type CancelRegistry } from './cancel.ts';
import { createPersist } from './persist.ts';
import { createApprovalGate, type ApprovalGate } from './approvals.ts';
import type { CallInHand, ServiceParts } from './stages/context.ts';
import { receive, type Intake, type Rejection } from './stages/intake.ts';
import { createBind } from './stages/bind.ts';
import { leaseCall } from './stages/lease.ts';
import { gate } from './stages/gate.ts';
import { createQuota } from './stages/quota.ts';
import { execute } from './stages/execute.ts';
import { fileUnhandled, finishCall } from './stages/finish.ts';
import { failure } from './takeover.ts';

export type { ToolServiceLimits } from './limits.ts';

interface CommonOptions {
  bus: Bus;
  store: CallsStore & RegistryStore;
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
  let consumption: Consumption | undefined;
  let cancels: CancelRegistry | undefined;
  let approvals: ApprovalGate | undefined;

  const argumentsOf = (ids: CallInHand['ids']) =>
    cappedArguments(ids.arguments, limits.executionArgumentsMaxBytes ?? 8_192);
  const finishDeps = {
    bus,
    store,
    author: `${name}@${instanceId}`,
    instanceId,
    persist: createPersist(limits),
    argumentsOf,
  };
  const parts: ServiceParts = {
    bus,
    store,
    limits,
    instanceId,
    name,
    argumentsOf,
    finish: (ids, content, lease, clog, metadata, cost) =>
      finishCall(finishDeps, ids, content, lease, clog, metadata, cost),
    reemit: (ids, clog) => reemitCard(bus, store, ids, clog),
  };
  const bind = createBind({
    limits,
    resolver,
    tools,
    registry: 'registry' in opts ? opts.registry : undefined,
  });
  const quota = createQuota(parts, {
    store,
    callsPerProject: opts.callsPerProject ?? 0,
    callsPerMinute: opts.callsPerMinute ?? 0,
  });

  async function handle(d: Delivery): Promise<Disposition> {
    const started = performance.now();
    const serves = resolver ? (target: string) => resolver.serves(target) : undefined;
    const received = receive(d, bus.subjects, limits, log, serves);
    if ('disposition' in received) return received.disposition;
    const { ids } = received;
    const clog = log.child({
      project: ids.project,
      channel: ids.channel,
      tool: `${ids.target}.${ids.tool}`,
      tool_call_id: ids.toolCallId,
      ...(ids.agentId ? { agent_id: ids.agentId } : {}),
    });
    const lastDelivery = limits.maxDeliver > 0 && d.deliveryCount >= limits.maxDeliver;
    const c: CallInHand = { d, ids, clog, started, lastDelivery };
    try {
      return await run(c, received.accepted);
    } catch (err) {
      return fileUnhandled(parts.finish, c, err);
    }
  }

  /** The stages after intake, in order; each either passes the call on or settles it. */
  async function run(c: CallInHand, accepted: Intake | Rejection): Promise<Disposition> {
    const { ids, clog } = c;
    const bound = accepted.ok ? await bind(accepted) : accepted;
    if ('skip' in bound) {
      clog.debug({ reason: bound.skip }, 'served by another service; acked');
      return { type: 'ack' };
    }
    const leased = await leaseCall(parts, c, accepted, bound, approvals);
    if ('disposition' in leased) return leased.disposition;
    const { lease } = leased;
    if (!accepted.ok || 'ok' in bound) {
      const r = !accepted.ok ? accepted : (bound as Rejection);
      clog.warn({ code: r.code, reason: r.message }, 'call rejected');
      return parts.finish(ids, failure(r.code, r.message, r.details), lease, clog);
    }
    const { call } = accepted;
    const gated = await gate(parts, c, { approvals, lease, call, tool: bound.tool });
    if (gated) return gated.disposition;
    const refused = await quota.admit(c, lease, bound.timeoutMs);
    if (refused) return refused.disposition;
    const done = await execute(parts, c, { call, bound, lease, cancels, quota });
    return parts.finish(ids, done.content, lease, clog, done.metadata, done.cost);
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
