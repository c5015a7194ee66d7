// The approval gate of the runtime, so it holds for every target (skills, builtin, registry
// tools) alike: after a call is validated and holds its lease, and before its handler runs, the
// gate asks whether a person must approve it (the tool's `options.approval`, the agent's tool
// config, or the whole target's). Such a call is parked: a row in state.approvals, the execution
// row awaiting_approval, the lease released and the message acked, so nothing is held while a
// person decides. A decision (api, CLI, console, MCP input request, or the deadline passing in
// the scan below) publishes the call message again with `CG-Approval-Id`; its delivery reads the
// decision here and runs the call (approved) or files approval_denied / approval_timeout.
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Bus } from '@toolmesh/bus';
import {
  ApprovalOptions,
  Header,
  decidedCallEnvelope,
  type ErrorBody,
  type ToolCall,
  type ToolResultContent,
} from '@toolmesh/protocol';
import type {
  ApprovalPolicyRow,
  ApprovalRecord,
  DecidedApproval,
  RequiredBy,
  CallsStore,
  RegistryStore,
} from '@toolmesh/store';
import type { Delivery } from '@toolmesh/bus';
import { emitProgress } from './emit.ts';
import type { CallIds } from './stages/intake.ts';

export type GateOutcome =
  /** No approval needed, or it was given: run the call. */
  | { kind: 'run'; approval?: ApprovalRecord }
  /** Parked or still waiting for a decision: release the lease and ack, file nothing. */
  | { kind: 'wait'; approval: ApprovalRecord; parked: boolean }
  /** Denied or timed out: file this failed content. */
  | { kind: 'refuse'; approval: ApprovalRecord; content: ToolResultContent };

export interface ApprovalGate {
  check(d: Delivery, ids: CallIds, call: ToolCall, argumentsKept: unknown): Promise<GateOutcome>;
  /** Whether the project's settings make this call wait for a person (cached like check's). */
  required(ids: CallIds): Promise<boolean>;
  /**
   * A stored cancel of a call: if the call waits for approval, the approval ends `canceled` and
   * the call is published again, so its delivery files it canceled now (the cancel's tombstone
   * is already written) rather than when someone decides.
   */
  canceled(project: string, toolCallId: string, reason: string): Promise<void>;
  start(): void;
  stop(): void;
}

export interface ApprovalGateOptions {
  bus: Bus;
  store: CallsStore & RegistryStore;
  instanceId: string;
  logger: Logger;
  defaultTimeoutMs: number;
  scanIntervalMs: number;
  cacheTtlMs: number;
}

/** Approval settings where they may appear: tool options, agent tool config, target policy. */
const Settings = z.object(ApprovalOptions);

interface Requirement {
  requiredBy: RequiredBy;
  timeoutMs: number;
}

/** The headers a call message carries that its re-publication must keep. */
const KEPT_HEADERS = [
  Header.agentId,
  Header.turnId,
  Header.turnEpoch,
  Header.toolCallId,
  Header.traceId,
  Header.credentialId,
  Header.traceparent,
] as const;

/**
 * Whether a call needs approval, from what the project says. The tool's own option, then the
 * agent's config of the tool, then the target: the first that requires it is named; the wait is
 * the most specific `approval_timeout_ms` given (agent, tool, target), else the default.
 */
export function requirementOf(
  row: ApprovalPolicyRow,
  defaultTimeoutMs: number,
): Requirement | undefined {
  const destructive = row.annotations?.['destructiveHint'] === true;
  const parse = (v: unknown) => {
    const r = Settings.safeParse(v ?? {});
    return r.success ? r.data : {};
  };
  const tool = parse(row.tool_options);
  const agent = parse(row.agent_config);
  const target = {
    approval: row.target_approval ?? undefined,
    approval_timeout_ms: row.target_timeout_ms ?? undefined,
  };
  const sources = [
    ['tool', tool],
    ['agent', agent],
    ['target', target],
  ] as const;
  let requiredBy: RequiredBy | undefined;
  for (const [source, s] of sources) {
    if (s.approval === 'required' || (s.approval === 'destructive' && destructive)) {
      requiredBy = { source, mode: s.approval };
      break;
    }
  }
  if (!requiredBy) return undefined;
  const timeoutMs =
    agent.approval_timeout_ms ??
    tool.approval_timeout_ms ??
    target.approval_timeout_ms ??
    defaultTimeoutMs;
  return { requiredBy, timeoutMs };
}

/** The failed content of a denied or timed-out approval: who decided, when and why. */
export function refusalOf(a: ApprovalRecord): ToolResultContent | undefined {
  const details = {
    approval_id: a.approval_id,
    decided_by: a.decided_by,
    decided_at: a.decided_at?.toISOString() ?? null,
    reason: a.decision_reason,
    required_by: a.required_by,
  };
  let error: ErrorBody;
  if (a.status === 'denied') {
    error = {
      code: 'approval_denied',
      message: `${a.tool_name} was denied by ${a.decided_by ?? 'unknown'}${a.decision_reason ? `: ${a.decision_reason}` : ''}`,
      details,
    };
  } else if (a.status === 'timed_out') {
    const waitedMs = a.expires_at.getTime() - a.requested_at.getTime();
    error = {
      code: 'approval_timeout',
      message: `${a.tool_name} was not approved within ${waitedMs} ms; nobody decided before ${a.expires_at.toISOString()}`,
      details: { ...details, timeout_ms: waitedMs },
    };
  } else if (a.status === 'canceled') {
    return {
      status: 'canceled',
      error: {
        code: 'canceled',
        message: a.decision_reason ?? 'canceled while it waited for approval',
        details,
      },
      duration_ms: 0,
    };
  } else {
    return undefined;
  }
  return { status: 'failed', error, duration_ms: 0 };
}

/** Publishes a decided call again, so the service that serves it applies the decision. */
export async function dispatchDecided(
  bus: Bus,
  store: CallsStore & RegistryStore,
  a: DecidedApproval,
): Promise<void> {
  const envelope = decidedCallEnvelope(a);
  await bus.publish(envelope.subject, envelope.data, {
    msgId: envelope.msgID,
    headers: envelope.headers,
  });
  await store.approvals.markDispatched(a.approval_id);
}

/** Decided approvals left unpublished this long (their decider died between) are published. */
const UNDISPATCHED_AFTER_MS = 5_000;
const SCAN_BATCH = 100;

export function createApprovalGate(o: ApprovalGateOptions): ApprovalGate {
  const { bus, store } = o;
  const log = o.logger.child({ component: 'approvals' });
  const cache = new Map<string, { row: ApprovalPolicyRow; at: number }>();
  let epoch = 0;
  let sub: { unsubscribe(): void } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let scanning = false;

  const policyOf = async (ids: CallIds): Promise<ApprovalPolicyRow> => {
    const name = `${ids.target}.${ids.tool}`;
    const key = `${ids.project}\u0000${name}\u0000${ids.agentId ?? ''}`;
    const hit = cache.get(key);
    if (hit && Date.now() - hit.at < o.cacheTtlMs) return hit.row;
    const started = epoch;
    const row = await store.approvals.policy(ids.project, name, ids.target, ids.agentId);
    if (epoch === started) {
      cache.set(key, { row, at: Date.now() });
      if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
    }
    return row;
  };

  async function scan(): Promise<void> {
    if (scanning) return;
    scanning = true;
    try {
      for (const a of await store.approvals.expire(SCAN_BATCH)) {
        log.info(
          { project: a.project_id, tool_call_id: a.tool_call_id, approval_id: a.approval_id },
          'approval timed out',
        );
        await dispatchDecided(bus, store, a);
      }
      for (const a of await store.approvals.undispatched(UNDISPATCHED_AFTER_MS, SCAN_BATCH)) {
        log.info(
          { project: a.project_id, tool_call_id: a.tool_call_id, approval_id: a.approval_id },
          'publishing a decided call its decider left unpublished',
        );
        await dispatchDecided(bus, store, a);
      }
    } catch (err) {
      log.warn({ err }, 'approval scan failed; the next one retries');
    } finally {
      scanning = false;
    }
  }

  return {
    required: async (ids) => requirementOf(await policyOf(ids), o.defaultTimeoutMs) !== undefined,
    check: async (d, ids, call, argumentsKept) => {
      const marked = d.header(Header.approvalId) !== undefined;
      const need = requirementOf(await policyOf(ids), o.defaultTimeoutMs);
      if (!need && !marked) return { kind: 'run' };
      let approval = await store.approvals.forCall(ids.project, ids.toolCallId);
      if (!approval) {
        // A header naming an approval that does not exist proves nothing: the policy decides.
        if (!need) return { kind: 'run' };
        const headers: Record<string, string> = {};
        for (const h of KEPT_HEADERS) {
          const v = d.header(h);
          if (v !== undefined) headers[h] = v;
        }
        approval = await store.approvals.park({
          projectId: ids.project,
          toolCallId: ids.toolCallId,
          channel: ids.channel,
          toolName: call.tool_name,
          target: ids.target,
          agentId: ids.agentId,
          instanceId: o.instanceId,
          arguments: argumentsKept,
          requiredBy: need.requiredBy,
          timeoutMs: need.timeoutMs,
          subject: d.subject,
          headers,
          body: d.data,
          turnId: ids.turnId,
        });
        if (approval.status === 'pending') {
          try {
            emitProgress(bus, ids, {
              status: 'awaiting_approval',
              approval_id: approval.approval_id,
              expires_at: approval.expires_at.toISOString(),
            });
          } catch (err) {
            log.debug({ err }, 'awaiting_approval event not published');
          }
          return { kind: 'wait', approval, parked: true };
        }
      }
      switch (approval.status) {
        case 'pending':
          return { kind: 'wait', approval, parked: false };
        case 'approved':
          return { kind: 'run', approval };
        case 'denied':
        case 'timed_out':
        case 'canceled':
          return { kind: 'refuse', approval, content: refusalOf(approval)! };
        default: {
          const never: never = approval.status;
          throw new Error(`unknown approval status ${String(never)}`);
        }
      }
    },
    canceled: async (project, toolCallId, reason) => {
      const a = await store.approvals.cancel(project, toolCallId, 'cancel', reason);
      if (!a) return;
      log.info(
        { project, tool_call_id: toolCallId, approval_id: a.approval_id },
        'call canceled while it waited for approval',
      );
      await dispatchDecided(bus, store, a);
    },
    start: () => {
      sub = bus.subscribe(bus.subjects.registryChangedFilter(), (subject) => {
        try {
          const { project } = bus.subjects.parse(subject);
          epoch++;
          const prefix = `${project}\u0000`;
          for (const k of cache.keys()) if (k.startsWith(prefix)) cache.delete(k);
        } catch (err) {
          log.debug({ err, subject }, 'ignoring a malformed registry event');
        }
      });
      timer = setInterval(() => void scan(), o.scanIntervalMs);
      timer.unref();
    },
    stop: () => {
      if (timer) clearInterval(timer);
      sub?.unsubscribe();
    },
  };
}
