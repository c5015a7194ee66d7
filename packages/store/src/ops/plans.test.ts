// The hottest statements keep the plan Postgres cached for them: a statement planned anew at
// every execution costs its planning each time (measured: 0.6 ms for the result-card batch
// beside 0.56 ms of execution). Postgres plans a prepared statement for its first five runs,
// then keeps a generic plan unless those looked cheaper; a parameter whose size the planner can
// see (a text[] of one element) made them look cheaper every time.
import { describe, expect, it } from 'vitest';
import { useMigratedStore } from '../test-support.ts';

const P = 'proj';
// One connection: the statements and the look at its prepared statements share the session.
const fixture = useMigratedStore([P], { poolMax: 1 });

const plans = async (name: string) => {
  const { rows } = await fixture.store.pool.query<{ generic_plans: string; custom_plans: string }>(
    'SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1',
    [name],
  );
  expect(rows).toHaveLength(1);
  return { generic: Number(rows[0]!.generic_plans), custom: Number(rows[0]!.custom_plans) };
};

describe('cached plans', () => {
  it('the result-card batch and the start of call deadlines are not planned at every run', async () => {
    for (let i = 0; i < 12; i++) {
      const recorded = await fixture.store.results.record({
        projectId: P,
        channel: 'main',
        toolCallId: `call-${i}`,
        toolName: 'builtin.echo',
        target: 'builtin',
        author: 'test',
        instanceId: 'test',
        content: { status: 'succeeded', result: { i }, duration_ms: 1 },
      });
      expect(recorded.inserted).toBe(true);
      await fixture.store.turns.markPublished(P, [`call-${i}`, `other-${i}`]);
    }
    for (const name of ['results_record', 'turns_mark_published']) {
      const { generic, custom } = await plans(name);
      expect({ name, custom: custom <= 5 }).toEqual({ name, custom: true });
      expect(generic + custom).toBe(12);
    }
  });
});
