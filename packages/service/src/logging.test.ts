// What a person reads in a service's log: a Postgres outage is told once (with no stack trace)
// and its end once, however many loops and calls failed meanwhile.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { createPool } from '@toolmesh/store';
import { startLocalPostgres, type LocalPostgres } from '@toolmesh/testing';
import { createServiceLogger } from './run.ts';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, stream };
}

let pg: LocalPostgres;
beforeAll(async () => {
  pg = await startLocalPostgres();
}, 120_000);
afterAll(async () => {
  await pg?.close();
});

describe('a Postgres outage in the log', () => {
  it('is one warning without a stack trace, and one "recovered" line', async () => {
    const out = capture();
    const logger = createServiceLogger('test', loadConfig({ source: '', env: {} }), out.stream);
    const pool = createPool({
      url: pg.url,
      max: 2,
      statementTimeoutMs: 0,
      connectTimeoutMs: 1_000,
      logger,
    });
    const tick = logger.child({ component: 'scheduler' });
    try {
      await pool.query('SELECT 1');
      await pg.stop();
      // Each loop of a service logs its own failure, every tick: 12 of them here.
      for (let i = 0; i < 12; i++) {
        await pool.query('SELECT 1').catch((err: unknown) => {
          tick.warn({ err }, 'tick failed');
        });
      }
      await pg.start();
      await pool.query('SELECT 1');
    } finally {
      await pool.end();
    }
    const parsed = out.lines.map((l) => JSON.parse(l) as { level: number; msg: string });
    const loud = parsed.filter((l) => l.level >= 40);
    expect(loud.map((l) => l.msg)).toEqual([expect.stringMatching(/^Postgres unreachable/)]);
    expect(JSON.stringify(loud)).not.toContain('"stack"');
    const recovered = parsed.filter((l) => /^Postgres recovered/.test(l.msg));
    expect(recovered).toEqual([
      expect.objectContaining({ level: 30, failed_attempts: expect.any(Number) }),
    ]);
  }, 120_000);
});
