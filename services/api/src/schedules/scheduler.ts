// The firing side of schedules, run by every api instance. Each pass claims the due schedules in
// one transaction (FOR UPDATE SKIP LOCKED: rows another instance is firing are skipped), records
// one firing per schedule and moves next_fire_at on in that same transaction; an agent schedule's
// task and inbox row are written there too. Only then are the messages published (the tool call,
// or the agent's wakeup) and the firing marked published. An instance that dies between the
// commit and the publish leaves an unpublished firing, which the next pass of any instance
// publishes again under the same ids: each tick is one call or one task.
import { setTimeout as sleep } from 'node:timers/promises';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Client } from '@toolmesh/client';
import type { SchedulesConfig } from '@toolmesh/config';
import { Header, MsgId, WakeupReason, createSubjects, encodeMessage } from '@toolmesh/protocol';
import { streamPublisher } from '@toolmesh/stream-publish';
import type { AgentsStore, Firing, Schedule, Store, TxStore } from '@toolmesh/store';
import { nextTick, tickTaskId, tickToolCallId } from './ticks.ts';

export interface SchedulerDeps {
  store: AgentsStore & Pick<Store, 'tx'>;
  client: Client;
  nc: NatsConnection;
  root: string;
  config: SchedulesConfig;
  instanceId: string;
  logger: Logger;
}

export interface Scheduler {
  /** One pass now (tests and the loop use it); resolves with the firings it recorded. */
  pass(now?: Date): Promise<Firing[]>;
  stop(): Promise<void>;
}

/** An unpublished firing younger than this may still be on its way from the instance that made it. */
const REPUBLISH_AFTER_MS = 5_000;
/** Missed ticks counted at most, for a fine pattern after a long outage. */
const MAX_COUNTED = 100_000;

interface Planned {
  schedule: Schedule;
  firing: Firing;
}

export function startScheduler(deps: SchedulerDeps): Scheduler {
  const { store, client, config } = deps;
  const log = deps.logger.child({
    component: 'scheduler',
    ...(deps.logger.bindings()['instance'] === undefined ? { instance: deps.instanceId } : {}),
  });
  const subjects = createSubjects(deps.root);
  const publisher = streamPublisher(deps.nc);
  const firedBy = `api@${deps.instanceId}`;

  /** What a due schedule does now: fire a tick (which, and how many it stands for) or skip. */
  function plan(s: Schedule, now: Date): { tick?: Date; missed: number; next: Date | null } {
    const due = s.next_fire_at as Date;
    if (now.getTime() - due.getTime() <= config.misfire_grace_ms) {
      return { tick: due, missed: 0, next: nextTick(s.cron, s.timezone, due) };
    }
    // Late past the grace: everything was down. Count the ticks that passed.
    let last = due;
    let count = 0;
    let t: Date | null = due;
    while (t !== null && t.getTime() <= now.getTime() && count < MAX_COUNTED) {
      last = t;
      count++;
      t = nextTick(s.cron, s.timezone, t);
    }
    const next = t !== null && t.getTime() <= now.getTime() ? nextTick(s.cron, s.timezone, now) : t;
    return s.catch_up === 'once'
      ? { tick: last, missed: count - 1, next }
      : { missed: count, next };
  }

  async function fire(tx: TxStore, s: Schedule, tick: Date, missed: number, next: Date | null) {
    if (s.kind === 'tool') {
      const toolCallId = tickToolCallId(s, tick);
      await tx.schedules.fired(
        { projectId: s.project_id, name: s.name, tickAt: tick, toolCallId, missed, firedBy },
        next,
      );
      return toolCallId;
    }
    const agentId = s.agent_id as string;
    const taskId = tickTaskId(s, tick);
    const task = await tx.tasks.create({
      projectId: s.project_id,
      agentId,
      channel: s.channel,
      input: s.input,
      taskId,
    });
    if (!task) {
      // The agent was deleted: the tick fires nothing, and says so in its firing.
      await tx.schedules.fired(
        { projectId: s.project_id, name: s.name, tickAt: tick, missed, firedBy },
        next,
      );
      log.warn({ project: s.project_id, schedule: s.name, agent_id: agentId }, 'agent is gone');
      return undefined;
    }
    await tx.inbox.addTask({
      projectId: s.project_id,
      agentId,
      taskId,
      payload: { channel: s.channel },
    });
    await tx.schedules.fired(
      { projectId: s.project_id, name: s.name, tickAt: tick, taskId, missed, firedBy },
      next,
    );
    return taskId;
  }

  async function publish(
    s: Pick<Schedule, 'kind' | 'tool' | 'arguments' | 'agent_id' | 'channel'>,
    f: Firing,
  ) {
    if (f.tool_call_id) {
      await client.publishToolCall({
        project: f.project_id,
        channel: s.channel,
        tool: s.tool as string,
        arguments: s.arguments ?? {},
        toolCallId: f.tool_call_id,
      });
    } else if (f.task_id) {
      const agent = s.agent_id as string;
      const h = natsHeaders();
      h.set(Header.agentId, agent);
      await publisher.publish(
        subjects.agentWakeup({ project: f.project_id, channel: s.channel, agent }),
        encodeMessage('wakeup', {
          v: 1,
          agent_id: agent,
          reason: WakeupReason.task,
          correlation_id: f.task_id,
        }),
        { msgId: MsgId.wakeup(f.project_id, agent, f.task_id), headers: h },
      );
    }
    await store.schedules.markPublished(f.project_id, f.name, f.tick_at);
  }

  async function pass(now = new Date()): Promise<Firing[]> {
    const planned = await store.tx(async (tx) => {
      const out: Planned[] = [];
      for (const s of await tx.schedules.claimDue(now, config.batch_size)) {
        const p = plan(s, now);
        if (p.tick === undefined) {
          await tx.schedules.advance(s.project_id, s.name, p.next);
          log.info(
            { project: s.project_id, schedule: s.name, missed: p.missed },
            'missed ticks skipped (catch_up = skip)',
          );
          continue;
        }
        const id = await fire(tx, s, p.tick, p.missed, p.next);
        out.push({
          schedule: s,
          firing: {
            project_id: s.project_id,
            name: s.name,
            tick_at: p.tick,
            tool_call_id: s.kind === 'tool' ? (id ?? null) : null,
            task_id: s.kind === 'agent' ? (id ?? null) : null,
            missed: p.missed,
            fired_at: now,
            published_at: null,
            fired_by: firedBy,
          },
        });
      }
      return out;
    });
    for (const { schedule, firing } of planned) {
      try {
        await publish(schedule, firing);
      } catch (err) {
        log.warn(
          { err, project: firing.project_id, schedule: firing.name },
          'publish failed; the next pass retries',
        );
      }
      log.info(
        {
          project: firing.project_id,
          schedule: firing.name,
          tick: firing.tick_at.toISOString(),
          tool_call_id: firing.tool_call_id ?? undefined,
          task_id: firing.task_id ?? undefined,
          missed: firing.missed,
        },
        'schedule fired',
      );
    }
    await republish(now);
    return planned.map((p) => p.firing);
  }

  async function republish(now: Date): Promise<void> {
    const stale = await store.schedules.unpublished(
      new Date(now.getTime() - REPUBLISH_AFTER_MS),
      config.batch_size,
    );
    for (const f of stale) {
      if (f.tool_call_id === null && f.task_id === null) continue;
      const s = await store.schedules.get(f.project_id, f.name);
      if (!s) continue;
      try {
        await publish(s, f);
        log.info(
          { project: f.project_id, schedule: f.name, tick: f.tick_at.toISOString() },
          'unpublished firing published again',
        );
      } catch (err) {
        log.warn(
          { err, project: f.project_id, schedule: f.name },
          'publishing a firing again failed',
        );
      }
    }
  }

  const stopping = new AbortController();
  const loop = config.enabled
    ? (async () => {
        while (!stopping.signal.aborted) {
          try {
            await pass();
          } catch (err) {
            log.warn({ err }, 'schedule pass failed; trying again');
          }
          await sleep(config.poll_ms, undefined, { signal: stopping.signal }).catch(
            () => undefined,
          );
        }
      })()
    : Promise.resolve();

  return {
    pass,
    stop: async () => {
      stopping.abort();
      await loop;
    },
  };
}
