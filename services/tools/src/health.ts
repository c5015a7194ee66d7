// Liveness over HTTP: GET /healthz answers 200 while the NATS connection is open and the
// service takes calls, 503 otherwise, with the instance and the calls in flight. Anything else
// is 404.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HealthProbe {
  readonly instanceId: string;
  readonly startedAt: Date;
  healthy(): boolean;
  inFlight(): number;
}

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startHealthServer(o: {
  host: string;
  port: number;
  probe: HealthProbe;
}): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/healthz') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no such route' } }));
      return;
    }
    const ok = o.probe.healthy();
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        status: ok ? 'ok' : 'unavailable',
        instance_id: o.probe.instanceId,
        started_at: o.probe.startedAt.toISOString(),
        in_flight: o.probe.inFlight(),
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
