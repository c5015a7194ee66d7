// DNS rebinding protection of the MCP endpoints (the MCP spec's security best practices; the
// official SDK's allowedHosts/allowedOrigins). A web page whose name an attacker points at this
// machine talks to a local api as its own origin, so the browser's cross-origin rules stop
// nothing; what gives it away is the attacker's name in the Host header. Host is checked on
// every request, Origin (sent by browsers) when present.
//
// One check in front of both revisions, before authentication: the 1.x transport's own option
// covers only the 2025 sessions and compares Host strings whole, the 2.x handler performs none,
// and a refused page's requests must not spend the local address's failed-authentication budget
// (a page could otherwise lock out local clients with 429s).
//
// Allowed hosts: [api] host:port, localhost, 127.0.0.1 and [::1] at the api's port (the
// configured one, and the one the connection came in on when the api was started on port 0),
// the host of [mcp_oauth] resource_base_url, and [api] allowed_hosts. The port matters for
// localhost: a page served by another local program (localhost:3000) is another origin. Allowed
// origins: any whose host:port is an allowed host (the api's own pages under any of its names,
// whatever the scheme, since a proxy may terminate TLS) and [api] allowed_origins.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { parseHostPort, parseOrigin, type HostPort, type WebOrigin } from '@toolmesh/config';

const LOCALHOST = ['localhost', '127.0.0.1', '[::1]'];
/** Addresses a server listens on, never one a client names. */
const WILDCARD = new Set(['0.0.0.0', '[::]']);

export interface HostGuardOptions {
  /** [api] host and port. */
  host: string;
  port: number;
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
  /** [mcp_oauth] resource_base_url: the api's public URL, or ''. */
  publicUrl: string;
}

export const HostRefusal = {
  host_not_allowed: 'host_not_allowed',
  origin_not_allowed: 'origin_not_allowed',
} as const;
export type HostRefusal = (typeof HostRefusal)[keyof typeof HostRefusal];

export type HostVerdict = { ok: true } | { ok: false; code: HostRefusal; message: string };

export interface RequestAddress {
  host: string | undefined;
  origin: string | undefined;
  /** The local port the connection arrived on, when there is a socket. */
  localPort?: number | undefined;
}

/** Does an allowed-host entry admit a host (a header's, or an origin's)? */
function admits(entry: HostPort, h: HostPort): boolean {
  if (entry.hostname !== h.hostname) return false;
  if (entry.port === undefined) return true;
  // A Host without a port means the scheme's default, which the api cannot tell behind a proxy.
  return h.port === undefined ? entry.port === 80 || entry.port === 443 : entry.port === h.port;
}

/** The check itself, apart from Fastify (unit-tested in host-guard.test.ts). */
export function createHostCheck(o: HostGuardOptions): (r: RequestAddress) => HostVerdict {
  const own = /^[0-9a-f:]+$/i.test(o.host) && o.host.includes(':') ? `[${o.host}]` : o.host;
  const named = (port: number): HostPort[] =>
    [...LOCALHOST, ...(WILDCARD.has(own.toLowerCase()) ? [] : [own])].flatMap((name) => {
      const h = parseHostPort(`${name}:${port}`);
      return h ? [h] : [];
    });
  const publicHost = URL.canParse(o.publicUrl) ? new URL(o.publicUrl).hostname : '';
  const fixed: HostPort[] = [
    ...(o.port > 0 ? named(o.port) : []),
    ...(publicHost ? [parseHostPort(publicHost)].filter((h) => h !== undefined) : []),
    ...o.allowedHosts.map((h) => parseHostPort(h)).filter((h) => h !== undefined),
  ];
  const origins = o.allowedOrigins.map((x) => parseOrigin(x)).filter((x) => x !== undefined);
  const sameOrigin = (a: WebOrigin, b: WebOrigin) =>
    a.scheme === b.scheme && a.hostname === b.hostname && a.port === b.port;

  return ({ host, origin, localPort }) => {
    const hosts =
      localPort !== undefined && localPort !== o.port ? [...fixed, ...named(localPort)] : fixed;
    const h = host === undefined ? undefined : parseHostPort(host);
    if (!h || !hosts.some((e) => admits(e, h))) {
      return {
        ok: false,
        code: HostRefusal.host_not_allowed,
        message: `Host ${JSON.stringify(host ?? '')} is not one of this api's names ([api] allowed_hosts)`,
      };
    }
    if (origin === undefined) return { ok: true };
    const from = parseOrigin(origin);
    if (from && (hosts.some((e) => admits(e, from)) || origins.some((a) => sameOrigin(a, from)))) {
      return { ok: true };
    }
    return {
      ok: false,
      code: HostRefusal.origin_not_allowed,
      message: `Origin ${JSON.stringify(origin)} is not allowed ([api] allowed_origins)`,
    };
  };
}

/**
 * onRequest hook of the MCP route: 403 with a JSON-RPC error (no id, as the spec allows) whose
 * `data.code` says which header was refused. 403 rather than 421 for a Host: 421 tells a client
 * to retry on another connection, which cannot help; the SDK answers both checks with 403 too.
 */
export function createHostGuard(o: HostGuardOptions, logger: Logger) {
  const check = createHostCheck(o);
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const verdict = check({
      host: req.headers.host,
      origin: req.headers.origin,
      localPort: req.socket.localPort,
    });
    if (verdict.ok) return undefined;
    logger.warn(
      { code: verdict.code, host: req.headers.host, origin: req.headers.origin, ip: req.ip },
      'MCP request refused: not an allowed Host or Origin',
    );
    return reply.status(403).send({
      jsonrpc: '2.0',
      error: { code: -32000, message: verdict.message, data: { code: verdict.code } },
      id: null,
    });
  };
}
