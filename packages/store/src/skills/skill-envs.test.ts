// The build claim of skill environments against a real Postgres: of many claims racing for one
// version, exactly one wins; the others read the row as someone else's build; a builder that
// stops renewing its lease is taken over; a failed build is built again by the next claim; a
// ready one is never claimed again; a builder that lost its row cannot finish it.
import { describe, expect, it } from 'vitest';
import type { SkillEnvKey } from './skill-envs.ts';
import { useMigratedStore } from '../test-support.ts';

const fx = useMigratedStore();
let n = 0;
const keyOf = (): SkillEnvKey => ({
  projectId: 'p-envs',
  skillName: `skill-${++n}`,
  version: 'a'.repeat(64),
  provider: 'local',
});

describe('skill environment claims', () => {
  it('lets exactly one of many racing claims build', async () => {
    const key = keyOf();
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        fx.store.skillEnvs.claim(key, ['python'], `i${i}`, 30_000),
      ),
    );
    const won = claims.filter((c) => c !== undefined);
    expect(won).toHaveLength(1);
    expect(won[0]).toMatchObject({ status: 'building', builds: 1, kinds: ['python'] });
    const row = await fx.store.skillEnvs.get(key);
    expect(row?.owner_instance).toBe(won[0]!.owner_instance);
  });

  it('takes over a build whose lease passed, and the old owner cannot finish it', async () => {
    const key = keyOf();
    expect(await fx.store.skillEnvs.claim(key, ['python'], 'dead', 1_000)).toBeDefined();
    expect(await fx.store.skillEnvs.claim(key, ['python'], 'next', 30_000)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const taken = await fx.store.skillEnvs.claim(key, ['python'], 'next', 30_000);
    expect(taken).toMatchObject({ owner_instance: 'next', builds: 2 });
    expect(await fx.store.skillEnvs.renew(key, 'dead', 30_000)).toBe(false);
    const late = await fx.store.skillEnvs.finish(key, 'dead', {
      status: 'ready',
      outputTail: '',
      error: null,
    });
    expect(late).toBeUndefined();
    expect((await fx.store.skillEnvs.get(key))?.status).toBe('building');
  });

  it('builds a failed version again, and never a ready one', async () => {
    const key = keyOf();
    await fx.store.skillEnvs.claim(key, ['node'], 'a', 30_000);
    await fx.store.skillEnvs.finish(key, 'a', {
      status: 'failed',
      outputTail: 'npm ERR! 404',
      error: { exit_code: 1 },
    });
    const again = await fx.store.skillEnvs.claim(key, ['node'], 'b', 30_000);
    expect(again).toMatchObject({ status: 'building', builds: 2, output_tail: '', error: null });
    const done = await fx.store.skillEnvs.finish(key, 'b', {
      status: 'ready',
      outputTail: 'added 1 package',
      error: null,
    });
    expect(done).toMatchObject({ status: 'ready', output_tail: 'added 1 package' });
    expect(await fx.store.skillEnvs.claim(key, ['node'], 'c', 30_000)).toBeUndefined();
    expect(await fx.store.skillEnvs.listForSkill('p-envs', key.skillName)).toHaveLength(1);
    expect(await fx.store.skillEnvs.listForSkill('another-project', key.skillName)).toEqual([]);
  });
});
