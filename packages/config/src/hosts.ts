// The two forms the api's allow-lists of Host and Origin values are written in ([api]
// allowed_hosts and allowed_origins), parsed here once for the schema (which refuses a malformed
// entry at start) and for the api (which reads request headers with the same grammar, so an
// entry and a header that look alike compare alike).
import { isIPv6 } from 'node:net';

/** A host name (letters, digits, `-`, `_` in dot-separated labels), an IPv4 address or `[IPv6]`. */
const HOST_PORT =
  /^(\[[0-9a-f:.]+\]|[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*)(?::(\d{1,5}))?$/i;

export interface HostPort {
  /** Lower case; an IPv6 address keeps its brackets (`[::1]`), as in a Host header. */
  hostname: string;
  /** Absent when the text names no port. */
  port: number | undefined;
}

/** `name`, `name:port`, `[v6]` or `[v6]:port` (a Host header's form); undefined when malformed. */
export function parseHostPort(text: string): HostPort | undefined {
  const m = HOST_PORT.exec(text);
  const host = m?.[1];
  if (!m || host === undefined) return undefined;
  if (host.startsWith('[') && !isIPv6(host.slice(1, -1))) return undefined;
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && (port < 1 || port > 65_535)) return undefined;
  return { hostname: host.toLowerCase(), port };
}

export interface WebOrigin extends HostPort {
  scheme: 'http' | 'https';
}

/**
 * `http(s)://host[:port]`, an Origin header's form: no path, no credentials, no trailing slash.
 * The port is the scheme's default (80, 443) when none is written, so `https://a` and
 * `https://a:443` are the same origin. Undefined when malformed, `null` (an opaque origin)
 * included.
 */
export function parseOrigin(text: string): (WebOrigin & { port: number }) | undefined {
  const m = /^(https?):\/\/([^/?#@\s]+)$/i.exec(text);
  const [, written, host] = m ?? [];
  const hostPort = host === undefined ? undefined : parseHostPort(host);
  if (written === undefined || !hostPort) return undefined;
  const scheme = written.toLowerCase() as WebOrigin['scheme'];
  return { scheme, hostname: hostPort.hostname, port: hostPort.port ?? defaultPort(scheme) };
}

export function defaultPort(scheme: WebOrigin['scheme']): number {
  return scheme === 'https' ? 443 : 80;
}
