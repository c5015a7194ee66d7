// `[otel] endpoint` set: a service exports its spans over OTLP/HTTP to `<endpoint>/v1/traces`.
// A small collector in this test accepts the export; the skills service runs as a real child
// process; the caller's traceparent (given to the SDK explicitly) is the parent of the spans the
// service sends.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from '@toolmesh/config';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startMesh, type Mesh } from './support/mesh.ts';
import { until } from './support/procs.ts';

/** The parts of an OTLP/JSON export this test reads. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}
interface OtlpBody {
  resourceSpans?: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}
interface Export {
  path: string;
  contentType: string | undefined;
  body: OtlpBody;
}

let mesh: Mesh;
let collector: Server;
let url = '';
const exports: Export[] = [];

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

beforeAll(async () => {
  collector = createServer((req, res) => {
    void readBody(req).then((text) => {
      exports.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'],
        body: JSON.parse(text) as OtlpBody,
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  collector.listen(0, '127.0.0.1');
  await new Promise((r) => collector.once('listening', r));
  url = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  mesh = await startMesh();
}, 60_000);

afterAll(async () => {
  await mesh?.close();
  await new Promise((r) => collector?.close(r));
});

const attr = (attrs: { key: string; value: { stringValue?: string } }[], key: string) =>
  attrs.find((a) => a.key === key)?.value.stringValue;

it('exports the spans of a call to the OTLP endpoint, under the caller’s trace', async () => {
  const child = await mesh.spawnService({ CG__OTEL__ENDPOINT: url });
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpan = '00f067aa0ba902b7';
  const results = await Promise.all(
    Array.from({ length: 4 }, (_, i) =>
      mesh.client.callTool({
        project: 'otel',
        channel: 'main',
        tool: 'builtin.echo',
        arguments: { i },
        traceparent: `00-${traceId}-${callerSpan}-01`,
      }),
    ),
  );
  expect(results.map((r) => r.status)).toEqual(Array(4).fill('succeeded'));
  // Stopping flushes the batch.
  child.kill('SIGTERM');
  const spans = await until(() => {
    const all = exports.flatMap((e) =>
      (e.body.resourceSpans ?? []).flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) =>
          ss.spans.map((s) => ({ ...s, service: attr(rs.resource.attributes, 'service.name') })),
        ),
      ),
    );
    return Promise.resolve(all.some((s) => s.name === 'card write') ? all : undefined);
  });
  expect(exports.every((e) => e.path === '/v1/traces')).toBe(true);
  expect(exports[0]!.contentType).toMatch(/^application\/json/);
  expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['skills']));
  // Each delivery is a child of the caller's span, and its hops are children of the delivery.
  const deliveries = spans.filter((s) => s.name === 'cmd.tool process');
  expect(deliveries).toHaveLength(4);
  for (const d of deliveries) {
    expect(d.traceId).toBe(traceId);
    expect(d.parentSpanId).toBe(callerSpan);
  }
  const ids = new Set(deliveries.map((d) => d.spanId));
  for (const hop of ['handler builtin.echo', 'card write']) {
    const of = spans.filter((s) => s.name === hop);
    expect(of, hop).toHaveLength(deliveries.length);
    for (const s of of) expect(ids.has(s.parentSpanId ?? ''), hop).toBe(true);
  }
  // builtin.echo is a pure tool: its calls take no lease (the skills tools' traces show theirs,
  // telemetry-trace.test.ts).
  expect(spans.filter((s) => s.name === 'lease')).toEqual([]);
  await until(() => Promise.resolve(child.exitCode !== null ? true : undefined));
  expect(child.exitCode).toBe(0);
}, 120_000);

it('refuses an endpoint that is not an http(s) URL, naming the key', () => {
  expect(() => loadConfig({ source: '', env: { CG__OTEL__ENDPOINT: 'collector:4318' } })).toThrow(
    ConfigError,
  );
  expect(() => loadConfig({ source: '', env: { CG__OTEL__ENDPOINT: 'collector:4318' } })).toThrow(
    /otel\.endpoint/,
  );
  expect(loadConfig({ source: '', env: {} }).otel).toEqual({ endpoint: '', sample_ratio: 1 });
});
