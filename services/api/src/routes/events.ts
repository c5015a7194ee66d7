// A project's live events as Server-Sent Events, for the console and any other watcher (what
// the feed carries and how it reads it: live-feed.ts). A feed the server cuts short (a refused
// subscription, a lost consumer) ends only its own response; the watcher connects again. A
// stream lives no longer than the api's NATS connection: once that closed for good nothing more
// would arrive, so the watcher is told by the end of the stream (the console then shows it is
// reconnecting) and new watchers are refused with 503.
import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse } from '../errors.ts';
import { openLiveFeed, type LiveFeed } from '../live-feed.ts';
import { ProjectParams } from '../schemas.ts';
import { holdStream } from '../slots.ts';

export const eventRoutes =
  ({
    nc,
    auth,
    config,
    logger,
    streams,
    projectStreams,
  }: Omit<RouteDeps, 'store'>): FastifyPluginAsyncZod =>
  async (app) => {
    const root = config.nats.subject_root;
    // Open streams end when the api closes: a hijacked response is never idle, so the server
    // would otherwise wait on every watcher before it could stop.
    const open = new Set<() => void>();
    app.addHook('preClose', async () => {
      for (const end of [...open]) end();
    });
    void nc.closed().then(() => {
      for (const end of [...open]) end();
    });
    app.get(
      '/projects/:project/events',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['events'],
          summary: "The project's live events (Server-Sent Events)",
          description:
            'text/event-stream: one `data:` line of JSON {kind, channel, name, body} per event, ' +
            'kinds tool.call, tool.result, tool.progress, agent.task, agent.step, agent.state, ' +
            'agent.chunk; a comment line every 15 s keeps the connection open. `: connected` ' +
            'comes once the feed is live: whatever is published after it is in the stream. The ' +
            'stream may end on its own (the bus dropped the feed): connect again. Streams are ' +
            'counted per project ([api] sse_max_streams_per_project: 429 stream_limit beyond) and ' +
            'per instance ([api] sse_max_streams: 503 stream_capacity).',
          params: ProjectParams,
          response: {
            200: z.string().describe('text/event-stream'),
            400: ErrorResponse,
            401: ErrorResponse,
            404: ErrorResponse,
            429: ErrorResponse,
            503: ErrorResponse,
          },
        },
      },
      async (req, reply) => {
        const { project } = req.params;
        if (nc.isClosed())
          throw new ApiError('unavailable', 'the message bus is unavailable; retry later');
        holdStream(streams, project, reply);
        const log = logger.child({ component: 'live-feed', project });
        // Set once the response is open. Events that arrive before wait in `early` (the open's
        // last round trip), and an end before then is the open's failure, not the response's.
        const out: { res?: ServerResponse; finish?: () => void } = {};
        const early: string[] = [];
        const send = (line: string) => (out.res ? out.res.write(line) : early.push(line));
        let feed: LiveFeed;
        try {
          // The feed follows the project's command stream, which must exist.
          await projectStreams.ensure(project);
          feed = await openLiveFeed({
            nc,
            root,
            project,
            log,
            onEvent: (e) => send(`data: ${JSON.stringify(e)}\n\n`),
            onEnd: (err) => {
              log.warn({ err }, 'live feed ended by the bus; closing its response');
              out.finish?.();
            },
          });
        } catch (err) {
          log.error({ err }, 'live feed could not open');
          throw new ApiError('unavailable', 'the live feed is unavailable; retry later');
        }
        reply.hijack();
        const res = reply.raw;
        const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
        const stop = () => {
          clearInterval(ping);
          open.delete(finish);
          feed
            .close()
            .catch((err: unknown) => log.warn({ err }, 'live feed did not close cleanly'));
        };
        const finish = () => {
          stop();
          res.end();
        };
        out.finish = finish;
        open.add(finish);
        req.raw.on('close', stop);
        res.on('error', stop);
        // The watcher may have gone while the feed opened: no close event will come.
        if (req.raw.destroyed || res.destroyed) return stop();
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
        });
        res.write(': connected\n\n');
        for (const line of early.splice(0)) res.write(line);
        out.res = res;
      },
    );
  };
