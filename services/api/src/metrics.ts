// Prometheus metrics of the api process: request counts and latency per route, served at
// /metrics beside the mesh's families and the default process metrics (@toolmesh/telemetry).
import { Counter, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics, metricsContentType, renderMetrics } from '@toolmesh/telemetry';

export function createHttpMetrics() {
  collectProcessMetrics();
  const registry = new Registry();
  const requests = new Counter({
    name: 'toolmesh_api_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'toolmesh_api_request_duration_seconds',
    help: 'HTTP request duration by method and route',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 300],
    registers: [registry],
  });
  return {
    registry,
    contentType: metricsContentType,
    /** The text exposition: this api's HTTP families, then the process's mesh families. */
    render: () => renderMetrics([registry]),
    observe(method: string, route: string, status: number, seconds: number) {
      requests.inc({ method, route, status: String(status) });
      duration.observe({ method, route }, seconds);
    },
  };
}
export type HttpMetrics = ReturnType<typeof createHttpMetrics>;
