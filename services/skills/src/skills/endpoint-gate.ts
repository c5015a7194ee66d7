// The authenticating HTTP proxy in front of a run_service forwarder. The forwarder (socat) listens
// on a unix socket in a 0700 folder of this service's user, so only this service reaches it; the
// gate listens on 127.0.0.1:<host port> (the service's own port when free, as a user expects to
// find it; else any free one) and passes on a request, or a WebSocket upgrade, only
// when it carries `Authorization: Bearer <the endpoint's token>`. The token is random per
// endpoint, compared in constant time, and removed from the request before it reaches the
// service. Everything else gets 401 with a JSON body that names no token.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';
import type { Logger } from 'pino';

export interface EndpointGate {
  readonly hostPort: number;
  readonly token: string;
  close(): Promise<void>;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** True when the request's Authorization header is `Bearer <token>`, compared in constant time. */
export function carriesToken(req: IncomingMessage, expected: Buffer): boolean {
  const header = req.headers.authorization ?? '';
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m !== null && timingSafeEqual(digest(m[1]!), expected);
}

const refusedBody = JSON.stringify({
  error: {
    code: 'unauthorized',
    message:
      "this endpoint needs 'Authorization: Bearer <token>' with the token run_service returned",
  },
});

/** Below this a port is privileged: never taken on the host, even by a root service. */
const FIRST_UNPRIVILEGED_PORT = 1024;

/** Listens on 127.0.0.1:`port`; false when the port is busy or not ours to take. */
async function listenOn(server: Server, port: number): Promise<boolean> {
  try {
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (port !== 0 && (code === 'EADDRINUSE' || code === 'EACCES')) return false;
    throw err;
  }
}

/**
 * Starts a gate in front of the socket `socketPath()` names (known once the port is), on
 * `preferPort` when it is free and not privileged, else on a free port.
 */
export async function startEndpointGate(
  socketPath: () => string,
  logger: Logger,
  preferPort?: number,
): Promise<EndpointGate> {
  const token = randomBytes(32).toString('base64url');
  const expected = digest(token);
  // With a socketPath, host and port name no connection (the Host header stays the client's).
  const target = () => ({ host: '127.0.0.1', port: 80, socketPath: socketPath() });
  const proxy = createProxyServer({ ws: true, xfwd: false });
  proxy.on('error', (err, _req, res) => {
    logger.warn({ err: err.message }, 'endpoint gate: the service did not answer');
    if (res && 'writeHead' in res && !res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { code: 'bad_gateway', message: 'the service did not answer' } }),
      );
    } else res?.destroy();
  });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (!carriesToken(req, expected)) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      res.end(refusedBody);
      return;
    }
    delete req.headers.authorization;
    proxy.web(req, res, { target: target() });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!carriesToken(req, expected)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    delete req.headers.authorization;
    proxy.ws(req, socket, head, { target: target() });
  });
  const own = preferPort !== undefined && preferPort >= FIRST_UNPRIVILEGED_PORT;
  if (!own || !(await listenOn(server, preferPort))) await listenOn(server, 0);
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('the endpoint gate has no port');
  return {
    hostPort: addr.port,
    token,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      proxy.close();
    },
  };
}
