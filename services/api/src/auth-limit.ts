// Failed authentications per client address, in fixed windows: past the limit, every request of
// that address that needs a key is answered 429 (with Retry-After) until its window ends, valid
// key or not; answering a valid key would tell a guesser when it guessed right. A success does
// not clear the count, or a tenant could interleave its own key with guesses at the admin key.
// Memory is bounded: expired windows are dropped as new ones open, and past `maxClients` the
// oldest window goes first. An IPv6 client is counted by its /64: one host usually holds a
// whole /64 and could otherwise try from a fresh address each time.
import { isIPv6 } from 'node:net';

/** The address failures are counted under: an IPv4 address as it is, an IPv6 one by its /64. */
export function clientKey(address: string): string {
  if (!isIPv6(address)) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  const groups = (part: string | undefined) =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : [];
  const [head, tail] = address.split('::');
  const h = groups(head);
  const t = groups(tail);
  const all =
    tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return `${all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

export interface AuthLimiterOptions {
  /** Failures allowed per window; 0 disables the limiter. */
  limit: number;
  windowMs: number;
  maxClients: number;
  now?: () => number;
}

export interface AuthLimiter {
  /** Seconds until the address may try again, or undefined when it may try now. */
  blockedFor(address: string): number | undefined;
  /** Counts a failure; returns the seconds to wait when this failure reached the limit. */
  fail(address: string): number | undefined;
  /** Addresses with an open window. */
  size(): number;
}

export function createAuthLimiter(opts: AuthLimiterOptions): AuthLimiter {
  const now = opts.now ?? Date.now;
  // Insertion order is opening order: the first entry is the oldest window.
  const windows = new Map<string, { failures: number; endsAt: number }>();
  const waitOf = (endsAt: number) => Math.max(1, Math.ceil((endsAt - now()) / 1000));

  function sweep(t: number) {
    for (const [address, w] of windows) {
      if (w.endsAt > t) break;
      windows.delete(address);
    }
  }

  function current(address: string) {
    const w = windows.get(address);
    if (w && w.endsAt <= now()) {
      windows.delete(address);
      return undefined;
    }
    return w;
  }

  return {
    blockedFor(address) {
      if (opts.limit === 0) return undefined;
      const w = current(address);
      return w && w.failures >= opts.limit ? waitOf(w.endsAt) : undefined;
    },
    fail(address) {
      if (opts.limit === 0) return undefined;
      const t = now();
      let w = current(address);
      if (!w) {
        sweep(t);
        w = { failures: 0, endsAt: t + opts.windowMs };
        windows.set(address, w);
        if (windows.size > opts.maxClients) windows.delete(windows.keys().next().value!);
      }
      w.failures++;
      return w.failures >= opts.limit ? waitOf(w.endsAt) : undefined;
    },
    size: () => windows.size,
  };
}
