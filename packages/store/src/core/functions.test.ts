// The migrations' plpgsql functions stay short enough to read at a glance: logic a reader must
// find by name in SQL is kept to parts of at most ~50 lines, each named for what it does. Read
// from the migrated database, so it is every function's latest definition.
import { describe, expect, it } from 'vitest';
import { useMigratedStore } from '../test-support.ts';

const fixture = useMigratedStore();

describe('plpgsql functions', () => {
  it('no function body is over 50 lines', async () => {
    const { rows } = await fixture.pool.query<{ name: string; lines: number }>(
      `SELECT n.nspname || '.' || p.proname AS name,
              array_length(string_to_array(btrim(p.prosrc, E'\\n'), E'\\n'), 1) AS lines
       FROM pg_proc p
       JOIN pg_language l ON l.oid = p.prolang
       JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE l.lanname = 'plpgsql' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
       ORDER BY name`,
    );
    expect(rows.map((r) => r.name)).toContain('state.apply_result');
    expect(rows.filter((r) => r.lines > 50)).toEqual([]);
  });
});
