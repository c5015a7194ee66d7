// The configuration of what every process shares: its identity and logs, the NATS and Postgres
// connections, the secrets key, the HTTP api and telemetry export.
import { z } from 'zod';
import {
  expected,
  positiveInt,
  hostName,
  port,
  intAtLeast,
  intBetween,
  matching,
  section,
  ID,
  HTTP_URL_OR_EMPTY,
} from './schema-kit.ts';
import { parseHostPort, parseOrigin } from './hosts.ts';

export const LogLevel = {
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  info: 'info',
  debug: 'debug',
  trace: 'trace',
  silent: 'silent',
} as const;
export type LogLevel = (typeof LogLevel)[keyof typeof LogLevel];

/** Renders a rejected value the way it was written, so `"abc"` and `abc` stay distinct. */

export const serviceSchema = section({
  instance_id: matching(
    /^[A-Za-z0-9_-]{0,64}$/,
    'an empty string or 1-64 characters of [A-Za-z0-9_-]',
  ).default(''),
  // SIGTERM's bound: past it the process exits 1 whatever is still stopping (a drain waiting on
  // a server that is gone, a handler that ignores its grace). Above the 30 s grace a tool
  // service gives calls in flight, below a supervisor's kill (systemd's TimeoutStopSec).
  stop_timeout_ms: positiveInt().default(45_000),
});

export const logSchema = section({
  level: z.enum(LogLevel, expected(`one of ${Object.values(LogLevel).join(', ')}`)).default('info'),
});

export const natsSchema = section({
  url: matching(/^[^\s,]+(,[^\s,]+)*$/, 'a NATS URL or a comma-separated list of them').default(
    'nats://127.0.0.1:4222',
  ),
  subject_root: matching(ID, '1-64 characters of [A-Za-z0-9_-]').default('cg'),
  connect_timeout_ms: positiveInt().default(20_000),
  reconnect_wait_ms: positiveInt().default(1000),
  max_reconnect_attempts: intAtLeast(-1).default(-1),
  // How long closing the connection at stop may spend draining (subscriptions flushed, the
  // server's last answer awaited) before it is closed outright: a drain waits for a server that
  // may never come back.
  drain_timeout_ms: positiveInt().default(5_000),
  cmd_max_age_sec: positiveInt().default(86_400),
  evt_max_age_sec: positiveInt().default(604_800),
  dedupe_window_sec: positiveInt().default(120),
  lease_bucket_max_age_sec: positiveInt().default(86_400),
  // This process's NATS user: a path to a `.creds` file, or the file's text inline. Empty
  // connects without authentication (a server without auth, as in local tests). A secret.
  creds: z.string(expected('a path or the creds text')).default(''),
  // The api only: the deployment's NATS keys file (written by `pnpm stack` or the compose init),
  // a path or the JSON inline. With it the api mints and revokes project bus credentials;
  // empty disables /v1/projects/:p/bus-credentials. A secret.
  auth_keys: z.string(expected('a path or the keys JSON')).default(''),
  /** Copies of the streams and the lease bucket: 1 on one server, 3 on a three-node cluster. */
  replicas: intBetween(1, 5).default(1),
}).superRefine((nats, ctx) => {
  // JetStream refuses a stream whose duplicate window is longer than its max age.
  const shortest = Math.min(nats.cmd_max_age_sec, nats.evt_max_age_sec);
  if (nats.dedupe_window_sec > shortest) {
    ctx.addIssue({
      code: 'custom',
      path: ['dedupe_window_sec'],
      message: `must not exceed nats.cmd_max_age_sec and nats.evt_max_age_sec (${shortest}), got ${nats.dedupe_window_sec}`,
    });
  }
});

export const postgresSchema = section({
  url: matching(/^postgres(ql)?:\/\/\S+$/, 'a postgres:// URL').default(
    'postgres://postgres@127.0.0.1:5432/toolmesh',
  ),
  pool_max: positiveInt().default(10),
  statement_timeout_ms: positiveInt().default(30_000),
  connect_timeout_ms: positiveInt().default(5000),
});

// A secret: 32 random bytes, base64 (`openssl rand -base64 32`). Required only once a project
// secret is stored or used; set it through CG__SECRETS__KEY.
export const secretsSchema = section({
  key: z
    .string(expected('a string'))
    .refine(
      (k) => k === '' || Buffer.from(k, 'base64').length === 32,
      expected('the base64 encoding of 32 bytes, or an empty string'),
    )
    .default(''),
});

/** An admin key shorter than this is refused at start: it would be guessable. */

export const MIN_ADMIN_KEY_LENGTH = 24;

export const apiSchema = section({
  host: hostName().default('127.0.0.1'),
  port: port().default(8080),
  // Empty disables the admin key: projects can then not be created over HTTP. A secret: the
  // message of a refused key gives its length, never the key.
  admin_key: z
    .string(expected('a string'))
    .refine((k) => k === '' || k.length >= MIN_ADMIN_KEY_LENGTH, {
      error: (issue) =>
        `must be empty or at least ${MIN_ADMIN_KEY_LENGTH} characters long (e.g. \`openssl rand -hex 24\`), got ${String(issue.input).length} characters`,
    })
    .default(''),
  // Failed authentications (a missing, unknown or revoked key) a client address may make per
  // window before it is answered 429 with Retry-After until the window ends; 0 disables.
  auth_failure_limit: intAtLeast(0).default(20),
  auth_failure_window_sec: positiveInt().default(60),
  // Client addresses whose failures are counted at once; past it, the oldest windows are dropped.
  auth_failure_max_clients: positiveInt().default(100_000),
  // Requests one project API key may make a minute, across every api instance (a token bucket
  // in Postgres holding a minute's worth); past it, 429 with Retry-After. 0 turns it off.
  rate_limit_per_minute: intAtLeast(0).default(6_000),
  // The same for the deployment's admin key, which has a bucket of its own.
  admin_rate_limit_per_minute: intAtLeast(0).default(6_000),
  // How long a verified project key is trusted without reading the database again; a revocation
  // drops it at once on every instance (the bus event key_revoked). 0 reads it on every request.
  auth_cache_ttl_ms: intAtLeast(0).default(5_000),
  // GET /readyz: how long the NATS server has to answer a PING before readiness fails naming
  // nats (a connection that is reconnecting would otherwise hold the probe until it is back).
  readyz_nats_timeout_ms: positiveInt().default(2_000),
  body_limit_bytes: positiveInt().default(1_048_576),
  upload_limit_bytes: positiveInt().default(20_971_520),
  execution_wait_default_ms: positiveInt().default(30_000),
  execution_wait_min_ms: positiveInt().default(1_000),
  execution_wait_max_ms: positiveInt().default(300_000),
  // How long POST /executions waits for JetStream's acknowledgement of the call it publishes;
  // without one in time it answers 504 outcome_unknown (the call may run), never a plain error.
  publish_ack_timeout_ms: positiveInt().default(5_000),
  // How long registering or refreshing an MCP server waits for the tools service's discovery
  // (keep it above tools.mcp_discovery_timeout_ms).
  mcp_refresh_wait_ms: positiveInt().default(60_000),
  // The MCP facade (/v1/projects/:p/mcp): a session nobody used for this long is closed, and an
  // instance keeps at most this many sessions (a new one beyond is refused with 503).
  mcp_session_idle_ms: positiveInt().default(1_800_000),
  mcp_max_sessions: positiveInt().default(1_000),
  // ... and one project at most this many of them (429 mcp_session_limit beyond), so that one
  // project cannot take every session of an instance from the others.
  mcp_max_sessions_per_project: positiveInt().default(100),
  // Long-lived event streams (GET /v1/projects/:p/events, an MCP session's GET stream, a
  // 2026-07-28 subscriptions/listen): at most this many open on an instance (503
  // stream_capacity beyond) and this many per project (429 stream_limit).
  sse_max_streams: positiveInt().default(1_000),
  sse_max_streams_per_project: positiveInt().default(100),
  // Requests one key (or the admin key) may have open at once on an instance, streams and long
  // waits included (429 inflight_limit beyond): what bounds the connections one tenant holds.
  max_inflight_requests_per_key: positiveInt().default(256),
  // Open TCP connections: at most this many on an instance (503 connection_capacity beyond) and
  // this many from one client address (an IPv6 client by its /64; 429 connection_limit), so
  // that one address cannot take every file descriptor. 0 turns the per-address cap off (behind
  // a reverse proxy every client has the proxy's address).
  max_connections: positiveInt().default(10_000),
  max_connections_per_address: intAtLeast(0).default(256),
  // Slow clients: a request's headers must arrive within headers_timeout_ms and the whole
  // request (body included) within request_timeout_ms of its first byte; a kept-alive
  // connection with no request is closed after keep_alive_timeout_ms; a connection on which
  // nothing moves for connection_timeout_ms is closed (event streams are exempt: they are
  // counted instead). Above execution_wait_max_ms, or a long wait would be cut.
  headers_timeout_ms: positiveInt().default(10_000),
  request_timeout_ms: positiveInt().default(120_000),
  keep_alive_timeout_ms: positiveInt().default(72_000),
  connection_timeout_ms: positiveInt().default(360_000),
  // Active (not revoked) API keys a project may hold; creating one more is refused with 409
  // key_limit (revoke one first).
  max_keys_per_project: positiveInt().default(100),
  // More visible tools than this and the facade lists only search_tools and call_tool.
  mcp_search_threshold: positiveInt().default(100),
  // How long a 2026-07-28 task (io.modelcontextprotocol/tasks) stays readable; the revision lets
  // the server choose it. The card outlives it.
  mcp_task_ttl_ms: positiveInt().default(86_400_000),
  // The MCP endpoints refuse (403) a request whose Host is not the api's own address, a localhost
  // form at the api's port, or one of these (DNS rebinding): `name`, `name:port`, `[v6]:port`;
  // a name without a port is allowed at any port.
  allowed_hosts: z
    .array(
      z
        .string(expected('a host or host:port'))
        .refine((h) => parseHostPort(h) !== undefined, expected('a host or host:port')),
      expected('an array of hosts'),
    )
    .default([]),
  // ... and a present Origin that is neither the request's own (scheme-agnostic, its Host
  // allowed), the api's own address, nor one of these (`https://console.example.com:8443`).
  allowed_origins: z
    .array(
      z
        .string(expected('an origin (http(s)://host[:port])'))
        .refine((o) => parseOrigin(o) !== undefined, expected('an origin (http(s)://host[:port])')),
      expected('an array of origins'),
    )
    .default([]),
  // The `retry` (ms) of the priming event that opens each SSE stream of a 2025-11-25 session: how
  // long a client whose stream broke waits before it resumes it with Last-Event-ID.
  mcp_sse_retry_ms: positiveInt().default(1_000),
  // OpenAPI import (POST /v1/projects/:p/openapi): the largest request (the document inside it),
  // and the most operations one import may turn into tools (the registry event lists at most
  // 1000 names, so the ceiling is that).
  openapi_max_bytes: positiveInt().default(16_777_216),
  openapi_max_operations: positiveInt().max(1_000).default(500),
  // ... and, checked before anything expands the document: the operations it may hold at all
  // (include/exclude aside), and its size with every internal $ref replaced by its target (in
  // objects and arrays; a schema referring twice to the one before doubles it at each level).
  openapi_max_document_operations: positiveInt().default(2_000),
  openapi_max_expansion: positiveInt().default(1_000_000),
  // The import's parsing, validation and conversion run in a worker thread with this much time
  // and heap; past either the worker is stopped and the import refused. Imports running at once
  // per api instance; one more is answered 429.
  openapi_timeout_ms: positiveInt().default(10_000),
  openapi_max_heap_mb: intAtLeast(16).default(256),
  openapi_max_concurrent: positiveInt().default(2),
  // The deepest JSON request body (objects and arrays) any route reads; deeper is 400
  // nesting_too_deep before any route sees it (almost everything after JSON.parse recurses).
  max_json_depth: intBetween(8, 1_000).default(128),
}).superRefine((api, ctx) => {
  const {
    execution_wait_min_ms: min,
    execution_wait_default_ms: def,
    execution_wait_max_ms: max,
  } = api;
  if (!(min <= def && def <= max)) {
    ctx.addIssue({
      code: 'custom',
      path: ['execution_wait_default_ms'],
      message: `must lie between api.execution_wait_min_ms (${min}) and api.execution_wait_max_ms (${max}), got ${def}`,
    });
  }
  if (api.headers_timeout_ms > api.request_timeout_ms) {
    ctx.addIssue({
      code: 'custom',
      path: ['headers_timeout_ms'],
      message: `must not exceed api.request_timeout_ms (${api.request_timeout_ms}), got ${api.headers_timeout_ms}`,
    });
  }
  if (api.connection_timeout_ms <= max) {
    ctx.addIssue({
      code: 'custom',
      path: ['connection_timeout_ms'],
      message: `must exceed api.execution_wait_max_ms (${max}), or a long wait would be cut; got ${api.connection_timeout_ms}`,
    });
  }
  if (api.mcp_max_sessions_per_project > api.mcp_max_sessions) {
    ctx.addIssue({
      code: 'custom',
      path: ['mcp_max_sessions_per_project'],
      message: `must not exceed api.mcp_max_sessions (${api.mcp_max_sessions}), got ${api.mcp_max_sessions_per_project}`,
    });
  }
  if (api.sse_max_streams_per_project > api.sse_max_streams) {
    ctx.addIssue({
      code: 'custom',
      path: ['sse_max_streams_per_project'],
      message: `must not exceed api.sse_max_streams (${api.sse_max_streams}), got ${api.sse_max_streams_per_project}`,
    });
  }
});

export const otelSchema = section({
  /** The collector's base URL (`http://collector:4318`); traces go to `<endpoint>/v1/traces`. */
  endpoint: matching(HTTP_URL_OR_EMPTY, 'an http(s) URL or an empty string').default(''),
  /** Share of new traces kept, 0-1; a call joining a caller's trace follows the caller's choice. */
  sample_ratio: z
    .number(expected('a number from 0 to 1'))
    .min(0, expected('a number from 0 to 1'))
    .max(1, expected('a number from 0 to 1'))
    .default(1),
});

/** The operator's MCP server catalog (GET /v1/catalog): a folder of MCP Registry server.json files. */
