// The two E2B REST calls the `e2b` SDK does not make for us: a sandbox's info WITH its envd
// access token (the SDK's getInfo drops the token) and `POST /sandboxes/:id/resume` (the SDK
// resumes only through `/connect`, which self-hosted servers before it lack). Together they let
// the adapter reach a sandbox when `/connect` answers 404. Answers are classified by HTTP
// status alone; a body is read only for its fields, never searched for words.
import { SandboxError } from './errors.ts';

export interface E2bRestOptions {
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly requestTimeoutMs: number;
}

/** What it takes to talk to a sandbox's envd. */
export interface E2bConnection {
  readonly sandboxId: string;
  readonly envdVersion: string;
  readonly envdAccessToken: string | undefined;
  /** The sandbox's domain when the server names one. */
  readonly domain: string | undefined;
}

export interface E2bSandboxInfo extends E2bConnection {
  readonly state: 'running' | 'paused';
  readonly metadata: Readonly<Record<string, string>>;
}

export interface E2bRest {
  /** Undefined when the API answers 404: the sandbox is gone. */
  info(sandboxId: string): Promise<E2bSandboxInfo | undefined>;
  /** Resumes a paused sandbox. Undefined on 404 (gone); `running` on 409 (it already runs). */
  resume(sandboxId: string, timeoutSec: number): Promise<E2bConnection | 'running' | undefined>;
  /** The bare HTTP status of `POST /v2/sandboxes/:id/connect` (the SDK's route), for probes. */
  connectStatus(sandboxId: string, timeoutSec: number): Promise<number>;
}

interface WireSandbox {
  sandboxID?: unknown;
  envdVersion?: unknown;
  envdAccessToken?: unknown;
  domain?: unknown;
  state?: unknown;
  metadata?: unknown;
}

export function createE2bRest(options: E2bRestOptions): E2bRest {
  const base = options.apiUrl.replace(/\/+$/, '');

  async function call(method: string, path: string, body?: unknown) {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: {
          'X-API-Key': options.apiKey,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(options.requestTimeoutMs),
      });
    } catch (err) {
      throw new SandboxError('unavailable', `E2B API ${method} ${path} failed: ${String(err)}`, {
        cause: err,
      });
    }
    const text = await res.text();
    return { status: res.status, text };
  }

  function unexpected(method: string, path: string, status: number, text: string): SandboxError {
    return new SandboxError(
      'unavailable',
      `E2B API ${method} ${path} answered ${status}: ${text.slice(0, 200)}`,
      { details: { status } },
    );
  }

  function connectionOf(sandboxId: string, wire: WireSandbox): E2bConnection {
    return {
      sandboxId: typeof wire.sandboxID === 'string' ? wire.sandboxID : sandboxId,
      envdVersion: typeof wire.envdVersion === 'string' ? wire.envdVersion : '0.0.0',
      envdAccessToken: typeof wire.envdAccessToken === 'string' ? wire.envdAccessToken : undefined,
      domain: typeof wire.domain === 'string' && wire.domain !== '' ? wire.domain : undefined,
    };
  }

  return {
    async info(sandboxId) {
      const path = `/sandboxes/${encodeURIComponent(sandboxId)}`;
      const { status, text } = await call('GET', path);
      if (status === 404) return undefined;
      if (status !== 200) throw unexpected('GET', path, status, text);
      const wire = JSON.parse(text) as WireSandbox;
      const metadata =
        typeof wire.metadata === 'object' && wire.metadata !== null
          ? (wire.metadata as Record<string, string>)
          : {};
      return {
        ...connectionOf(sandboxId, wire),
        state: wire.state === 'paused' ? 'paused' : 'running',
        metadata,
      };
    },

    async connectStatus(sandboxId, timeoutSec) {
      const path = `/v2/sandboxes/${encodeURIComponent(sandboxId)}/connect`;
      return (await call('POST', path, { timeout: timeoutSec })).status;
    },

    async resume(sandboxId, timeoutSec) {
      const path = `/sandboxes/${encodeURIComponent(sandboxId)}/resume`;
      const { status, text } = await call('POST', path, { timeout: timeoutSec });
      if (status === 404) return undefined;
      if (status === 409) return 'running';
      if (status !== 200 && status !== 201) throw unexpected('POST', path, status, text);
      return connectionOf(sandboxId, JSON.parse(text) as WireSandbox);
    },
  };
}
