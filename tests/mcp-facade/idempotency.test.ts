// A call re-sent with the same idempotency key in _meta is the same call: one tool_call_id
// (the key hashed with the project), one execution row run once, one result card, whichever
// session or connection the re-send comes on; the same key in another project is another call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
beforeAll(async () => {
  mesh = await startFacadeMesh();
});
afterAll(async () => mesh?.close());

const KEY = 'io.toolmesh/idempotency-key';
const callIdOf = (r: { _meta?: Record<string, unknown> | undefined }) =>
  r._meta?.['io.toolmesh/tool-call-id'] as string;

describe('idempotent re-send', () => {
  it('answers a re-sent call from the same card; the tool ran once', async () => {
    const key = `k-${Date.now()}`;
    const first = await mesh.connect();
    const call = { name: 'builtin__sleep', arguments: { ms: 300 }, _meta: { [KEY]: key } };
    const a = await first.callTool(call);
    // Another connection, as a client that lost its own would open.
    const second = await mesh.connect();
    const b = await second.callTool(call);
    expect(b).toEqual(a);
    const id = callIdOf(a);
    const e = await mesh.api.store.executions.get(mesh.project.id, id);
    expect(e).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, id)).toBe(1);
  });

  it('joins a call still running instead of starting another', async () => {
    const key = `k-running-${Date.now()}`;
    const [c1, c2] = [await mesh.connect(), await mesh.connect()];
    const call = { name: 'builtin__sleep', arguments: { ms: 1_000 }, _meta: { [KEY]: key } };
    const pending = c1.callTool(call);
    await new Promise((r) => setTimeout(r, 200));
    const [a, b] = await Promise.all([pending, c2.callTool(call)]);
    expect(b).toEqual(a);
    const id = callIdOf(a);
    expect((await mesh.api.store.executions.get(mesh.project.id, id))?.attempts).toBe(1);
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, id)).toBe(1);
  });

  it('makes a new call without a key, and keeps keys apart per project', async () => {
    const client = await mesh.connect();
    const a = await client.callTool({ name: 'builtin__echo', arguments: { x: 1 } });
    const b = await client.callTool({ name: 'builtin__echo', arguments: { x: 1 } });
    expect(callIdOf(a)).not.toBe(callIdOf(b));

    const other = await mesh.api.createProject();
    const key = `shared-${Date.now()}`;
    const mine = await client.callTool({
      name: 'builtin__echo',
      arguments: { x: 2 },
      _meta: { [KEY]: key },
    });
    const theirs = await (
      await mesh.connect({ project: other.id, key: other.key })
    ).callTool({ name: 'builtin__echo', arguments: { x: 3 }, _meta: { [KEY]: key } });
    expect(callIdOf(theirs)).not.toBe(callIdOf(mine));
    expect(theirs.structuredContent).toEqual({ x: 3 });
  });

  it('refuses a key already used for another tool', async () => {
    const client = await mesh.connect();
    const key = `k-tool-${Date.now()}`;
    await client.callTool({ name: 'builtin__echo', arguments: {}, _meta: { [KEY]: key } });
    const res = await client.callTool({
      name: 'builtin__sleep',
      arguments: { ms: 1 },
      _meta: { [KEY]: key },
    });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({ error: { code: 'idempotency_conflict' } });
  });
});
