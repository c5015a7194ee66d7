// Regression guard: a Postgres outage of a few seconds delays calls but loses none. Calls that
// arrive while the database is down are nak'ed and retried; each still ends with one card.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startLocalPostgres, type LocalPostgres } from '@toolmesh/testing';
import { startMesh, type Mesh } from './support/mesh.ts';
import { collectResults, type ResultCollector } from './support/results.ts';

const scope = { project: 'proj-pg', channel: 'main' };
let pg: LocalPostgres;
let mesh: Mesh;
let results: ResultCollector;

beforeAll(async () => {
  pg = await startLocalPostgres();
  mesh = await startMesh(
    {
      CG__TOOLS__RETRY_BASE_MS: '100',
      CG__TOOLS__RETRY_MAX_MS: '1000',
      CG__POSTGRES__CONNECT_TIMEOUT_MS: '1000',
    },
    { databaseUrl: pg.url },
  );
  await mesh.startService();
  results = await collectResults(mesh.nc, mesh.client.subjects, scope);
}, 120_000);
afterAll(async () => {
  results?.close();
  await mesh?.close();
  await pg?.close();
});

it('calls made while Postgres is stopped are retried, not lost', { timeout: 120_000 }, async () => {
  const before = await mesh.client.callTool({
    ...scope,
    tool: 'builtin.echo',
    arguments: { phase: 'before' },
  });
  expect(before.status).toBe('succeeded');

  // A call in flight across the outage: it starts now and finishes while Postgres is down, so
  // its card must wait for the database instead of being dropped or run twice.
  const slow = await mesh.client.publishToolCall({
    ...scope,
    tool: 'builtin.sleep',
    arguments: { ms: 1_500 },
  });
  while ((await mesh.store.executions.get(scope.project, slow.toolCallId))?.status !== 'running') {
    await new Promise((r) => setTimeout(r, 20));
  }
  await pg.stop();
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) {
    const sent = await mesh.client.publishToolCall({
      ...scope,
      tool: 'builtin.echo',
      arguments: { i },
    });
    ids.push(sent.toolCallId);
  }
  await new Promise((r) => setTimeout(r, 3_000));
  expect(results.events.filter((e) => ids.includes(e.tool_call_id))).toEqual([]); // nothing could be written
  await pg.start();

  const byId = await results.waitForAll([...ids, slow.toolCallId], 60_000);
  for (const [i, id] of ids.entries()) {
    const ev = byId.get(id)![0]!;
    expect(ev.status).toBe('succeeded');
    expect(ev.content.result).toEqual({ i });
    expect(await mesh.store.cards.countToolResults(scope.project, id)).toBe(1);
  }
  expect(byId.get(slow.toolCallId)![0]!.status).toBe('succeeded');
  const slowExec = await mesh.store.executions.get(scope.project, slow.toolCallId);
  expect(slowExec?.attempts).toBe(1); // ran once: the outage delayed its card, not its effect
});
