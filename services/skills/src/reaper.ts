// The local reaper: ends async task heads and job heads left `running` by a process that is
// gone, so a task never reads as running forever and a job never keeps its session busy. At start (before the service takes calls) and on an interval
// it heartbeats this instance's row in state.service_instances, then looks at every running
// head:
// - its owner is dead (not seen for DEAD_AFTER_INTERVALS intervals, or restarted under the same
//   id since the task began, or never registered at all): nobody will ever write the head, so
//   it becomes `orphaned`; if the owner ran on this host and the task's sandbox process is
//   still there, it is killed first;
// - its owner is alive and on this host, but the process is gone: the owner writes the head
//   when the process ends, so only a head whose process stays gone for DEAD_AFTER_INTERVALS
//   scans (the owner's write failed) becomes `orphaned`.
// A job is treated as a task whose process is its running step's; when it is orphaned, that
// step becomes `orphaned` and the steps still pending `skipped`.
// A process is killed only when pid, start time and command line all prove it is the task's
// (or step's) bwrap, or a run_service forwarder (a socat listening on a private unix socket;
// forwarders are detached and outlive a killed service): pids are reused, and a wrong guess
// would kill a stranger.
import { hostname } from 'node:os';
import { rm } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import { metrics } from '@toolmesh/telemetry';
import { isOurProcess, readProc } from '@toolmesh/sandbox';
import { FORWARDER_DIR_PREFIX } from './skills/forwarders.ts';
import type {
  FinishSkillTask,
  SkillJobRecord,
  SkillJobStep,
  SkillTaskRecord,
  CoreStore,
  SkillsStore,
} from '@toolmesh/store';

/** An owner missing this many heartbeats is dead; a head this many scans without a process too. */
export const DEAD_AFTER_INTERVALS = 3;
const SERVICE = 'skills';

export interface ForwarderRecord {
  readonly pid: number;
  readonly startTime: string;
  readonly hostPort: number;
  /** The unix socket it listens on (older heads: none, it listened on the host port). */
  readonly socket?: string;
}

/** The forwarders a task head's endpoints name (see skills/forwarders.ts); others are skipped. */
export function forwardersOf(endpoints: readonly unknown[]): ForwarderRecord[] {
  const out: ForwarderRecord[] = [];
  for (const e of endpoints) {
    const r = e as {
      forwarder_pid?: unknown;
      forwarder_start_time?: unknown;
      host_port?: unknown;
      forwarder_socket?: unknown;
    };
    if (
      Number.isInteger(r.forwarder_pid) &&
      typeof r.forwarder_start_time === 'string' &&
      Number.isInteger(r.host_port)
    ) {
      out.push({
        pid: r.forwarder_pid as number,
        startTime: r.forwarder_start_time,
        hostPort: r.host_port as number,
        ...(typeof r.forwarder_socket === 'string' ? { socket: r.forwarder_socket } : {}),
      });
    }
  }
  return out;
}

/**
 * True only when the pid is alive, started when recorded, is a socat and listens on the
 * recorded socket (or, for older heads, host port): the proof required before a forwarder is
 * killed.
 */
export async function isOurForwarder(f: ForwarderRecord): Promise<boolean> {
  if (f.pid <= 1) return false;
  const info = await readProc(f.pid);
  return (
    info !== undefined &&
    info.startTime === f.startTime &&
    info.pgrp === f.pid &&
    basename(info.argv[0] ?? '') === 'socat' &&
    (info.argv[1] ?? '').startsWith(
      f.socket === undefined ? `TCP-LISTEN:${f.hostPort},` : `UNIX-LISTEN:${f.socket},`,
    )
  );
}

export interface ReaperOptions {
  store: CoreStore & SkillsStore;
  instanceId: string;
  intervalMs: number;
  logger: Logger;
  /** When this incarnation started: heads of our id begun before it are a dead one's. */
  startedAt?: Date;
  host?: string;
  /** Checks a task's process (the default reads /proc); tests may narrow it. */
  isOurs?: (pid: number | null, startTime: string | null) => Promise<boolean>;
}

export interface ReapReport {
  orphaned: string[];
  killed: number[];
}

export interface Reaper {
  /** One heartbeat and scan. */
  runOnce(): Promise<ReapReport>;
  /** Scans every interval from now on (errors are logged, the next tick retries). */
  start(): void;
  stop(): Promise<void>;
}

export function createReaper(o: ReaperOptions): Reaper {
  const log = o.logger.child({ component: 'reaper' });
  const startedAt = o.startedAt ?? new Date();
  const host = o.host ?? hostname();
  const isOurs = o.isOurs ?? ((pid, st) => isOurProcess(pid, st));
  const deadAfterMs = DEAD_AFTER_INTERVALS * o.intervalMs;
  /** Consecutive scans that found a live owner's task or job without its process, by kind:id. */
  const missing = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<unknown> = Promise.resolve();
  let stopped = false;

  /** A task or a job head, seen the same way: an owner, a process, a way to end it orphaned. */
  interface Head {
    readonly kind: 'task' | 'job';
    readonly id: string;
    readonly owner: string;
    readonly startedAt: Date;
    readonly pid: number | null;
    readonly procStartTime: string | null;
    /** run_service's host port forwarders, as its task head recorded them. */
    readonly forwarders: readonly ForwarderRecord[];
    /** Writes the head `orphaned`; false when it had already ended. */
    orphan(why: string): Promise<boolean>;
  }

  const orphanedError = (kind: string, why: string) => ({
    code: 'orphaned',
    message: `the ${kind}'s process was lost: ${why}`,
  });

  const taskHead = (t: SkillTaskRecord): Head => ({
    kind: 'task',
    id: t.task_id,
    owner: t.owner_instance,
    startedAt: t.started_at,
    pid: t.pid,
    procStartTime: t.proc_start_time,
    forwarders: forwardersOf(t.endpoints),
    orphan: async (why) => {
      const final: FinishSkillTask = {
        status: 'orphaned',
        exitCode: null,
        signal: null,
        stdoutTail: '',
        stderrTail: '',
        stdoutTruncated: false,
        stderrTruncated: false,
        artifacts: [],
        outputErrors: [],
        error: orphanedError('task', why),
      };
      return (await o.store.skillTasks.finish(t.task_id, final)) !== undefined;
    },
  });

  // A job's process is its running step's; a job between steps (or whose running step's pid
  // was not written yet) has none, and reads as gone like a task whose process is.
  const jobHead = (j: SkillJobRecord): Head => {
    const step = j.steps.find((s) => s.status === 'running');
    return {
      kind: 'job',
      id: j.job_id,
      owner: j.owner_instance,
      startedAt: j.started_at,
      pid: step?.pid ?? null,
      procStartTime: step?.proc_start_time ?? null,
      forwarders: [],
      orphan: async (why) => {
        const now = new Date().toISOString();
        const steps: SkillJobStep[] = j.steps.map((s) =>
          s.status === 'running'
            ? { ...s, status: 'orphaned', finished_at: now }
            : s.status === 'pending'
              ? { ...s, status: 'skipped' }
              : s,
        );
        const done = await o.store.skillJobs.finish(
          j.job_id,
          'orphaned',
          steps,
          orphanedError('job', why),
        );
        return done !== undefined;
      },
    };
  };

  const orphan = async (head: Head, why: string): Promise<boolean> => {
    const done = await head.orphan(why);
    if (done)
      log.warn({ [`${head.kind}_id`]: head.id, owner: head.owner, why }, `${head.kind} orphaned`);
    return done;
  };

  const kill = async (head: Head): Promise<number | undefined> => {
    const pid = head.pid;
    if (pid === null || !(await isOurs(pid, head.procStartTime))) return undefined;
    // Proven ours just now. The launcher made it a group leader: the group is the whole host
    // side of the command (bwrap's pid namespace dies with it).
    const info = await readProc(pid);
    try {
      process.kill(info?.pgrp === pid ? -pid : pid, 'SIGKILL');
    } catch {
      return undefined; // Gone in between.
    }
    log.warn({ [`${head.kind}_id`]: head.id, pid }, 'killed a dead owner’s sandbox process');
    return pid;
  };

  /** Kills the head's forwarders that are still ours; a dead owner cannot stop them. */
  const killForwarders = async (head: Head): Promise<number[]> => {
    const killed: number[] = [];
    for (const f of head.forwarders) {
      if (!(await isOurForwarder(f))) continue;
      try {
        // Started detached: the group is the forwarder and its per-connection children.
        process.kill(-f.pid, 'SIGKILL');
      } catch {
        continue;
      }
      log.warn({ task_id: head.id, pid: f.pid, host_port: f.hostPort }, 'killed a lost forwarder');
      // Its private socket folder goes too (only one of ours, by name).
      const dir = f.socket === undefined ? '' : dirname(f.socket);
      if (basename(dir).startsWith(FORWARDER_DIR_PREFIX)) {
        await rm(dir, { recursive: true, force: true }).catch(() => undefined);
      }
      killed.push(f.pid);
    }
    return killed;
  };

  const runOnce = async (): Promise<ReapReport> => {
    try {
      const report = await scan();
      metrics.reaperPasses.inc({ reaper: 'skills', outcome: 'ok' });
      metrics.reaperReaped.inc({ reaper: 'skills' }, report.orphaned.length);
      return report;
    } catch (err) {
      metrics.reaperPasses.inc({ reaper: 'skills', outcome: 'error' });
      throw err;
    }
  };

  const scan = async (): Promise<ReapReport> => {
    const report: ReapReport = { orphaned: [], killed: [] };
    await o.store.instances.heartbeat({
      instanceId: o.instanceId,
      service: SERVICE,
      host,
      pid: process.pid,
      startedAt,
    });
    const instances = new Map(
      (await o.store.instances.list(SERVICE)).map((r) => [r.instance_id, r]),
    );
    const [tasks, jobs] = await Promise.all([
      o.store.skillTasks.listAllRunning(),
      o.store.skillJobs.listAllRunning(),
    ]);
    const heads = [...tasks.map(taskHead), ...jobs.map(jobHead)];
    const seen = new Set<string>();
    for (const head of heads) {
      const key = `${head.kind}:${head.id}`;
      seen.add(key);
      const owner = instances.get(head.owner);
      const local = owner?.host === host;
      const dead = !owner
        ? Date.now() - head.startedAt.getTime() > deadAfterMs
          ? 'its owner instance never registered'
          : undefined
        : owner.seen_ago_ms > deadAfterMs
          ? `its owner instance ${owner.instance_id} was last seen ${owner.seen_ago_ms} ms ago`
          : owner.started_at.getTime() > head.startedAt.getTime()
            ? `its owner instance ${owner.instance_id} restarted after the ${head.kind} began`
            : undefined;
      if (dead) {
        if (local) {
          const pid = await kill(head);
          if (pid !== undefined) report.killed.push(pid);
          report.killed.push(...(await killForwarders(head)));
        }
        if (await orphan(head, dead)) report.orphaned.push(head.id);
        continue;
      }
      if (!local) continue; // A live owner elsewhere: its own reaper looks after it.
      if (await isOurs(head.pid, head.procStartTime)) {
        missing.delete(key);
        continue;
      }
      // The owner writes the head once it has collected the outputs (or starts the next step):
      // give it a few scans.
      const n = (missing.get(key) ?? 0) + 1;
      missing.set(key, n);
      if (n >= DEAD_AFTER_INTERVALS) {
        missing.delete(key);
        const why = `its process ${head.pid} has been gone for ${n} scans`;
        report.killed.push(...(await killForwarders(head)));
        if (await orphan(head, why)) report.orphaned.push(head.id);
      }
    }
    for (const key of missing.keys()) if (!seen.has(key)) missing.delete(key);
    return report;
  };

  const tick = (): void => {
    timer = setTimeout(() => {
      inFlight = runOnce()
        .catch((err: unknown) => log.warn({ err }, 'reaper scan failed; retrying next interval'))
        .finally(() => {
          if (!stopped) tick();
        });
    }, o.intervalMs);
  };

  return {
    runOnce,
    start: () => {
      if (timer === undefined && !stopped) tick();
    },
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
}
