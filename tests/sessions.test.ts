// Sandbox sessions through the skills service, for every provider setup: files kept between
// calls of a session, a fresh sandbox per call in `none` mode, `busy` after lock_wait_ms, an
// expired lock taken over, two first calls making one sandbox, idle and hard expiry reaped by
// the sandbox-reaper (but not while a task runs or a live call holds the lock), and a sandbox
// the provider lost re-created once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Destroyers } from '../services/sandbox-reaper/src/providers.ts';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { PROVIDER_SETUPS, sessionRows, setRow, testReaper } from './support/sandbox-providers.ts';

interface CmdResult {
  stdout: string;
  exit_code: number;
}

function caller(mesh: () => SkillsMesh) {
  return (tool: string, args: Record<string, unknown>, agentId?: string) =>
    mesh().client.callTool({
      project: mesh().project.id,
      channel: 'main',
      tool: `skills.${tool}`,
      arguments: args,
      timeoutMs: 60_000,
      ...(agentId ? { agentId } : {}),
    });
}

const LOCK_WAIT_MS = 3_000;

for (const setup of PROVIDER_SETUPS) {
  describe(`sandbox sessions (${setup.name})`, () => {
    let mesh: SkillsMesh;
    let destroyers: Destroyers;
    beforeAll(async () => {
      mesh = await startSkillsMesh({
        ...(await setup.env()),
        CG__SANDBOX__LOCK_WAIT_MS: String(LOCK_WAIT_MS),
      });
      await mesh.startSkills();
      destroyers = await setup.destroyers(mesh.api.config, mesh.api.store);
    }, 60_000);
    afterAll(async () => {
      await mesh?.close();
      await setup.close();
    });
    const call = caller(() => mesh);
    const run = async (args: Record<string, unknown>, agentId?: string) => {
      const r = await call('run_cmd', args, agentId);
      expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
      return r.content.result as CmdResult;
    };
    const rows = (key: string) => sessionRows(mesh.api.store, mesh.project.id, key);
    const reap = () => testReaper(mesh.api.store, destroyers).runPass();

    it('a file written by one call is read by the next call of the session', async () => {
      await run({ command: 'echo kept > note.txt', session_id: 'reuse' });
      const [before] = await rows('-/reuse');
      expect((await run({ command: 'cat note.txt', session_id: 'reuse' })).stdout).toBe('kept\n');
      const after = await rows('-/reuse');
      expect(after).toHaveLength(1);
      expect(after[0]).toMatchObject({ state: 'active', lock_owner: null });
      // The lifetime follows the idle TTL from the last use; the hard expiry never moves.
      expect(after[0]!.hard_expires_at).toEqual(before!.hard_expires_at);
      const ttl = (after[0]!.idle_expires_at!.getTime() - after[0]!.last_used_at.getTime()) / 1000;
      expect(ttl).toBe(mesh.api.config.sandbox.idle_ttl_sec);
    });

    it("an agent's calls without a session id share its default session", async () => {
      await run({ command: 'echo mine > a.txt' }, 'ada');
      expect((await run({ command: 'cat a.txt' }, 'ada')).stdout).toBe('mine\n');
      expect(await rows('ada/default')).toHaveLength(1);
      // Another agent has its own.
      expect((await run({ command: 'cat a.txt; echo rc=$?' }, 'bob')).stdout).toMatch(/rc=1/);
    });

    it('a call with neither agent nor session gets a sandbox of its own, destroyed after', async () => {
      const r = await call('run_cmd', { command: 'true' });
      expect(r.status).toBe('succeeded');
      const [row] = await rows(`call:${r.tool_call_id}`);
      expect(row?.state).toBe('destroyed');
      expect(await setup.exists(mesh.api.config, row!.sandbox_id)).toBe(false);
    });

    it('a session held by a live lock fails `busy` after lock_wait_ms; an expired lock is taken over', async () => {
      await run({ command: 'echo still-here > f.txt', session_id: 'locked' });
      const [row] = await rows('-/locked');
      await setRow(
        mesh.api.store,
        row!.sandbox_id,
        `lock_owner = 'another-call', lock_expires_at = now() + interval '10 minutes'`,
      );
      const busy = await call('run_cmd', { command: 'true', session_id: 'locked' });
      expect(busy.status).toBe('failed');
      expect(busy.content.error).toMatchObject({
        code: 'busy',
        details: { session_key: '-/locked' },
      });
      expect(
        (busy.content.error?.details as { waited_ms: number }).waited_ms,
      ).toBeGreaterThanOrEqual(LOCK_WAIT_MS);
      // The holder died: its lock lapses, and the next call takes the same sandbox over.
      await setRow(
        mesh.api.store,
        row!.sandbox_id,
        `lock_expires_at = now() - interval '1 second'`,
      );
      expect((await run({ command: 'cat f.txt', session_id: 'locked' })).stdout).toBe(
        'still-here\n',
      );
      const [after] = await rows('-/locked');
      expect(after).toMatchObject({ sandbox_id: row!.sandbox_id, lock_owner: null });
    });

    it('a call waits for a session in use and runs once it is released', async () => {
      const first = call('run_cmd', { command: 'sleep 0.3; echo one >> log.txt', session_id: 'q' });
      // The second call arrives while the first holds the lock.
      for (let i = 0; i < 200; i++) {
        const [r] = await rows('-/q');
        if (r?.lock_owner) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const second = await run({ command: 'echo two >> log.txt; cat log.txt', session_id: 'q' });
      expect((await first).status).toBe('succeeded');
      expect(second.stdout).toBe('one\ntwo\n');
    });

    it('two first calls of a session at once make one sandbox', async () => {
      const before = await setup.count(mesh.api.config);
      const [a, b] = await Promise.all([
        run({ command: 'echo $RANDOM >> who.txt; pwd', session_id: 'race' }),
        run({ command: 'echo $RANDOM >> who.txt; pwd', session_id: 'race' }),
      ]);
      expect(a.stdout, JSON.stringify([a, b])).toBe(b.stdout);
      expect(await rows('-/race')).toHaveLength(1);
      expect(await setup.count(mesh.api.config)).toBe(before + 1);
      const lines = (await run({ command: 'wc -l < who.txt', session_id: 'race' })).stdout;
      expect(lines.trim()).toBe('2');
    });

    it('an idle sandbox is reaped; the next call of the session starts in a new, empty one', async () => {
      await run({ command: 'echo old > f.txt', session_id: 'idle' });
      const [row] = await rows('-/idle');
      await setRow(
        mesh.api.store,
        row!.sandbox_id,
        `idle_expires_at = now() - interval '1 second'`,
      );
      const pass = await reap();
      expect(pass.destroyed).toBeGreaterThanOrEqual(1);
      expect((await rows('-/idle'))[0]).toMatchObject({ state: 'destroyed' });
      expect(await setup.exists(mesh.api.config, row!.sandbox_id)).toBe(false);
      const next = await run({ command: 'cat f.txt 2>/dev/null; echo rc=$?', session_id: 'idle' });
      expect(next.stdout).toBe('rc=1\n');
      const all = await rows('-/idle');
      expect(all.map((r) => r.state)).toEqual(['destroyed', 'active']);
    });

    it('a sandbox running an async task is not reaped as idle until the task ends', async () => {
      const started = await call('run_cmd_async', { command: 'sleep 60', session_id: 'busy-task' });
      expect(started.status).toBe('succeeded');
      const taskId = (started.content.result as { task_id: string }).task_id;
      const [row] = await rows('-/busy-task');
      // Unlocked once started: other calls may use the session beside the task.
      expect(row?.lock_owner).toBeNull();
      expect((await run({ command: 'echo beside', session_id: 'busy-task' })).stdout).toBe(
        'beside\n',
      );
      await setRow(
        mesh.api.store,
        row!.sandbox_id,
        `idle_expires_at = now() - interval '1 second'`,
      );
      const pass = await reap();
      expect(pass.skipped).toBeGreaterThanOrEqual(1);
      expect((await rows('-/busy-task'))[0]?.state).toBe('active');
      expect(await setup.exists(mesh.api.config, row!.sandbox_id)).toBe(true);

      const canceled = await call('task_cancel', { task_id: taskId });
      expect(canceled.status).toBe('succeeded');
      // The task's end counts as a use: the idle TTL starts again.
      const [ended] = await rows('-/busy-task');
      expect(ended!.idle_expires_at!.getTime()).toBeGreaterThan(Date.now());
      await setRow(
        mesh.api.store,
        row!.sandbox_id,
        `idle_expires_at = now() - interval '1 second'`,
      );
      await reap();
      expect((await rows('-/busy-task'))[0]?.state).toBe('destroyed');
      expect(await setup.exists(mesh.api.config, row!.sandbox_id)).toBe(false);
    });

    it('a sandbox past its hard expiry whose lock has expired is reaped; a live lock keeps one', async () => {
      await run({ command: 'true', session_id: 'hard' });
      await run({ command: 'true', session_id: 'held' });
      const [hard] = await rows('-/hard');
      const [held] = await rows('-/held');
      await setRow(
        mesh.api.store,
        hard!.sandbox_id,
        `hard_expires_at = now() - interval '1 second', lock_owner = 'crashed-call',
         lock_expires_at = now() - interval '1 second'`,
      );
      await setRow(
        mesh.api.store,
        held!.sandbox_id,
        `hard_expires_at = now() - interval '1 second', idle_expires_at = now() - interval '1 second',
         lock_owner = 'live-call', lock_expires_at = now() + interval '10 minutes'`,
      );
      const pass = await reap();
      expect(pass.hard).toBeGreaterThanOrEqual(1);
      expect((await rows('-/hard'))[0]?.state).toBe('destroyed');
      expect(await setup.exists(mesh.api.config, hard!.sandbox_id)).toBe(false);
      expect((await rows('-/held'))[0]).toMatchObject({ state: 'active', lock_owner: 'live-call' });
      expect(await setup.exists(mesh.api.config, held!.sandbox_id)).toBe(true);
    });

    it('a sandbox the provider lost is marked destroyed and re-created once', async () => {
      await run({ command: 'echo x > f.txt', session_id: 'lost' });
      const [row] = await rows('-/lost');
      await setup.vanish(mesh.api.config, row!.sandbox_id);
      const next = await run({ command: 'cat f.txt 2>/dev/null; echo rc=$?', session_id: 'lost' });
      expect(next.stdout).toBe('rc=1\n');
      expect((await rows('-/lost')).map((r) => r.state)).toEqual(['destroyed', 'active']);
    });
  });

  describe(`reuse_mode = "none" (${setup.name})`, () => {
    let mesh: SkillsMesh;
    beforeAll(async () => {
      mesh = await startSkillsMesh({
        ...(await setup.env()),
        CG__SANDBOX__REUSE_MODE: 'none',
      });
      await mesh.startSkills();
    }, 60_000);
    afterAll(async () => {
      await mesh?.close();
    });
    const call = caller(() => mesh);

    it('every call gets a fresh sandbox, destroyed when it ends, session id or not', async () => {
      const before = await setup.count(mesh.api.config);
      const one = await call('run_cmd', { command: 'echo x > f.txt', session_id: 's' }, 'ada');
      const two = await call(
        'run_cmd',
        { command: 'cat f.txt 2>/dev/null; echo rc=$?', session_id: 's' },
        'ada',
      );
      expect(one.status).toBe('succeeded');
      expect((two.content.result as CmdResult).stdout).toBe('rc=1\n');
      for (const r of [one, two]) {
        const [row] = await sessionRows(mesh.api.store, mesh.project.id, `call:${r.tool_call_id}`);
        expect(row?.state).toBe('destroyed');
      }
      expect(await setup.count(mesh.api.config)).toBe(before);
    });
  });
}
