// Schedules steps on this instance with bounded concurrency. Two ways in: a wakeup (apply the
// agent's inbox, where its new tasks wait, then run the steps of that agent that became due: a
// tool's result readied its turn when its card was written) and a periodic scan (fire
// tool deadlines, re-publish calls an instance died before publishing, and take over turns
// whose lease expired or whose wakeup was lost). Both claim turns through the store with SKIP
// LOCKED, so any number of instances can run side by side.
import type { Logger } from 'pino';
import {
  contextFromTraceparent,
  hasActiveSpan,
  metrics,
  tracingEnabled,
  withSpan,
} from '@toolmesh/telemetry';
import type { AppliedInbox, StepContext } from '@toolmesh/store';
import type { Publisher } from './publish.ts';
import { createPublishedMarks } from './turn/published-marks.ts';
import { runStep, type StepDeps } from './turn/step.ts';

export interface Runner {
  /** Applies the agent's inbox and runs its due steps; resolves when none is left. */
  wake(projectId: string, agentId: string): Promise<void>;
  /** One pass of the scan (the timer runs it every scan_interval_ms). */
  scan(): Promise<void>;
  start(): void;
  /** Stops the scan and waits for the steps it started. */
  stop(): Promise<void>;
  /** Steps running now. */
  running(): number;
}

/** Rows one scan pass handles of each kind (deadlines, republishes, inboxes), so it stays short. */
const SCAN_BATCH = 100;

/** How often the calls steps published are marked (published-marks.ts); well under a lease. */
const MARK_EVERY_MS = 200;

export function createRunner(
  stepDeps: Omit<StepDeps, 'published'> & { publish: Publisher },
): Runner {
  const { store, agent: cfg, instanceId } = stepDeps;
  const log: Logger = stepDeps.logger.child({ component: 'runner' });
  const published = createPublishedMarks({
    store,
    flushMs: Math.min(MARK_EVERY_MS, cfg.lease_ttl_ms / 5),
    logger: log,
  });
  const deps: StepDeps = { ...stepDeps, published };
  let active = 0;
  const waiters: (() => void)[] = [];
  const background = new Set<Promise<unknown>>();
  let timer: NodeJS.Timeout | undefined;
  let scanning: Promise<void> | undefined;
  let stopped = false;

  const release = () => {
    active--;
    waiters.shift()?.();
  };
  const acquire = async () => {
    while (active >= cfg.concurrency) await new Promise<void>((r) => waiters.push(r));
    active++;
  };

  /**
   * The trace a step belongs to: the wakeup's, when a delivery brought it here; the task's own
   * (stored at its creation) when the scan picked the turn up. Read only while tracing.
   */
  async function traceOf(turn: Parameters<typeof runStep>[1]) {
    if (!tracingEnabled() || hasActiveSpan()) return {};
    const task = await store.tasks.get(turn.project_id, turn.task_id).catch(() => undefined);
    return task?.traceparent ? { parent: contextFromTraceparent(task.traceparent) } : {};
  }

  /** Runs a step; true when it left a turn of the agent due at once (see runStep). */
  async function step(
    turn: Parameters<typeof runStep>[1],
    context?: StepContext,
  ): Promise<boolean> {
    try {
      const again = await withSpan(
        'agent step',
        {
          ...(await traceOf(turn)),
          attributes: {
            'toolmesh.project': turn.project_id,
            'toolmesh.agent_id': turn.agent_id,
            'toolmesh.task_id': turn.task_id,
            'toolmesh.step': turn.step + 1,
          },
        },
        () => runStep(deps, turn, context),
      );
      metrics.agentSteps.inc({ outcome: 'ok' });
      return again;
    } catch (err) {
      metrics.agentSteps.inc({ outcome: 'error' });
      // The lease lapses and the scan retries the step; nothing is lost.
      log.error({ err, turn_id: turn.turn_id }, 'step failed; the turn is retried after its lease');
      return false;
    }
  }

  /**
   * Logs what applying an inbox did and announces the tasks it started. Returns the
   * announcements, still on their way (the caller awaits them; the connection keeps them ahead
   * of anything the steps publish later).
   */
  function announce(projectId: string, agentId: string, applied: AppliedInbox): Promise<unknown> {
    if (applied.ignored.length)
      log.info(
        { project_id: projectId, agent_id: agentId, ignored: applied.ignored },
        'inbox rows ignored',
      );
    const announced = Promise.all(
      applied.started.map((s) => {
        log.info(
          { project_id: projectId, agent_id: agentId, task_id: s.taskId, turn_id: s.turnId },
          'turn started',
        );
        return deps.publish.task(
          { project_id: projectId, channel: s.channel, agent_id: agentId },
          s.taskId,
          'running',
        );
      }),
    );
    announced.catch(() => undefined);
    return announced;
  }

  async function wake(projectId: string, agentId: string): Promise<void> {
    const scope = { projectId, agentId };
    let announced: Promise<unknown> = Promise.resolve();
    // The first claim applies the inbox in the same statement. As many claims as turns came
    // due, and one more for each step that left a turn due (its own, or its thread's next
    // message); at least one, for a turn whose inbox an instance applied before it died. A turn
    // that comes due later has a wakeup of its own, or the scan finds it.
    let claims = 1;
    for (let first = true; claims-- > 0; first = false) {
      await acquire();
      let woken;
      try {
        woken = await store.turns.wake(scope, instanceId, cfg.lease_ttl_ms, first);
      } catch (err) {
        release();
        throw err;
      }
      if (woken.applied) {
        announced = announce(projectId, agentId, woken.applied);
        claims = Math.max(0, woken.applied.resumed.length - 1);
      }
      if (!woken.claimed) {
        release();
        break;
      }
      try {
        if (await step(woken.claimed.turn, woken.claimed.context)) claims++;
      } finally {
        release();
      }
    }
    await announced;
  }

  async function scanOnce(): Promise<void> {
    const author = `agent-worker:${instanceId}`;
    for (const c of await store.turns.fireDeadlines(cfg.deadline_grace_ms, author, SCAN_BATCH)) {
      log.info(
        { turn_id: c.turn_id, tool_call_id: c.tool_call_id, tool: c.tool_name },
        'tool call past its deadline',
      );
      await deps.publish
        .cancel(c, c.tool_call_id, `deadline of ${c.deadline_ms} ms passed`)
        .catch((err: unknown) => log.warn({ err }, 'cancel of a timed-out call not published'));
    }
    for (const c of await store.turns.unpublished(cfg.lease_ttl_ms, SCAN_BATCH)) {
      // Its instance died between recording the step and publishing: the same id and
      // Nats-Msg-Id make a second publish harmless. The deadline doubles as the call's timeout.
      await deps.publish.toolCall(
        { project_id: c.project_id, channel: c.channel, agent_id: c.agent_id, turn_id: c.turn_id },
        c.epoch,
        {
          toolCallId: c.tool_call_id,
          toolName: c.tool_name,
          arguments: c.arguments,
          timeoutMs: c.deadline_ms,
        },
      );
      await store.turns.markPublished(c.project_id, [c.tool_call_id]);
    }
    // Inbox rows a wakeup should have applied long ago (the api could not publish it, say):
    // applied here; their turns are claimed below like any other due turn.
    const stalledMs = cfg.scan_interval_ms * 5;
    for (const a of await store.turns.stalledInboxes(stalledMs, SCAN_BATCH)) {
      log.info({ project_id: a.project_id, agent_id: a.agent_id }, 'applying a stalled inbox');
      const applied = await store.turns.applyInbox(a.project_id, a.agent_id, instanceId);
      await announce(a.project_id, a.agent_id, applied);
    }
    // Due turns nobody runs: a lost wakeup, a ready turn after refused calls, a dead instance.
    while (!stopped && active < cfg.concurrency) {
      active++;
      const turn = await store.turns
        .claim(undefined, instanceId, cfg.lease_ttl_ms)
        .catch((err: unknown) => {
          release();
          throw err;
        });
      if (!turn) {
        release();
        break;
      }
      log.info({ turn_id: turn.turn_id, agent_id: turn.agent_id }, 'scan picked up a due turn');
      // A step that left a turn of the agent due goes on as a wakeup would, not at the next scan.
      const p = step(turn)
        .finally(release)
        .then((again) => (again && !stopped ? wake(turn.project_id, turn.agent_id) : undefined))
        .catch((err: unknown) =>
          log.warn({ err, agent_id: turn.agent_id }, 'wake after a scan step failed'),
        );
      background.add(p);
      void p.finally(() => background.delete(p));
    }
  }

  const scan = async () => {
    scanning ??= scanOnce().finally(() => (scanning = undefined));
    return scanning;
  };

  return {
    wake,
    scan,
    start: () => {
      published.start();
      timer = setInterval(() => {
        scan().catch((err: unknown) => log.warn({ err }, 'scan failed'));
      }, cfg.scan_interval_ms);
    },
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await scanning?.catch(() => undefined);
      await Promise.all(background);
      await published.stop();
    },
    running: () => active,
  };
}
