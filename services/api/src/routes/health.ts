// Liveness, readiness (NATS and Postgres reachable) and Prometheus metrics; no authentication.
// Readiness names what is down and nothing more: a driver's error text (host names, addresses,
// user names, sometimes a URL) is for the logs, not for anyone who can reach the port.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteDeps } from '../deps.ts';
import type { HttpMetrics } from '../metrics.ts';

const Health = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.string(), z.enum(['ok', 'unavailable'])).optional(),
});

export const healthRoutes =
  (deps: RouteDeps, metrics: HttpMetrics): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/healthz',
      { schema: { tags: ['health'], security: [], response: { 200: Health } } },
      () => ({ status: 'ok' as const }),
    );

    app.get(
      '/readyz',
      { schema: { tags: ['health'], security: [], response: { 200: Health, 503: Health } } },
      async (req, reply) => {
        const checks: Record<string, 'ok' | 'unavailable'> = {};
        try {
          await deps.store.pool.query('SELECT 1');
          checks['postgres'] = 'ok';
        } catch (err) {
          req.log.warn({ err }, 'readiness: postgres unavailable');
          checks['postgres'] = 'unavailable';
        }
        try {
          if (deps.nc.isClosed()) throw new Error('connection closed');
          await deps.nc.flush();
          checks['nats'] = 'ok';
        } catch (err) {
          req.log.warn({ err }, 'readiness: nats unavailable');
          checks['nats'] = 'unavailable';
        }
        const ok = Object.values(checks).every((v) => v === 'ok');
        return reply.status(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', checks });
      },
    );

    app.get(
      '/metrics',
      { schema: { tags: ['health'], security: [], hide: true } },
      async (_req, reply) => {
        return reply.type(metrics.contentType).send(await metrics.render());
      },
    );
  };
