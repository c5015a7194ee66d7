// The seam between the tools service and each kind of tool it runs (http, mcp, ...). A kind
// executor makes one attempt of a call; everything around it is shared and lives in run.ts: the
// rate limit, retries with backoff (it says which failures are retryable), the deadline and
// cancel signal, cost, attempt records, and redaction of every secret it read.
import type { ToolContext } from '@toolmesh/tool-service';
import { ToolError, type ErrorCode, type OAuth2Auth } from '@toolmesh/protocol';
import type { RegistryTool } from '@toolmesh/tool-service';

/** Kinds the tools service runs: a registry tool's origin. */
export const ExecutableKind = { http: 'http', mcp: 'mcp' } as const;
export type ExecutableKind = (typeof ExecutableKind)[keyof typeof ExecutableKind];

export interface AttemptContext extends ToolContext {
  /** 1 for the first attempt. */
  readonly attempt: number;
  /**
   * A project secret's value. Every value read here is redacted from the result, the error
   * and the attempt records before anything is stored. Throws `secret_unavailable`.
   */
  secret(name: string): Promise<string>;
  /** A secret value the executor came by another way (a pooled connection's): redacted too. */
  redact(value: string): void;
  /**
   * An OAuth access token of the project for `auth` (cached and shared by every instance).
   * `rejected`: the token the upstream just answered 401 to; a new one is fetched unless another
   * call already did. Redacted like a secret, with every credential it read. Throws
   * secret_unavailable, oauth_failed (an UpstreamFailure), egress_denied.
   */
  oauthToken(auth: OAuth2Auth, rejected?: string): Promise<string>;
}

export interface KindExecutor {
  /**
   * One attempt of a call with validated arguments. What it returns is the result (before the
   * size cap); a thrown UpstreamFailure may be retried, any other error is final.
   */
  attempt(tool: RegistryTool, args: Record<string, unknown>, ctx: AttemptContext): Promise<unknown>;
  /** Releases pooled connections when the service stops. */
  close(): Promise<void>;
}

export type KindExecutors = Partial<Record<ExecutableKind, KindExecutor>>;

export interface UpstreamFailureOptions {
  /** upstream_error (the upstream answered with an error) or upstream_unreachable. */
  code?: ErrorCode;
  /** Whether another attempt may succeed (429, 502, 503, 504, connection reset, transport). */
  retryable: boolean;
  /** The upstream's own Retry-After, when it gave one. */
  retryAfterMs?: number | undefined;
  details?: Record<string, unknown>;
  cause?: unknown;
}

/** A failed attempt at the upstream; run.ts decides whether to try again. */
export class UpstreamFailure extends ToolError {
  readonly retryableUpstream: boolean;
  readonly retryAfterMs: number | undefined;
  constructor(message: string, o: UpstreamFailureOptions) {
    super(message, {
      code: o.code ?? 'upstream_error',
      ...(o.details ? { details: o.details } : {}),
      ...(o.cause !== undefined ? { cause: o.cause } : {}),
    });
    this.retryableUpstream = o.retryable;
    this.retryAfterMs = o.retryAfterMs;
  }
}
