// A real local HTTP server standing in for the upstream of HTTP tools: it echoes what it got
// (method, path, query, headers, body), answers chosen statuses, fails a given number of times
// before it succeeds, hangs until the client goes away (and records that), and sends big bodies.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface Upstream {
  readonly port: number;
  readonly url: string;
  /** Every request, in arrival order. */
  readonly seen: SeenRequest[];
  /** Requests to /hang whose client went away before an answer. */
  aborted(): number;
  /** Resolves once /hang has been asked `n` times in total. */
  hanging(n: number): Promise<void>;
  hits(pathPrefix: string): number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startUpstream(): Promise<Upstream> {
  const seen: SeenRequest[] = [];
  const failuresLeft = new Map<string, number>();
  let aborted = 0;
  let hangs = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://upstream');
      const query: Record<string, string | string[]> = {};
      for (const k of new Set(url.searchParams.keys())) {
        const all = url.searchParams.getAll(k);
        query[k] = all.length === 1 ? all[0]! : all;
      }
      const body = await readBody(req);
      const r: SeenRequest = {
        method: req.method ?? '',
        path: url.pathname,
        query,
        headers: req.headers,
        body,
      };
      seen.push(r);
      const json = (status: number, v: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(v));
      };
      const [, head = '', arg] = url.pathname.split('/');
      switch (head) {
        case 'echo':
          return json(200, r);
        case 'text':
          res.writeHead(200, { 'content-type': 'text/plain' });
          return res.end(`plain text for ${url.pathname}`);
        case 'status':
          res.writeHead(Number(arg), { 'content-type': 'text/plain' });
          return res.end(
            `upstream says no (${arg}); you sent ${JSON.stringify(req.headers['authorization'] ?? '')} ${'x'.repeat(5000)}`,
          );
        case 'flaky': {
          // /flaky/<key>?fail=N&code=429&retry_after=1
          const key = arg ?? '';
          const left = failuresLeft.get(key) ?? Number(url.searchParams.get('fail') ?? 1);
          if (left > 0) {
            failuresLeft.set(key, left - 1);
            const headers: Record<string, string> = {};
            const ra = url.searchParams.get('retry_after');
            if (ra) headers['retry-after'] = ra;
            return json(
              Number(url.searchParams.get('code') ?? 429),
              { error: 'try later' },
              headers,
            );
          }
          failuresLeft.set(key, 0);
          return json(200, { ok: true, key });
        }
        case 'hang': {
          hangs++;
          for (const w of waiters.filter((x) => hangs >= x.n)) w.resolve();
          res.on('close', () => {
            if (!res.writableEnded) aborted++;
          });
          return; // never answers
        }
        case 'big':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ data: 'y'.repeat(Number(arg ?? 100_000)) }));
        default:
          return json(404, { error: 'no such path' });
      }
    })();
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    seen,
    aborted: () => aborted,
    hanging: (n) =>
      hangs >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
    hits: (prefix) => seen.filter((s) => s.path.startsWith(prefix)).length,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
