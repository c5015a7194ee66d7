// Open TCP connections per client address and per instance, counted on the server's
// 'connection' event, before a byte of HTTP is read: a client that opens thousands of sockets
// and trickles header lines into them (no key needed) would otherwise hold every file descriptor
// of the process. Past a cap the new socket gets a complete HTTP answer (429 connection_limit for
// the address's share, 503 connection_capacity for the instance's) and is closed. The address is
// the TCP peer, an IPv6 client counted by its /64 as the failure limiter counts it. How long a
// slow connection may live is the server's timeouts' business (app.ts).
import type { ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';
import type { Logger } from 'pino';
import { clientKey } from './auth-limit.ts';

export interface ConnectionGuardOptions {
  maxTotal: number;
  /** 0: no per-address cap (behind a reverse proxy every client has its address). */
  maxPerAddress: number;
  logger: Logger;
}

export interface ConnectionGuard {
  /** Open connections: from one address (as clientKey counts it), or in all. */
  open(address?: string): number;
}

function refuse(socket: Socket, status: number, code: string, message: string) {
  // Nothing it sends is read (resume discards it), and a reset is no crash.
  socket.on('error', () => undefined);
  socket.resume();
  const body = JSON.stringify({ error: { code, message } });
  const reason = status === 429 ? 'Too Many Requests' : 'Service Unavailable';
  // Written before the request is read: a client sees the answer once it has sent its request.
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
      `retry-after: 1\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  // A client that never reads would keep the socket in FIN_WAIT: cut it shortly after.
  setTimeout(() => socket.destroy(), 1_000).unref();
}

export function guardConnections(server: Server, o: ConnectionGuardOptions): ConnectionGuard {
  const byAddress = new Map<string, number>();
  let total = 0;
  const log = o.logger.child({ component: 'connections' });
  // Node's HTTP server starts parsing a socket in its own 'connection' listener: a refused
  // socket must never reach it (its request would be served), so the guard stands in front of
  // it and hands on only the sockets it admits.
  const inner = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const address = clientKey(socket.remoteAddress ?? 'unknown');
    const mine = byAddress.get(address) ?? 0;
    if (o.maxPerAddress > 0 && mine >= o.maxPerAddress) {
      log.warn({ client: address, open: mine }, 'connections from one address over the cap');
      return refuse(
        socket,
        429,
        'connection_limit',
        `this address holds ${o.maxPerAddress} open connections already ([api] max_connections_per_address)`,
      );
    }
    if (total >= o.maxTotal) {
      log.warn({ open: total }, 'connections over the instance cap');
      return refuse(
        socket,
        503,
        'connection_capacity',
        `this instance holds ${o.maxTotal} open connections already ([api] max_connections); retry later`,
      );
    }
    byAddress.set(address, mine + 1);
    total++;
    socket.once('close', () => {
      total--;
      const left = (byAddress.get(address) ?? 1) - 1;
      if (left === 0) byAddress.delete(address);
      else byAddress.set(address, left);
    });
    for (const listener of inner) listener.call(server, socket);
  });
  return {
    open: (address) => (address === undefined ? total : (byAddress.get(clientKey(address)) ?? 0)),
  };
}

const exempt = new WeakSet<ServerResponse>();

/**
 * Lifts [api] connection_timeout_ms from the socket of an event-stream response while it is
 * open: a stream may be quiet for long (an MCP call's stream until its result), and streams are
 * bounded by count instead (sse_max_streams*, max_inflight_requests_per_key). The timer is set
 * again when the response closes, for a kept-alive socket's next request.
 */
export function exemptFromIdleTimeout(res: ServerResponse): void {
  // A real socket only (an injected request's stand-in has no timer); once per response.
  const raw = res.socket as Partial<Socket> | null;
  if (typeof raw?.setTimeout !== 'function' || exempt.has(res)) return;
  exempt.add(res);
  const socket = raw as Socket;
  const timeout = socket.timeout;
  socket.setTimeout(0);
  res.once('close', () => {
    if (timeout !== undefined && !socket.destroyed) socket.setTimeout(timeout);
  });
}
