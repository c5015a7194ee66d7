// Outbound traffic of registry tools refuses loopback, link-local, private and every other
// non-public address (IPv4, IPv6 and every IPv6 form that embeds an IPv4 address; see
// public-address.ts), unless the operator lists the host or address in
// [tools] allowed_private_hosts. Names are checked after DNS
// resolution inside the connection's own lookup, and the socket connects to the address that was
// checked, so a name that resolves once to a public and then to a private address (DNS
// rebinding) cannot slip through. IP literals skip the lookup, so they are checked up front.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { promisify } from 'node:util';
import { isIP } from 'node:net';
import { Agent } from 'undici';
import { ToolError } from '@toolmesh/protocol';
import { isPublicAddress } from './public-address.ts';

export { isPublicAddress };

/**
 * The hosts `pnpm stack --allow-loopback` allows. A refusal of one names that flag too: the same
 * words on every deployment, so a tenant learns nothing of how this one is run.
 */
const LOCAL_STACK_HOSTS = new Set(['127.0.0.1', 'localhost']);

export class EgressDenied extends ToolError {
  constructor(host: string, addresses: readonly string[]) {
    const resolved = addresses.length && addresses[0] !== host ? ` (${addresses.join(', ')})` : '';
    const local = LOCAL_STACK_HOSTS.has(host)
      ? '; on a local `pnpm stack`, `pnpm stack --allow-loopback` allows 127.0.0.1 and localhost'
      : '';
    super(
      `egress to ${host}${resolved} is refused: not a public address; an operator may allow it in [tools] allowed_private_hosts${local}`,
      { code: 'egress_denied', details: { host, addresses } },
    );
  }
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

export interface Egress {
  /** The dispatcher every outbound request of the tools service goes through. */
  readonly dispatcher: Agent;
  /** Throws EgressDenied for a URL whose host is a refused IP literal. */
  checkUrl(url: URL): void;
  close(): Promise<void>;
}

const bare = (host: string) => host.replace(/^\[(.*)\]$/, '$1').toLowerCase();

/** Every address of a host name, as the system resolver gives them. */
export type Resolve = (hostname: string, family: number) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (hostname, family) =>
  promisify(dnsLookup)(hostname, { all: true, family });

export interface EgressOptions {
  /** The resolver names go through (the system's by default; tests pass their own). */
  resolve?: Resolve;
}

export function createEgress(
  allowedPrivateHosts: readonly string[],
  opts: EgressOptions = {},
): Egress {
  const resolve = opts.resolve ?? systemResolve;
  const allowed = new Set(allowedPrivateHosts.map(bare));
  const addressAllowed = (a: string) => allowed.has(a.toLowerCase()) || isPublicAddress(a);

  // Called by net/tls.connect for host names (never for IP literals).
  const lookup = (
    hostname: string,
    options: { family?: number; all?: boolean },
    cb: LookupCallback,
  ): void => {
    resolve(hostname, options.family ?? 0).then(
      (addresses) => {
        const hostOk = allowed.has(bare(hostname));
        const ok = addresses.filter((a) => hostOk || addressAllowed(a.address));
        if (ok.length === 0) {
          cb(
            new EgressDenied(
              hostname,
              addresses.map((a) => a.address),
            ),
            [],
          );
        } else if (options.all) {
          cb(null, ok);
        } else {
          cb(null, ok[0]!.address, ok[0]!.family);
        }
      },
      (err: unknown) => cb(err as NodeJS.ErrnoException, []),
    );
  };

  const dispatcher = new Agent({
    connect: { lookup: lookup as never },
    keepAliveTimeout: 10_000,
    // No redirects are followed: the response (a 3xx) is the result, as the upstream sent it.
  });

  return {
    dispatcher,
    checkUrl: (url) => {
      const host = bare(url.hostname);
      if (isIP(host) === 0) return;
      if (!addressAllowed(host)) throw new EgressDenied(host, [host]);
    },
    close: () => dispatcher.close(),
  };
}

/** Finds an EgressDenied anywhere in an error's cause chain (undici wraps connect errors). */
export function egressDeniedIn(err: unknown): EgressDenied | undefined {
  for (let e = err, depth = 0; e && depth < 5; depth++) {
    if (e instanceof EgressDenied) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
