// Reuse of sandbox-runtime's wrap: about 20 ms of every command went into it (a ripgrep scan
// for the files it write-protects, the deny-path expansion), and for one sandbox the policy is
// the same from command to command. So a wrap is kept for a short while per policy (launcher,
// workdir, denied paths) and handed to the next commands of that policy.
//
// Per-command attribution survives: the only per-command part of a wrapped line is the command
// id's encoding (base64 of the id, in SRT_ENCODED_CMD for the seccomp observer and in the proxy
// username for the network allow-list and denials). A reused line gets the new command's
// encoding in place of the old one. Ids are 128 random bits as base64url, so every encoding has
// the same length and alphabet (shell-safe, nothing to re-quote) and cannot occur by chance
// elsewhere in the line; a wrap whose line does not look like that is not reused.
//
// What a reused wrap does not see: a protected file (a `.git/hooks`, a `.bashrc`) that appears
// under the service's working directory within the TTL. The runtime's own mount points for
// its denies stay while an entry lives (the entry holds one reference, given back when it
// expires and no command that got it still runs).
export const DEFAULT_WRAP_CACHE_TTL_MS = 5_000;

export interface WrapKey {
  readonly script: string;
  readonly commandId: string;
  readonly workdir: string;
  readonly allowRead: readonly string[];
  readonly tmpBytes?: number;
}

export interface Wrapped {
  readonly line: string;
  readonly ended: () => void;
}

interface Entry {
  readonly line: string;
  /** The command-id encoding the line was made with. */
  readonly encoded: string;
  readonly expiresAt: number;
  users: number;
  expired: boolean;
  readonly ended: () => void;
}

/** The encoding sandbox-runtime puts in the line for a command id. */
export function encodeCommandId(commandId: string): string {
  return Buffer.from(commandId).toString('base64');
}

export class WrapCache {
  readonly #wrap: (key: WrapKey) => Promise<Wrapped>;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(wrap: (key: WrapKey) => Promise<Wrapped>, ttlMs: number, now = () => Date.now()) {
    this.#wrap = wrap;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  async wrap(request: WrapKey): Promise<Wrapped> {
    if (this.#ttlMs <= 0) return this.#wrap(request);
    const key = JSON.stringify([
      request.script,
      request.workdir,
      request.allowRead,
      request.tmpBytes,
    ]);
    const now = this.#now();
    for (const [k, e] of this.#entries) {
      if (e.expiresAt <= now) this.#retire(k, e);
    }
    const hit = this.#entries.get(key);
    const encoded = encodeCommandId(request.commandId);
    if (hit && hit.encoded.length === encoded.length) {
      return this.#lease(hit, swapCommandId(hit.line, hit.encoded, encoded));
    }
    const fresh = await this.#wrap(request);
    if (!reusable(fresh.line, request.commandId, encoded) || this.#entries.has(key)) {
      return fresh;
    }
    const entry: Entry = {
      line: fresh.line,
      encoded,
      expiresAt: this.#now() + this.#ttlMs,
      users: 0,
      expired: false,
      ended: fresh.ended,
    };
    this.#entries.set(key, entry);
    return this.#lease(entry, fresh.line);
  }

  /** Drops every entry; their wraps end once no command that got them still runs. */
  clear(): void {
    for (const [k, e] of this.#entries) this.#retire(k, e);
  }

  #lease(entry: Entry, line: string): Wrapped {
    entry.users++;
    let done = false;
    return {
      line,
      ended: () => {
        if (done) return;
        done = true;
        entry.users--;
        if (entry.expired && entry.users === 0) entry.ended();
      },
    };
  }

  #retire(key: string, entry: Entry): void {
    this.#entries.delete(key);
    entry.expired = true;
    if (entry.users === 0) entry.ended();
  }
}

/** A line whose only trace of the command id is its encoding, in a shell-safe alphabet. */
function reusable(line: string, commandId: string, encoded: string): boolean {
  return (
    /^[A-Za-z0-9+/=]{24,}$/.test(encoded) && line.includes(encoded) && !line.includes(commandId)
  );
}

/**
 * The line with one command's encoding replaced by another's, both as is (SRT_ENCODED_CMD) and
 * percent-encoded (the proxy URLs' username). Neither form has a character any shell quoting
 * level treats specially, so the replacement needs no re-quoting.
 */
export function swapCommandId(line: string, from: string, to: string): string {
  const fromPct = encodeURIComponent(from);
  const toPct = encodeURIComponent(to);
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return line.replace(new RegExp(`${escape(from)}|${escape(fromPct)}`, 'g'), (m) =>
    m === from ? to : toPct,
  );
}
