// The wire formats of the fake E2B server (fake-e2b.ts): the Connect protocol envd speaks (JSON
// codec, as the `e2b` SDK uses it with `useBinaryFormat: false`) and E2B-shaped REST errors.
//
// Connect over HTTP/1.1, the two shapes envd needs:
// - unary: `POST /<service>/<Method>`, `Content-Type: application/json`, the message as plain
//   JSON; an error is an HTTP status plus `{ code, message }`.
// - server streaming: `Content-Type: application/connect+json`; request and response are
//   envelopes (1 flag byte, 4-byte big-endian length, JSON). The last response envelope has flag
//   0x02 and holds `{}` or `{ error: { code, message } }`: the status of a stream travels in the
//   body, after the headers are long gone.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Connect error codes with the HTTP status a unary error answers with. */
export const ConnectCode = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  unauthenticated: 401,
} as const;
export type ConnectCode = keyof typeof ConnectCode;

export class ConnectError extends Error {
  readonly code: ConnectCode;
  constructor(code: ConnectCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** A REST (or envd HTTP) failure: the status and the `{ code, message }` body E2B answers with. */
export class HttpError extends Error {
  readonly status: number;
  /** A plain-text body instead of JSON (what a router answers for a route it does not have). */
  readonly text: boolean;
  constructor(status: number, message: string, text = false) {
    super(message);
    this.status = status;
    this.text = text;
  }
}

const END_STREAM = 0x02;

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function isStreamingRequest(req: IncomingMessage): boolean {
  return (req.headers['content-type'] ?? '').startsWith('application/connect+');
}

/** The JSON message of a Connect request, unwrapping the envelope of a streaming one. */
export function decodeRequest(body: Buffer, streaming: boolean): unknown {
  let json = body;
  if (streaming) {
    if (body.length < 5) throw new ConnectError('invalid_argument', 'missing request envelope');
    const length = body.readUInt32BE(1);
    json = body.subarray(5, 5 + length);
  }
  const text = json.toString('utf8');
  return text === '' ? {} : (JSON.parse(text) as unknown);
}

function envelope(flags: number, message: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

export function sendUnary(res: ServerResponse, message: unknown): void {
  const body = JSON.stringify(message);
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

export function sendUnaryError(res: ServerResponse, err: ConnectError): void {
  const body = JSON.stringify({ code: err.code, message: err.message });
  res.writeHead(ConnectCode[err.code], { 'Content-Type': 'application/json' });
  res.end(body);
}

/** A server stream: messages go out as they come, `end` closes it with a status. */
export interface ConnectStream {
  send(message: unknown): void;
  end(error?: ConnectError): void;
  readonly closed: boolean;
  /** Called once when the client goes away or the stream ends. */
  onClose(listener: () => void): void;
}

export function openStream(req: IncomingMessage, res: ServerResponse): ConnectStream {
  res.writeHead(200, { 'Content-Type': 'application/connect+json' });
  res.flushHeaders();
  let closed = false;
  const listeners: (() => void)[] = [];
  const close = (): void => {
    if (closed) return;
    closed = true;
    for (const listener of listeners.splice(0)) listener();
  };
  res.on('close', close);
  req.on('close', () => {
    if (!res.writableEnded) close();
  });
  return {
    send(message) {
      if (!closed) res.write(envelope(0, message));
    },
    end(error) {
      if (closed) return;
      res.end(
        envelope(END_STREAM, error ? { error: { code: error.code, message: error.message } } : {}),
      );
      close();
    },
    get closed() {
      return closed;
    },
    onClose(listener) {
      if (closed) listener();
      else listeners.push(listener);
    },
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function sendHttpError(res: ServerResponse, err: HttpError): void {
  if (err.text) {
    res.writeHead(err.status, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(err.message);
    return;
  }
  sendJson(res, err.status, { code: err.status, message: err.message });
}
