// The operator console's static files (packages/console, built at install) at /console, under a
// Content-Security-Policy that lets the page load only its own scripts, styles and images and
// talk only to this api: nothing from another origin, no inline script, no framing.
import type { FastifyPluginAsync } from 'fastify';
import fastifyStatic from '@fastify/static';
import { CONSOLE_DIST, consoleBuilt } from '@toolmesh/console';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const consoleRoutes =
  (dir: string = CONSOLE_DIST): FastifyPluginAsync =>
  async (app) => {
    app.addHook('onSend', async (_req, reply) => {
      reply.header('content-security-policy', CONSOLE_CSP);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
    });
    if (!consoleBuilt(dir)) {
      app.get('/console', { schema: { hide: true } }, (_req, reply) =>
        reply.status(503).send({
          error: {
            code: 'unavailable',
            message: 'the console is not built: run `pnpm install` (or `pnpm build:console`)',
          },
        }),
      );
      return;
    }
    await app.register(fastifyStatic, {
      root: dir,
      prefix: '/console/',
      redirect: true,
      index: ['index.html'],
      schemaHide: true,
    });
    app.get('/console', { schema: { hide: true } }, (_req, reply) => reply.redirect('/console/'));
  };
