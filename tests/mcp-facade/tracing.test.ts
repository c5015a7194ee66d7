// Tracing through the facade: `_meta.traceparent` on a tools/call continues the caller's trace.
// The call published on the bus carries that traceparent header (docs/protocol.md section 5) on
// both revisions; a call without one carries none of the caller's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Msg, Subscription } from '@nats-io/transport-node';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { createSubjects } from '@toolmesh/protocol';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let sub: Subscription;
const published: Msg[] = [];
beforeAll(async () => {
  mesh = await startFacadeMesh();
  const subjects = createSubjects(mesh.api.config.nats.subject_root);
  // Core NATS sees what the facade publishes to the command stream.
  sub = mesh.nc.subscribe(
    subjects.toolCall({
      project: mesh.project.id,
      channel: 'mcp',
      target: 'builtin',
      tool: 'echo',
    }),
    { callback: (_err, msg) => void published.push(msg) },
  );
  await mesh.nc.flush();
});
afterAll(async () => {
  sub?.unsubscribe();
  await mesh?.close();
});

const traceId = () =>
  [...crypto.getRandomValues(new Uint8Array(16))]
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('');
const traceparent = (id: string) => `00-${id}-00f067aa0ba902b7-01`;

/** The headers of the call published for a tool_call_id. */
async function publishedHeaders(toolCallId: string) {
  let msg: Msg | undefined;
  await expect
    .poll(() => (msg = published.find((m) => m.string().includes(toolCallId))))
    .toBeDefined();
  return msg!.headers;
}

describe('_meta.traceparent', () => {
  it('continues the caller’s trace on the bus (2025-era client)', async () => {
    const client = await mesh.connect();
    const id = traceId();
    const res = await client.callTool({
      name: 'builtin__echo',
      arguments: { traced: 1 },
      _meta: { traceparent: traceparent(id) },
    });
    const callId = res._meta?.['io.toolmesh/tool-call-id'] as string;
    const headers = await publishedHeaders(callId);
    expect(headers?.get('traceparent')).toBe(traceparent(id));
    expect(headers?.get('traceparent').split('-')[1]).toBe(id);
  });

  it('continues the caller’s trace on the bus (2026-07-28 client)', async () => {
    const client = new ModernClient(
      { name: 'trace-test', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(mesh.mcpUrl(mesh.project.id), {
        requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
      }),
    );
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const id = traceId();
      const res = await client.callTool({
        name: 'builtin__echo',
        arguments: { traced: 2 },
        _meta: { traceparent: traceparent(id) },
      });
      const headers = await publishedHeaders(res._meta?.['io.toolmesh/tool-call-id'] as string);
      expect(headers?.get('traceparent')).toBe(traceparent(id));
    } finally {
      await client.close();
    }
  });

  it('a call without one carries no caller trace', async () => {
    const client = await mesh.connect();
    const res = await client.callTool({ name: 'builtin__echo', arguments: { traced: 3 } });
    const headers = await publishedHeaders(res._meta?.['io.toolmesh/tool-call-id'] as string);
    expect(headers?.get('traceparent') ?? '').toBe('');
  });
});
