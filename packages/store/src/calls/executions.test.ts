// The queued row against a real Postgres, in both orders. The MCP facade writes a call's queued
// row while the call is already on the bus (services/api/src/mcp/calls.ts), so the tool service's
// writes may come first: whichever order, the row ends as the tool service left it.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useMigratedStore } from '../test-support.ts';

const P = 'proj';
const fixture = useMigratedStore([P]);

const queue = (toolCallId: string) =>
  fixture.store.executions.enqueue({
    projectId: P,
    toolCallId,
    channel: 'mcp',
    toolName: 'builtin.echo',
    target: 'builtin',
    instanceId: 'api',
  });

const finish = (toolCallId: string) =>
  fixture.store.results.record({
    projectId: P,
    channel: 'mcp',
    toolCallId,
    toolName: 'builtin.echo',
    target: 'builtin',
    author: 'test',
    instanceId: 'skills-1',
    content: { status: 'succeeded', result: { ok: true }, duration_ms: 1 },
  });

const start = (toolCallId: string) =>
  fixture.store.executions.start({
    projectId: P,
    toolCallId,
    channel: 'mcp',
    toolName: 'builtin.echo',
    target: 'builtin',
    instanceId: 'skills-1',
  });

describe('a queued row', () => {
  it('is closed by the result written after it', async () => {
    const id = randomUUID();
    expect(await queue(id)).toMatchObject({ status: 'queued', instance_id: 'api' });
    const card = await finish(id);
    const row = await fixture.store.executions.get(P, id);
    expect(row).toMatchObject({ status: 'succeeded', card_id: card.cardId });
  });

  it('written after the result leaves the finished row as it is', async () => {
    const id = randomUUID();
    const card = await finish(id);
    expect(await queue(id)).toBeUndefined();
    const row = await fixture.store.executions.get(P, id);
    expect(row).toMatchObject({ status: 'succeeded', card_id: card.cardId, attempts: 1 });
  });

  it('written after the running row leaves it running, its first attempt', async () => {
    const id = randomUUID();
    await start(id);
    expect(await queue(id)).toBeUndefined();
    const row = await fixture.store.executions.get(P, id);
    expect(row).toMatchObject({ status: 'running', instance_id: 'skills-1', attempts: 1 });
  });
});
