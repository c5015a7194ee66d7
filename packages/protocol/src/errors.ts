// The error-code taxonomy. Every failure the mesh reports carries one of these codes; the
// table says whether it is terminal (bad input: write a failed result, ack, never retry) or
// retryable (infrastructure: nak with a delay and try again), and which result status it maps to.

export const ResultStatus = {
  succeeded: 'succeeded',
  failed: 'failed',
  timeout: 'timeout',
  canceled: 'canceled',
} as const;
export type ResultStatus = (typeof ResultStatus)[keyof typeof ResultStatus];

interface CodeInfo {
  readonly retryable: boolean;
  readonly status: ResultStatus;
  readonly summary: string;
}

export const ERROR_CODES = {
  invalid_id: { retryable: false, status: 'failed', summary: 'an id does not match [A-Za-z0-9_-]' },
  malformed_json: { retryable: false, status: 'failed', summary: 'the body is not valid JSON' },
  invalid_message: {
    retryable: false,
    status: 'failed',
    summary: 'the body does not match the message schema (missing or unknown fields, wrong types)',
  },
  unsupported_version: {
    retryable: false,
    status: 'failed',
    summary: 'the message version is not one this service speaks',
  },
  id_mismatch: {
    retryable: false,
    status: 'failed',
    summary: 'the subject, headers and body name different ids',
  },
  payload_too_large: {
    retryable: false,
    status: 'failed',
    summary: 'the message is larger than the configured limit',
  },
  nesting_too_deep: {
    retryable: false,
    status: 'failed',
    summary:
      'the arguments (or another JSON value of the message) nest deeper than the configured limit (tools.max_arguments_depth)',
  },
  unknown_tool: {
    retryable: false,
    status: 'failed',
    summary: 'no tool of that name is served for the target',
  },
  invalid_arguments: {
    retryable: false,
    status: 'failed',
    summary: "the arguments do not match the tool's schema",
  },
  tool_disabled: {
    retryable: false,
    status: 'failed',
    summary: 'the tool is registered but disabled in the project',
  },
  tool_error: { retryable: false, status: 'failed', summary: 'the tool reported a failure' },
  definition_changed: {
    retryable: false,
    status: 'failed',
    summary:
      "the MCP server changed the tool's definition since it was approved: held until POST .../tools/:name/approve-definition",
  },
  approval_denied: {
    retryable: false,
    status: 'failed',
    summary: 'the call required a human approval and was denied; details say who decided and why',
  },
  approval_timeout: {
    retryable: false,
    status: 'failed',
    summary: 'the call required a human approval and nobody decided within approval_timeout_ms',
  },
  input_expired: {
    retryable: false,
    status: 'failed',
    summary:
      "the call's MCP server asked for input (elicitation) that no MCP client could answer, and nobody answered its input request before the call's deadline",
  },
  tool_call_id_taken: {
    retryable: false,
    status: 'failed',
    summary:
      "the tool_call_id is an agent's pending call of another tool: a result under another target is refused",
  },
  not_found: {
    retryable: false,
    status: 'failed',
    summary: 'what the call names does not exist in the project (a file, a document)',
  },
  mcp_unavailable: {
    retryable: false,
    status: 'failed',
    summary:
      'the MCP server could not be reached, or its connection died during the call; the next call reconnects',
  },
  mcp_error: {
    retryable: false,
    status: 'failed',
    summary: 'the MCP server answered with a JSON-RPC error (unknown tool, invalid params, ...)',
  },
  upstream_error: {
    retryable: false,
    status: 'failed',
    summary:
      'the upstream service of an HTTP or MCP tool answered with an error (status and a bounded excerpt in details)',
  },
  upstream_unreachable: {
    retryable: false,
    status: 'failed',
    summary:
      'the upstream service could not be reached (connection refused or reset, DNS failure) after every allowed retry',
  },
  rate_limited: {
    retryable: false,
    status: 'failed',
    summary:
      "the tool's rate limit had no token within rate_limit.max_wait_ms (details.retry_after_ms says when one frees up), or the project is over [quotas] bus_calls_per_minute (details.limit, details.retry_after_sec)",
  },
  egress_denied: {
    retryable: false,
    status: 'failed',
    summary:
      'the tool would reach a loopback, link-local or private address the operator has not allowed',
  },
  secret_unavailable: {
    retryable: false,
    status: 'failed',
    summary:
      "a secret the tool's auth names is not stored in the project, or no secrets key is configured",
  },
  upstream_unauthorized: {
    retryable: false,
    status: 'failed',
    summary:
      'the upstream answered 401 to an OAuth access token the tools service had just refreshed',
  },
  oauth_failed: {
    retryable: false,
    status: 'failed',
    summary:
      'the OAuth token endpoint refused to issue a token (invalid_client, invalid_grant, ...) or could not be used; details.oauth_error says what it answered',
  },
  internal_error: {
    retryable: false,
    status: 'failed',
    summary: 'the tool crashed; the call is failed rather than left without a result',
  },
  retries_exhausted: {
    retryable: false,
    status: 'failed',
    summary: 'the call hit a retryable failure on every allowed delivery',
  },
  tool_not_allowed: {
    retryable: false,
    status: 'failed',
    summary: "the agent's profile does not allow the tool its model asked for; nothing was called",
  },
  model_error: {
    retryable: false,
    status: 'failed',
    summary: 'the LLM endpoint refused the request or kept failing; the turn ended',
  },
  step_limit: {
    retryable: false,
    status: 'failed',
    summary: 'the turn used every step it was allowed without a final answer',
  },
  timeout: { retryable: false, status: 'timeout', summary: 'the call outlived its deadline' },
  interrupted: {
    retryable: false,
    status: 'failed',
    summary:
      'the instance running a non-idempotent tool stopped mid-run; the call was not run again (rerun_on_takeover allows it)',
  },
  canceled: { retryable: false, status: 'canceled', summary: 'the call was canceled' },
  unavailable: {
    retryable: true,
    status: 'failed',
    summary: 'a dependency (Postgres, NATS) is unreachable; the call is retried',
  },
  busy: {
    retryable: false,
    status: 'failed',
    summary:
      'the sandbox session is held by another call and its lock did not free up in time (sandbox.lock_wait_ms)',
  },
  lease_busy: {
    retryable: true,
    status: 'failed',
    summary: 'another instance is running the same call right now',
  },
  oom: {
    retryable: false,
    status: 'failed',
    summary: 'a sandboxed command went past its memory limit and the kernel killed it',
  },
  cpu_limit: {
    retryable: false,
    status: 'failed',
    summary: 'a sandboxed command used more CPU time than its limit and was killed',
  },
  disk_full: {
    retryable: false,
    status: 'failed',
    summary:
      "the sandbox's files would pass its disk limit (sandbox.disk_bytes): the write was refused or the command killed",
  },
  quota_exceeded: {
    retryable: false,
    status: 'failed',
    summary:
      'the project is at one of its quotas ([quotas]: live sandboxes, running tasks, concurrent calls; [builtin]: file sizes and counts); details say which, its limit and the current count; nothing ran',
  },
  invalid_dependencies: {
    retryable: false,
    status: 'failed',
    summary:
      "a skill's requirements.txt, pyproject.toml or package.json cannot be read, or names a package index of its own",
  },
  dependency_install_failed: {
    retryable: false,
    status: 'failed',
    summary:
      "installing a skill version's dependencies failed; details carry the installer's output tail",
  },
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;
export const ErrorCode = Object.fromEntries(Object.keys(ERROR_CODES).map((k) => [k, k])) as {
  readonly [K in ErrorCode]: K;
};

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

export function isRetryable(code: ErrorCode): boolean {
  return ERROR_CODES[code].retryable;
}

export function statusForCode(code: ErrorCode): ResultStatus {
  return ERROR_CODES[code].status;
}

export interface ErrorOptions {
  cause?: unknown;
  details?: Record<string, unknown>;
}

/** Base of every error that crosses a package boundary: a stable code, a message, a cause. */
export class MeshError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details;
  }
  get retryable(): boolean {
    return isRetryable(this.code);
  }
}

/** Bad input at the protocol level: ids, JSON, schemas, sizes. Always terminal. */
export class ProtocolError extends MeshError {}

/** A failure a tool handler reports on purpose; its code lands in the failed result. */
export class ToolError extends MeshError {
  constructor(message: string, options: ErrorOptions & { code?: ErrorCode } = {}) {
    super(options.code ?? 'tool_error', message, options);
  }
}

/** Infrastructure trouble (database or bus unreachable): the work is retried, never failed. */
export class RetryableError extends MeshError {
  constructor(message: string, options: ErrorOptions = {}) {
    super('unavailable', message, options);
  }
}

/** Reads a code off any thrown value, preferring `code` over `instanceof`. */
export function errorCodeOf(err: unknown): ErrorCode | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && isErrorCode(err.code)) {
    return err.code;
  }
  return undefined;
}

/**
 * An error's message with the causes that say why: `fetch failed` alone hides whether the host
 * is unknown (ENOTFOUND), refused the connection (ECONNREFUSED) or failed TLS; undici keeps that
 * in `cause` (an AggregateError of each address when several were tried).
 */
export function messageWithCause(err: unknown): string {
  const parts: string[] = [err instanceof Error ? err.message : String(err)];
  let e = (err as { cause?: unknown } | null)?.cause;
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 4; depth++) {
    const c = e as { message?: string; code?: string; errors?: unknown[] };
    const first = c.errors?.[0] as { message?: string } | undefined;
    const text = c.message || first?.message || c.code;
    if (text && !parts.some((p) => p.includes(text))) {
      parts.push(c.code && !text.includes(c.code) ? `${c.code}: ${text}` : text);
    }
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join(': ');
}
