// Quotas against a real Postgres, from two stores on two pools (two instances): many admissions
// of one project racing at once let exactly `limit` through, whichever store asked; another
// project is counted apart; ending what was counted makes room again; 0 is no quota.
import { randomUUID } from 'node:crypto';
import { usePostgres, type TestPostgres } from '@toolmesh/testing';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../core/migrate.ts';
import { createPool } from '../core/pool.ts';
import { createStore, type Store } from '../store.ts';
import type { Admission } from './quotas.ts';

const logger = pino({ level: 'silent' });
let db: TestPostgres;
let a: Store;
let b: Store;

const storeOn = (url: string) =>
  createStore(
    createPool({ url, max: 8, statementTimeoutMs: 5_000, connectTimeoutMs: 5_000, logger }),
  );

beforeAll(async () => {
  db = await usePostgres();
  a = storeOn(db.url);
  b = storeOn(db.url);
  await migrate({ pool: a.pool, logger });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await db?.cleanup();
});

const project = () => `p${randomUUID().slice(0, 8)}`;
const admittedOf = (all: Admission<unknown>[]) => all.filter((x) => x.admitted).length;

const task = (projectId: string) => ({
  taskId: randomUUID(),
  projectId,
  agentId: null,
  toolCallId: randomUUID(),
  sandboxId: `sb-${randomUUID()}`,
  sessionKey: null,
  command: 'sleep 1',
  ownerInstance: 'i1',
  pid: null,
  procStartTime: null,
  startedAt: new Date(),
});

const sandbox = (projectId: string) => ({
  sandboxId: `sb-${randomUUID()}`,
  provider: 'local' as const,
  projectId,
  agentId: null,
  sessionKey: `call:${randomUUID()}`,
  owner: 'call',
  lockMs: 60_000,
  idleTtlSec: 60,
  hardTtlSec: 600,
});

describe('quotas', () => {
  it('running tasks: 12 racing starts over two stores admit exactly the limit', async () => {
    const p = project();
    const all = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).quotas.insertTask(task(p), 3)),
    );
    expect(admittedOf(all)).toBe(3);
    const refusal = all.find((x) => !x.admitted);
    expect(refusal).toEqual({ admitted: false, quota: 'running_tasks', limit: 3, current: 3 });
    // Jobs share the count; another project does not.
    const job = await a.quotas.insertJob(
      { ...task(p), jobId: randomUUID(), sessionKey: null, steps: [] },
      3,
    );
    expect(job.admitted).toBe(false);
    expect((await b.quotas.insertTask(task(project()), 3)).admitted).toBe(true);
    // A task that ends makes room.
    const first = all.find((x) => x.admitted);
    if (!first?.admitted) throw new Error('nothing admitted');
    await a.skillTasks.finish(first.value.task_id, {
      status: 'succeeded',
      exitCode: 0,
      signal: null,
      stdoutTail: '',
      stderrTail: '',
      stdoutTruncated: false,
      stderrTruncated: false,
      artifacts: [],
      outputErrors: [],
      error: null,
    });
    expect((await b.quotas.insertTask(task(p), 3)).admitted).toBe(true);
    expect(await a.quotas.count('running_tasks', p)).toBe(3);
  });

  it('sandboxes: racing claims admit exactly the limit; a destroyed one frees its place', async () => {
    const p = project();
    const all = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).quotas.claimSandbox(sandbox(p), 2)),
    );
    expect(admittedOf(all)).toBe(2);
    expect(all.find((x) => !x.admitted)).toEqual({
      admitted: false,
      quota: 'sandboxes',
      limit: 2,
      current: 2,
    });
    const first = all.find((x) => x.admitted);
    if (!first?.admitted || !first.value) throw new Error('nothing admitted');
    await b.sandboxes.markDestroyed(first.value.sandbox_id);
    expect((await a.quotas.claimSandbox(sandbox(p), 2)).admitted).toBe(true);
  });

  it('calls: racing slots admit exactly the limit; a redelivery keeps its own; release frees', async () => {
    const p = project();
    const ids = Array.from({ length: 10 }, () => randomUUID());
    const slot = (toolCallId: string) => ({
      projectId: p,
      toolCallId,
      instanceId: 'i',
      ttlMs: 60_000,
    });
    const all = await Promise.all(ids.map((id, i) => (i % 2 ? a : b).quotas.takeCall(slot(id), 4)));
    expect(admittedOf(all)).toBe(4);
    expect(all.find((x) => !x.admitted)).toEqual({
      admitted: false,
      quota: 'calls',
      limit: 4,
      current: 4,
    });
    const held = ids.filter((_, i) => all[i]?.admitted);
    // The same call again (a redelivery) is not counted against itself.
    expect((await a.quotas.takeCall(slot(held[0]!), 4)).admitted).toBe(true);
    expect((await a.quotas.takeCall(slot(randomUUID()), 4)).admitted).toBe(false);
    await b.quotas.releaseCall(p, held[0]!);
    expect((await a.quotas.takeCall(slot(randomUUID()), 4)).admitted).toBe(true);
  });

  it('calls: a slot past its expiry (its instance died) is not counted', async () => {
    const p = project();
    const dead = { projectId: p, toolCallId: randomUUID(), instanceId: 'dead', ttlMs: 1 };
    expect((await a.quotas.takeCall(dead, 1)).admitted).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    const live = { ...dead, toolCallId: randomUUID(), instanceId: 'live', ttlMs: 60_000 };
    expect((await b.quotas.takeCall(live, 1)).admitted).toBe(true);
  });

  it('0 is no quota', async () => {
    const p = project();
    const all = await Promise.all(Array.from({ length: 5 }, () => a.quotas.insertTask(task(p), 0)));
    expect(admittedOf(all)).toBe(5);
    const calls = await Promise.all(
      Array.from({ length: 5 }, () =>
        a.quotas.takeCall({ projectId: p, toolCallId: randomUUID(), instanceId: 'i', ttlMs: 1 }, 0),
      ),
    );
    expect(admittedOf(calls)).toBe(5);
  });
});
