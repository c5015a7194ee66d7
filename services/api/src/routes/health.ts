// Liveness, readiness (NATS and Postgres reachable) and Prometheus metrics; no authentication.
// Readiness names what is down and nothing more: a driver's error text (host names, addresses,
// user names, sometimes a URL) is for the logs, not for anyone who can reach the port.
// Liveness fails only on what a restart cures: a NATS connection that closed for good (its
// reconnect attempts ran out, or the server refused this user) never comes back by itself.
import type { NatsConnection } from '@nats-io/transport-node';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Store } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import type { HttpMetrics } from '../metrics.ts';

const Health = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.string(), z.enum(['ok', 'unavailable'])).optional(),
});

/**
 * Whether the NATS server answers a PING within `timeoutMs`. While the connection is down the
 * PING waits in the client's buffer and its answer would come only after the reconnect (or be
 * rejected then): the bound turns that wait into a "no". isClosed() alone is not enough, since
 * a connection that is reconnecting is not closed, yet nothing it publishes arrives.
 */
async function natsAnswers(nc: NatsConnection, timeoutMs: number): Promise<boolean> {
  if (nc.isClosed()) return false;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    // The rejection (the connection dropped while the PING was out) is handled even after the
    // race was lost to the timer.
    return await Promise.race([
      nc.flush().then(
        () => true,
        () => false,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export const healthRoutes =
  (deps: RouteDeps<Pick<Store, 'pool'>>, metrics: HttpMetrics): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/healthz',
      { schema: { tags: ['health'], security: [], response: { 200: Health, 503: Health } } },
      async (_req, reply) =>
        deps.nc.isClosed()
          ? reply.status(503).send({ status: 'unavailable', checks: { nats: 'unavailable' } })
          : reply.send({ status: 'ok' }),
    );

    app.get(
      '/readyz',
      { schema: { tags: ['health'], security: [], response: { 200: Health, 503: Health } } },
      async (req, reply) => {
        const [postgres, nats] = await Promise.all([
          deps.store.pool.query('SELECT 1').then(
            () => true,
            (err: unknown) => {
              req.log.warn({ err }, 'readiness: postgres unavailable');
              return false;
            },
          ),
          natsAnswers(deps.nc, deps.config.api.readyz_nats_timeout_ms),
        ]);
        if (!nats) {
          req.log.warn(
            { closed: deps.nc.isClosed(), timeout_ms: deps.config.api.readyz_nats_timeout_ms },
            'readiness: nats unavailable',
          );
        }
        const checks: Record<string, 'ok' | 'unavailable'> = {
          postgres: postgres ? 'ok' : 'unavailable',
          nats: nats ? 'ok' : 'unavailable',
        };
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
