// Callers on the bus (authenticated nats-server, a project credential issued by the api): a call
// published with the SDK or the CLI records the credential it named (CG-Credential-Id) and its
// context on the execution. The name is what the publisher declares (NATS does not tell a
// consumer who published); it is kept only when it is a credential of the call's own project,
// so another project's credential id is never recorded, and a malformed one fails the call.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, credentialIdOf } from '@toolmesh/client';
import { startBusMesh, type BusMesh } from './support/bus-mesh.ts';
import { runToolmesh } from './support/cli.ts';

let bus: BusMesh;

beforeAll(async () => {
  bus = await startBusMesh();
}, 120_000);
afterAll(async () => {
  await bus?.close();
});

const execution = async (id: string): Promise<Record<string, unknown>> => {
  const res = await bus.mesh.api.request('GET', `/v1/projects/${bus.a.id}/executions/${id}`, {
    key: bus.a.key,
  });
  expect(res.status, res.raw).toBe(200);
  return res.body.execution as Record<string, unknown>;
};

describe('a bus credential on the execution', () => {
  it('the SDK names its credential: the execution records it with the context', async () => {
    const credentialId = await credentialIdOf(bus.tenant.cred.creds);
    expect(credentialId).toBe(bus.tenant.cred.id);
    const client = createClient({ nc: bus.tenant.nc, root: bus.root, credentialId });
    try {
      const session = `s-${randomUUID()}`;
      const r = await client.callTool(
        {
          project: bus.a.id,
          channel: 'main',
          tool: 'builtin.echo',
          arguments: { text: 'hi' },
          context: { session_id: session, metadata: { app: 'sdk' } },
        },
        { waitMs: 30_000 },
      );
      expect(r.status, JSON.stringify(r)).toBe('succeeded');
      const e = await execution(r.tool_call_id);
      expect(e).toMatchObject({
        credential_id: bus.tenant.cred.id,
        key_id: null,
        context: { session_id: session, metadata: { app: 'sdk' } },
      });
      // Neither the seed nor the JWT is anywhere near the execution.
      expect(JSON.stringify(e)).not.toContain(bus.tenant.cred.seed);
    } finally {
      await client.close();
    }
  });

  it("another project's credential id is not recorded; a malformed one fails the call", async () => {
    const other = await bus.issue(bus.b.id, bus.b.key, 'b-publisher');
    const forged = createClient({ nc: bus.tenant.nc, root: bus.root, credentialId: other.id });
    const garbage = createClient({ nc: bus.tenant.nc, root: bus.root, credentialId: 'not-a-uuid' });
    try {
      const call = { project: bus.a.id, channel: 'main', tool: 'builtin.echo', arguments: {} };
      const r = await forged.callTool(call, { waitMs: 30_000 });
      expect(r.status).toBe('succeeded');
      expect((await execution(r.tool_call_id)).credential_id).toBeNull();
      const bad = await garbage.callTool(call, { waitMs: 30_000 });
      expect(bad.status).toBe('failed');
      expect(bad.content.error).toMatchObject({ code: 'invalid_message' });
      expect(bad.content.error?.message).toContain('CG-Credential-Id');
    } finally {
      await forged.close();
      await garbage.close();
    }
  });

  it('the CLI with TOOLMESH_BUS_CREDS records its credential and --session/--metadata', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolmesh-creds-'));
    try {
      const file = join(dir, 'a.creds');
      await writeFile(file, bus.tenant.cred.creds, { mode: 0o600 });
      const env = {
        NATS_URL: bus.nats.url,
        TOOLMESH_SUBJECT_ROOT: bus.root,
        TOOLMESH_BUS_CREDS: file,
        TOOLMESH_PROJECT: bus.a.id,
      };
      const session = `cli-${randomUUID()}`;
      const ok = await runToolmesh(
        ['call', 'builtin.echo', '--session', session, '--metadata', '{"run":7}', '--json'],
        env,
      );
      expect(ok.code, ok.stderr).toBe(0);
      const result = JSON.parse(ok.stdout) as { tool_call_id: string; status: string };
      expect(result.status).toBe('succeeded');
      expect(await execution(result.tool_call_id)).toMatchObject({
        credential_id: bus.tenant.cred.id,
        context: { session_id: session, metadata: { run: 7 } },
      });
      const history = await bus.mesh.api.request(
        'GET',
        `/v1/projects/${bus.a.id}/executions?session_id=${session}`,
        { key: bus.a.key },
      );
      expect(history.body.executions.map((e: { id: string }) => e.id)).toEqual([
        result.tool_call_id,
      ]);
      // The CLI's history takes the same filter, over the api.
      const address = await bus.mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
      const listed = await runToolmesh(['executions', 'list', '--session', session, '--json'], {
        TOOLMESH_API_URL: address,
        TOOLMESH_API_KEY: bus.a.key,
        TOOLMESH_PROJECT: bus.a.id,
      });
      expect(listed.code, listed.stderr).toBe(0);
      const page = JSON.parse(listed.stdout) as { executions: { id: string }[]; total: number };
      expect(page.executions.map((e) => e.id)).toEqual([result.tool_call_id]);
      expect(page.total).toBe(1);
      // A bad context is a usage error before anything is sent.
      const bad = await runToolmesh(['call', 'builtin.echo', '--metadata', '[1]'], env);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--metadata');
      const long = await runToolmesh(['call', 'builtin.echo', '--session', 'x'.repeat(200)], env);
      expect(long.code).toBe(2);
      expect(long.stderr).toContain('--session');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // Six CLI processes: generous, since each starts a Node of its own on a busy machine.
  }, 180_000);
});
