// Fastify to the SDKs' web-standard transports and back: both revisions are served by
// fetch-shaped handlers (Request in, Response out), the 2025 sessions by the 1.x
// WebStandardStreamableHTTPServerTransport and the 2026-07-28 requests by the 2.x
// createMcpHandler. Here too: the priming event a 2025 session's GET stream opens with, which
// the SDK writes on POST streams only.
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { exemptFromIdleTimeout } from '../connection-guard.ts';

/** The request as a fetch-shaped handler reads it (the body goes as parsedBody). */
export function toWebRequest(req: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, {
    method: req.method,
    headers,
  });
}

/** Writes a web Response (JSON or an SSE stream) to the raw reply; a gone client ends it. */
export async function sendWebResponse(reply: FastifyReply, res: Response): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(res.status, Object.fromEntries(res.headers));
  if (!res.body) {
    raw.end();
    return;
  }
  // A POST's stream lasts as long as its call: no idle cut while it is open.
  if (isEventStream(res)) exemptFromIdleTimeout(raw);
  const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
  raw.once('close', () => body.destroy());
  await new Promise<void>((resolve) => {
    body.once('end', resolve);
    body.once('error', () => resolve());
    body.once('close', resolve);
    body.pipe(raw);
  });
}

export const isEventStream = (res: Response): boolean =>
  res.ok &&
  res.body !== null &&
  (res.headers.get('content-type') ?? '').startsWith('text/event-stream');

/**
 * The same SSE response, opening with a priming event: an id (the client's Last-Event-ID if the
 * stream breaks), the reconnection delay, and empty data, as the SDK writes on POST streams.
 * Cancelling the result cancels the SDK's stream (pipeTo's default), which releases it.
 */
export function withPrimingEvent(res: Response, eventId: string, retryMs: number): Response {
  const head = new TextEncoder().encode(`id: ${eventId}\nretry: ${retryMs}\ndata: \n\n`);
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>({
    start: (controller) => controller.enqueue(head),
  });
  res.body!.pipeTo(writable).catch(() => undefined);
  return new Response(readable, { status: res.status, headers: res.headers });
}
