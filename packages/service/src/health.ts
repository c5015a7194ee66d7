// Liveness and metrics over HTTP for the processes without an api of their own: GET /healthz
// answers 200 with the service's report while `check` says it is healthy, 503 with the same
// report otherwise; GET /metrics answers the process's Prometheus metrics. Anything else is 404.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { metricsContentType, renderMetrics } from '@toolmesh/telemetry';

export interface HealthReport {
  readonly ok: boolean;
  /** `status` in the body: "ok" when healthy, the service's word for what is wrong otherwise. */
  readonly status?: string;
  readonly body: Record<string, unknown>;
}

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startHealthServer(o: {
  host: string;
  port: number;
  /** The configuration key of the port (`tools.health_port`), named when the port is taken. */
  key: string;
  check(): HealthReport;
}): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/metrics') {
      renderMetrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': metricsContentType });
          res.end(text);
        },
        () => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { code: 'internal_error', message: 'metrics failed' } }));
        },
      );
      return;
    }
    if (req.method !== 'GET' || req.url !== '/healthz') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no such route' } }));
      return;
    }
    const report = o.check();
    const status = report.ok ? 'ok' : (report.status ?? 'unavailable');
    res.writeHead(report.ok ? 200 : 503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status, ...report.body }));
  });
  server.listen(o.port, o.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE') return reject(err);
      const [section = '', name = ''] = o.key.split('.');
      const variable = `CG__${section.toUpperCase()}__${name.toUpperCase()}`;
      reject(
        new Error(
          `port ${o.port} on ${o.host} is already in use: choose another with ${variable} or [${section}] ${name} (0 picks a free one)`,
          { cause: err },
        ),
      );
    });
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
