// A project's live events as Server-Sent Events, for the console and any other watcher: tool
// calls as they are published, results, progress, agent task/step/state events and the
// model's streamed chunks. Every subscription is rooted at the project named in the path (an
// id, so it cannot hold a NATS wildcard), so a key only ever sees its own project's events.
// A stream lives no longer than the api's NATS connection: once that closed for good, nothing
// more would arrive, so the watcher is told by the end of the stream (the console then shows it
// is reconnecting) and new watchers are refused with 503.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Msg, Subscription } from '@nats-io/transport-node';
import type { RouteDeps } from '../deps.ts';
import { ErrorResponse } from '../errors.ts';
import { ProjectParams } from '../schemas.ts';

/** What an event's subject says, after `<root>.v1.<project>.<channel>.`. */
export interface LiveEvent {
  /** e.g. `tool.call`, `tool.result`, `tool.progress`, `agent.task`, `agent.step`, `agent.chunk` */
  kind: string;
  channel: string;
  /** The target of a tool event, the agent of an agent event. */
  name: string;
  body: unknown;
}

export function describe(subject: string): Omit<LiveEvent, 'body'> | undefined {
  // <root>.v1.<project>.<channel>.<cmd|evt|str>.<tool|agent>.<name>.<what>
  const t = subject.split('.');
  const [, , , channel, cls, family, name, what] = t;
  if (!channel || !cls || !family || !name || !what) return undefined;
  if (cls === 'cmd' && family === 'tool') return { kind: 'tool.call', channel, name };
  if (cls === 'evt' && (family === 'tool' || family === 'agent'))
    return { kind: `${family}.${what}`, channel, name };
  if (cls === 'str' && family === 'agent') return { kind: 'agent.chunk', channel, name };
  return undefined;
}

function bodyOf(m: Msg): unknown {
  try {
    return m.json();
  } catch {
    return null;
  }
}

export const eventRoutes =
  ({ nc, auth, config }: RouteDeps): FastifyPluginAsyncZod =>
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
            'agent.chunk; a comment line every 15 s keeps the connection open.',
          params: ProjectParams,
          response: {
            200: z.string().describe('text/event-stream'),
            400: ErrorResponse,
            401: ErrorResponse,
            404: ErrorResponse,
            503: ErrorResponse,
          },
        },
      },
      (req, reply) => {
        const { project } = req.params;
        if (nc.isClosed()) {
          void reply.status(503).send({
            error: { code: 'unavailable', message: 'the message bus is unavailable; retry later' },
          });
          return;
        }
        reply.hijack();
        const res = reply.raw;
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
        });
        res.write(': connected\n\n');
        const forward = (_err: Error | null, m: Msg) => {
          const d = describe(m.subject);
          if (!d) return;
          res.write(`data: ${JSON.stringify({ ...d, body: bodyOf(m) })}\n\n`);
        };
        const subs: Subscription[] = [
          `${root}.v1.${project}.*.cmd.tool.>`,
          `${root}.v1.${project}.*.evt.tool.>`,
          `${root}.v1.${project}.*.evt.agent.>`,
          `${root}.v1.${project}.*.str.agent.>`,
        ].map((s) => nc.subscribe(s, { callback: forward }));
        const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
        const stop = () => {
          clearInterval(ping);
          for (const s of subs) s.unsubscribe();
          open.delete(end);
        };
        const end = () => {
          stop();
          res.end();
        };
        open.add(end);
        req.raw.on('close', stop);
        res.on('error', stop);
      },
    );
  };
