// Liveness, readiness (NATS and Postgres reachable) and Prometheus metrics; no authentication.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteDeps } from '../deps.ts';
import type { HttpMetrics } from '../metrics.ts';

const Health = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.string(), z.string()).optional(),
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
      async (_req, reply) => {
        const checks: Record<string, string> = {};
        try {
          await deps.store.pool.query('SELECT 1');
          checks['postgres'] = 'ok';
        } catch (err) {
          checks['postgres'] = (err as Error).message;
        }
        try {
          if (deps.nc.isClosed()) throw new Error('connection closed');
          await deps.nc.flush();
          checks['nats'] = 'ok';
        } catch (err) {
          checks['nats'] = (err as Error).message;
        }
        const ok = Object.values(checks).every((v) => v === 'ok');
        return reply.status(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', checks });
      },
    );

    app.get(
      '/metrics',
      { schema: { tags: ['health'], security: [], hide: true } },
      async (_req, reply) => {
        return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
      },
    );
  };
