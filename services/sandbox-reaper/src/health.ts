// Liveness over HTTP: GET /healthz answers 200 with the last pass (when, what it did) and the
// totals since start while passes keep coming, 503 once none has ended for three intervals (a
// pass stuck on a hung provider or database). Anything else is 404.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PassSummary } from './reaper.ts';

export interface HealthState {
  readonly instanceId: string;
  readonly startedAt: Date;
  lastPassAt: Date | undefined;
  lastPass: PassSummary | undefined;
  lastError: string | undefined;
  passes: number;
  totals: { taken: number; destroyed: number; failed: number };
}

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startHealthServer(o: {
  host: string;
  port: number;
  intervalMs: number;
  state: HealthState;
}): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/healthz') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no such route' } }));
      return;
    }
    const s = o.state;
    const since = (s.lastPassAt ?? s.startedAt).getTime();
    const ok = Date.now() - since <= 3 * o.intervalMs;
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        status: ok ? 'ok' : 'stale',
        instance_id: s.instanceId,
        started_at: s.startedAt.toISOString(),
        last_pass_at: s.lastPassAt?.toISOString() ?? null,
        last_pass: s.lastPass ?? null,
        last_error: s.lastError ?? null,
        passes: s.passes,
        totals: s.totals,
      }),
    );
  });
  server.listen(o.port, o.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
