// The configuration schema: every section and key a process reads, its default, and the checks
// that tie keys together. Every key has a default, so an empty file is a valid configuration and
// the root config.toml only documents them. Error messages read "expected <what>, got <value>" so
// the loader can prefix the place the value came from.
import { z } from 'zod';

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
function showValue(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (value === undefined) return 'nothing';
  if (typeof value === 'bigint') return value.toString();
  const text = JSON.stringify(value) ?? typeof value;
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function expected(what: string): { error: (issue: { input?: unknown }) => string } {
  return { error: (issue) => `expected ${what}, got ${showValue(issue.input)}` };
}

function positiveInt(): z.ZodInt {
  const e = expected('a positive integer');
  return z.int(e).positive(e);
}

function hostName(): z.ZodString {
  return z.string(expected('a host name or address')).min(1, expected('a host name or address'));
}

/** A TCP port; 0 lets the system pick a free one. */
function port(): z.ZodInt {
  return z
    .int(expected('a port number'))
    .min(0, expected('a port number'))
    .max(65_535, expected('a port number'));
}

function intAtLeast(min: number): z.ZodInt {
  const e = expected(`an integer >= ${min}`);
  return z.int(e).min(min, e);
}

function intBetween(min: number, max: number): z.ZodInt {
  const e = expected(`an integer from ${min} to ${max}`);
  return z.int(e).min(min, e).max(max, e);
}

function matching(pattern: RegExp, what: string): z.ZodString {
  const e = expected(what);
  return z.string(e).regex(pattern, e);
}

function section<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.strictObject(shape, expected('a table'));
}

const ID = /^[A-Za-z0-9_-]{1,64}$/;

export const serviceSchema = section({
  instance_id: matching(
    /^[A-Za-z0-9_-]{0,64}$/,
    'an empty string or 1-64 characters of [A-Za-z0-9_-]',
  ).default(''),
});

export const logSchema = section({
  level: z.enum(LogLevel, expected(`one of ${Object.values(LogLevel).join(', ')}`)).default('info'),
});

export const natsSchema = section({
  url: matching(/^[^\s,]+(,[^\s,]+)*$/, 'a NATS URL or a comma-separated list of them').default(
    'nats://127.0.0.1:4222',
  ),
  subject_root: matching(ID, '1-64 characters of [A-Za-z0-9_-]').default('cg'),
  connect_timeout_ms: positiveInt().default(5000),
  reconnect_wait_ms: positiveInt().default(1000),
  max_reconnect_attempts: intAtLeast(-1).default(-1),
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

export const toolsSchema = section({
  concurrency: positiveInt().default(64),
  max_call_bytes: positiveInt().default(262_144),
  max_result_bytes: positiveInt().default(524_288),
  // Largest arguments kept on an execution row; larger ones are kept as a size marker.
  execution_arguments_max_bytes: intAtLeast(0).default(8_192),
  default_timeout_ms: positiveInt().default(60_000),
  max_timeout_ms: positiveInt().default(3_600_000),
  // JetStream redelivers after ack_wait; under a second, a busy instance sees its own calls again.
  ack_wait_ms: intAtLeast(1000).default(30_000),
  max_deliver: positiveInt().default(50),
  // A lease is renewed well before it lapses; under 3 s one long GC pause hands the call to another
  // instance while the first is still running it.
  lease_ttl_ms: intAtLeast(3000).default(30_000),
  retry_base_ms: positiveInt().default(250),
  retry_max_ms: positiveInt().default(10_000),
  persist_retry_max_ms: positiveInt().default(300_000),
  // The tools service (HTTP and MCP tools of the registry). Hosts or IP addresses its outbound
  // requests may reach although they are loopback, link-local or private (refused otherwise).
  allowed_private_hosts: z
    .array(z.string(expected('a host name or IP address')).min(1), expected('an array of hosts'))
    .default([]),
  // How long a registry entry is trusted without a change event (a missed event heals after this).
  registry_cache_ttl_ms: positiveInt().default(30_000),
  // MCP servers: how long opening a connection may take (a stdio server's start included), how
  // long one discovery (connect and list every page) may take, and how long an unused pooled
  // connection stays open (a stdio server's sandbox goes with it).
  mcp_connect_timeout_ms: positiveInt().default(30_000),
  mcp_discovery_timeout_ms: positiveInt().default(50_000),
  mcp_idle_close_ms: positiveInt().default(600_000),
  // Upstream OAuth 2.0: a cached access token is refreshed once it has less than this left; a
  // token request (with the wait for another instance's) may take this long.
  oauth_refresh_margin_ms: intAtLeast(0).default(60_000),
  oauth_token_timeout_ms: positiveInt().default(15_000),
  // Pin MCP tool definitions: a refresh that changes a tool's name, description, input schema
  // or annotations holds the tool (definition_changed) until someone approves the change. The
  // default of every project; a project's settings (tools.pin_definitions) override it.
  pin_definitions: z.boolean().default(true),
  // Human approvals: the default wait for a decision (1 ms to one week), and how often each tool
  // service files the calls whose wait ended (approval_timeout).
  approval_timeout_ms: positiveInt().max(604_800_000).default(3_600_000),
  approval_scan_interval_ms: intAtLeast(100).default(1_000),
  // Project-wide policy defaults; a tool's own `options` win. 0 per minute: no rate limit.
  rate_limit_per_minute: intAtLeast(0).default(0),
  rate_limit_burst: positiveInt().default(10),
  rate_limit_max_wait_ms: intAtLeast(0).default(5_000),
  // Retries of a retryable upstream failure (429, 502, 503, 504, connection reset).
  upstream_retries: intAtLeast(0).default(2),
  upstream_retry_base_ms: positiveInt().default(200),
  upstream_retry_max_ms: positiveInt().default(5_000),
  // Where the tools service answers GET /healthz; port 0 picks a free one.
  health_host: hostName().default('127.0.0.1'),
  health_port: port().default(8092),
}).superRefine((tools, ctx) => {
  if (tools.default_timeout_ms > tools.max_timeout_ms) {
    ctx.addIssue({
      code: 'custom',
      path: ['default_timeout_ms'],
      message: `must not exceed tools.max_timeout_ms (${tools.max_timeout_ms}), got ${tools.default_timeout_ms}`,
    });
  }
  if (tools.retry_base_ms > tools.retry_max_ms) {
    ctx.addIssue({
      code: 'custom',
      path: ['retry_base_ms'],
      message: `must not exceed tools.retry_max_ms (${tools.retry_max_ms}), got ${tools.retry_base_ms}`,
    });
  }
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
  body_limit_bytes: positiveInt().default(1_048_576),
  upload_limit_bytes: positiveInt().default(20_971_520),
  execution_wait_default_ms: positiveInt().default(30_000),
  execution_wait_min_ms: positiveInt().default(1_000),
  execution_wait_max_ms: positiveInt().default(300_000),
  // How long registering or refreshing an MCP server waits for the tools service's discovery
  // (keep it above tools.mcp_discovery_timeout_ms).
  mcp_refresh_wait_ms: positiveInt().default(60_000),
  // The MCP facade (/v1/projects/:p/mcp): a session nobody used for this long is closed, and an
  // instance keeps at most this many sessions (a new one beyond is refused with 503).
  mcp_session_idle_ms: positiveInt().default(1_800_000),
  mcp_max_sessions: positiveInt().default(1_000),
  // More visible tools than this and the facade lists only search_tools and call_tool.
  mcp_search_threshold: positiveInt().default(100),
  // How long a 2026-07-28 task (io.modelcontextprotocol/tasks) stays readable; the revision lets
  // the server choose it. The card outlives it.
  mcp_task_ttl_ms: positiveInt().default(86_400_000),
  // OpenAPI import (POST /v1/projects/:p/openapi): the largest request (the document inside it),
  // and the most operations one import may turn into tools (the registry event lists at most
  // 1000 names, so the ceiling is that).
  openapi_max_bytes: positiveInt().default(4_194_304),
  openapi_max_operations: positiveInt().max(1_000).default(500),
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
});

export const ArtifactsKind = { fs: 'fs', gcs: 'gcs' } as const;
export type ArtifactsKind = (typeof ArtifactsKind)[keyof typeof ArtifactsKind];

// eslint-disable-next-line no-control-regex
const BACKSLASH_OR_CONTROL = /[\\\u0000-\u001f\u007f]/;

/** `a/b/c`, a trailing `/` allowed: no empty segment, none starting with `.`, no backslash or
 * control character. The gcs adapter checks a prefix against the full key rules at start. */
function isRelativePath(path: string): boolean {
  if (path === '') return true;
  const segments = path.replace(/\/$/, '').split('/');
  return segments.every(
    (segment) => segment !== '' && !segment.startsWith('.') && !BACKSLASH_OR_CONTROL.test(segment),
  );
}

export const artifactsSchema = section({
  kind: z.enum(ArtifactsKind, expected('one of fs, gcs')).default('fs'),
  // fs: the folder objects are written to, relative to the working directory when not absolute.
  root: z.string(expected('a folder')).min(1, expected('a folder')).default('.data/artifacts'),
  // gcs: required when kind = "gcs". Credentials come from Application Default Credentials.
  gcs_bucket: matching(
    /^$|^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/,
    'a GCS bucket name (3-222 of [a-z0-9._-]) or an empty string',
  ).default(''),
  // gcs: objects are stored as <prefix>/<key>; empty for the bucket's root.
  gcs_prefix: z
    .string(expected('a string'))
    .refine(
      isRelativePath,
      expected('an empty string or a relative a/b path (no leading /, no empty or dot segments)'),
    )
    .default(''),
  // gcs: an emulator's URL; requests to it carry no credentials.
  gcs_api_endpoint: matching(/^$|^https?:\/\/\S+$/, 'an http(s) URL or an empty string').default(
    '',
  ),
}).superRefine((artifacts, ctx) => {
  if (artifacts.kind === ArtifactsKind.gcs && artifacts.gcs_bucket === '') {
    ctx.addIssue({
      code: 'custom',
      path: ['gcs_bucket'],
      message: 'must name a bucket when artifacts.kind is "gcs", got ""',
    });
  }
});

export const skillsSchema = section({
  max_zip_bytes: positiveInt().default(20_971_520),
  max_entries: positiveInt().default(2_000),
  max_uncompressed_bytes: positiveInt().default(104_857_600),
  run_timeout_default_ms: positiveInt().default(60_000),
  run_timeout_max_ms: positiveInt().default(3_600_000),
  task_timeout_max_ms: positiveInt().default(86_400_000),
  stdout_tail_bytes: positiveInt().default(65_536),
  stderr_tail_bytes: positiveInt().default(65_536),
  max_input_bytes: positiveInt().default(52_428_800),
  max_output_bytes: positiveInt().default(52_428_800),
  reaper_interval_ms: positiveInt().default(30_000),
  // Python package indexes (PEP 503 "simple" URLs) a skill's dependencies are installed from:
  // the first is pip's index, the rest extra indexes. Builds may reach these hosts and no other.
  package_indexes: z
    .array(matching(/^https?:\/\/\S+$/, 'an http(s) URL'), expected('an array of URLs'))
    .default(['https://pypi.org/simple/']),
  // The npm registry a skill's package.json dependencies are installed from.
  npm_registry: matching(/^https?:\/\/\S+$/, 'an http(s) URL').default(
    'https://registry.npmjs.org/',
  ),
  // More hosts a dependency build may reach: where an index serves its files from.
  package_download_hosts: z
    .array(z.string(expected('a host name')).min(1), expected('an array of host names'))
    .default(['files.pythonhosted.org']),
  // Longest a dependency build may run; past it the build fails.
  env_build_timeout_ms: positiveInt().default(900_000),
  // A build's lease, renewed by its builder: a build whose lease passed (a dead builder) is
  // taken over by the next request.
  env_lease_ms: intAtLeast(1_000).default(30_000),
  // GET /healthz and GET /metrics of the skills process; port 0 (the default) picks a free port,
  // logged at start, so several instances on one host never collide. Set it for Prometheus.
  health_host: hostName().default('127.0.0.1'),
  health_port: port().default(0),
}).superRefine((skills, ctx) => {
  if (skills.run_timeout_default_ms > skills.run_timeout_max_ms) {
    ctx.addIssue({
      code: 'custom',
      path: ['run_timeout_default_ms'],
      message: `must not exceed skills.run_timeout_max_ms (${skills.run_timeout_max_ms}), got ${skills.run_timeout_default_ms}`,
    });
  }
});

export const SandboxProviderKind = { local: 'local', e2b: 'e2b' } as const;
export type SandboxProviderKind = (typeof SandboxProviderKind)[keyof typeof SandboxProviderKind];

/** none: a fresh sandbox per call; project_agent: one per project, agent and session id. */
export const ReuseMode = { none: 'none', project_agent: 'project_agent' } as const;
export type ReuseMode = (typeof ReuseMode)[keyof typeof ReuseMode];

export const sandboxSchema = section({
  provider: z.enum(SandboxProviderKind, expected('one of local, e2b')).default('local'),
  // local: the folder holding every sandbox's workdir, relative to the working directory unless absolute.
  root_dir: z.string(expected('a folder')).min(1, expected('a folder')).default('.data/sandboxes'),
  allowed_domains: z
    .array(z.string(expected('a host name')).min(1), expected('an array of host names'))
    .default([]),
  process_limit: positiveInt().default(512),
  file_size_bytes: positiveInt().default(1_073_741_824),
  // local: memory of one sandbox (a memory cgroup; RLIMIT_AS of each process where none can be made).
  memory_bytes: intAtLeast(16 * 1024 * 1024).default(2_147_483_648),
  // local: CPU of one sandbox in percent of one core (a cpu cgroup; RLIMIT_CPU where none can be made).
  cpu_percent: positiveInt().default(100),
  // local: host folders every sandbox may also read (read-only), e.g. tool installations in /opt.
  read_paths: z
    .array(
      z.string(expected('an absolute path')).startsWith('/', expected('an absolute path')),
      expected('an array of absolute paths'),
    )
    .default([]),
  // local: host uid and gid commands run as when the service runs as root (not 0).
  uid: positiveInt().default(65534),
  gid: positiveInt().default(65534),
  // local: how long a sandbox's resident executor waits for its next command; 0 starts a bwrap per command.
  warm_idle_ms: intAtLeast(0).default(60_000),
  reuse_mode: z.enum(ReuseMode, expected('one of none, project_agent')).default('project_agent'),
  idle_ttl_sec: positiveInt().default(1_800),
  hard_ttl_sec: positiveInt().default(43_200),
  lock_wait_ms: intAtLeast(0).default(30_000),
  lock_margin_ms: positiveInt().default(30_000),
}).superRefine((sandbox, ctx) => {
  if (sandbox.idle_ttl_sec > sandbox.hard_ttl_sec) {
    ctx.addIssue({
      code: 'custom',
      path: ['idle_ttl_sec'],
      message: `must not exceed sandbox.hard_ttl_sec (${sandbox.hard_ttl_sec}), got ${sandbox.idle_ttl_sec}`,
    });
  }
});

// Per-project quotas of the skills service, counted in Postgres so every instance sees one count;
// 0 turns a quota off. Generous by default: they stop one tenant from taking the whole host, not
// ordinary use.
export const quotasSchema = section({
  // skills-service calls (skills.* and builtin.*) of one project in flight at once, over all
  // instances. Off by default: it costs a query per call serialized per project (a third to a half
  // of one project's throughput at 64 in flight), and only binds below tools.concurrency times
  // the instances.
  calls_per_project: intAtLeast(0).default(0),
  // Live sandboxes (state.sandboxes rows `active`) of one project: sessions and calls' own.
  sandboxes_per_project: intAtLeast(0).default(64),
  // run_cmd_async, run_service and start_job heads of one project `running` at once.
  running_tasks_per_project: intAtLeast(0).default(64),
});

export const reaperSchema = section({
  interval_ms: positiveInt().default(30_000),
  batch_size: positiveInt().default(100),
  concurrency: positiveInt().default(4),
  // A claim must outlast the slowest destroy of a whole batch, or another reaper retakes rows
  // still being destroyed (harmless, destroy is idempotent, but wasted).
  claim_ttl_ms: intAtLeast(1000).default(300_000),
  retry_base_ms: positiveInt().default(5_000),
  retry_max_ms: positiveInt().default(900_000),
  health_host: hostName().default('127.0.0.1'),
  health_port: port().default(8091),
}).superRefine((reaper, ctx) => {
  if (reaper.retry_base_ms > reaper.retry_max_ms) {
    ctx.addIssue({
      code: 'custom',
      path: ['retry_base_ms'],
      message: `must not exceed reaper.retry_max_ms (${reaper.retry_max_ms}), got ${reaper.retry_base_ms}`,
    });
  }
});

const HTTP_URL_OR_EMPTY = /^$|^https?:\/\/\S+$/;

export const e2bSchema = section({
  // A secret: masked in logs. Required when sandbox.provider is "e2b".
  api_key: z.string(expected('a string')).default(''),
  // The REST API; empty means https://api.<domain>.
  api_url: matching(HTTP_URL_OR_EMPTY, 'an http(s) URL or an empty string').default(''),
  // Where sandboxes live: envd of sandbox <id> is https://49983-<id>.<domain>.
  domain: matching(/^[A-Za-z0-9.-]+(:\d+)?$/, 'a domain name').default('e2b.app'),
  // One URL for every sandbox's envd (the sandbox is named in a header), for a proxy or a
  // test server; empty means the per-sandbox URL above.
  sandbox_url: matching(HTTP_URL_OR_EMPTY, 'an http(s) URL or an empty string').default(''),
  template: z.string(expected('a template name or id')).min(1).default('base'),
  // Absolute folder inside the sandbox where commands run and files go.
  workdir: matching(/^\/\S*$/, 'an absolute path').default('/home/user/work'),
  request_timeout_ms: positiveInt().default(60_000),
  // E2B's own kill timer for a sandbox, renewed on each open; a backstop behind the reaper.
  sandbox_timeout_sec: positiveInt().default(3_600),
});

export const llmSchema = section({
  // Any OpenAI-compatible Chat Completions endpoint: OpenAI, OpenRouter, vLLM, Ollama, LiteLLM.
  base_url: matching(/^https?:\/\/\S+$/, 'an http(s) URL').default('https://api.openai.com/v1'),
  // A secret: set it through CG__LLM__API_KEY. Empty sends a placeholder (local servers need none).
  api_key: z.string(expected('a string')).default(''),
  // The model of profiles that name none.
  model: z.string(expected('a model name')).min(1, expected('a model name')).default('gpt-4o-mini'),
  max_retries: intAtLeast(0).default(4),
  retry_base_ms: positiveInt().default(500),
  retry_max_ms: positiveInt().default(20_000),
  request_timeout_ms: positiveInt().default(120_000),
  stream: z.boolean(expected('true or false')).default(true),
}).superRefine((llm, ctx) => {
  if (llm.retry_base_ms > llm.retry_max_ms) {
    ctx.addIssue({
      code: 'custom',
      path: ['retry_base_ms'],
      message: `must not exceed llm.retry_max_ms (${llm.retry_max_ms}), got ${llm.retry_base_ms}`,
    });
  }
});

export const agentSchema = section({
  concurrency: positiveInt().default(16),
  max_steps_per_turn: positiveInt().default(16),
  tool_deadline_ms: positiveInt().default(120_000),
  deadline_grace_ms: intAtLeast(0).default(5_000),
  scan_interval_ms: positiveInt().default(1_000),
  // A step's lease is renewed while it runs; an instance that dies loses its turns after this long.
  lease_ttl_ms: intAtLeast(1000).default(30_000),
  ack_wait_ms: intAtLeast(1000).default(30_000),
  max_deliver: positiveInt().default(20),
  max_step_attempts: positiveInt().default(5),
  tool_result_max_chars: positiveInt().default(32_000),
  // Tools offered to the model in full; an agent with more also gets list_available_tools.
  prompt_tools_max: positiveInt().default(32),
  // Tokens (about 4 characters each) a thread's earlier turns may take in a turn's prompt.
  thread_history_tokens: positiveInt().default(16_000),
  // Messages of one thread that may wait for its running turn; one more is refused (409).
  thread_queue_max: positiveInt().default(20),
  // GET /healthz and GET /metrics of the worker process; 0 (the default) picks a free port.
  health_host: hostName().default('127.0.0.1'),
  health_port: port().default(0),
});

// Retention of the execution log: finished executions and their cards older than this are
// deleted in batches by the sandbox-reaper daemon. 0 keeps them for ever.
export const retentionSchema = section({
  executions_max_age_hours: intAtLeast(0).default(0),
  // Rows one delete statement removes; each batch is its own short transaction.
  batch_size: positiveInt().default(1_000),
  // How often the daemon looks for expired executions.
  interval_sec: positiveInt().default(300),
});

// The registry's built-in tools that keep data per project: files and searchable documents.
export const builtinSchema = section({
  file_max_bytes: positiveInt().default(1_048_576),
  files_per_project: positiveInt().default(10_000),
  files_total_bytes: positiveInt().default(104_857_600),
  document_max_bytes: positiveInt().default(262_144),
  documents_per_request: positiveInt().default(1_000),
  documents_per_project: positiveInt().default(100_000),
  search_default_limit: positiveInt().default(10),
  // builtin.execute_python: a fresh sandbox per call, no network, these limits.
  python_timeout_ms: positiveInt().default(5_000),
  python_timeout_max_ms: positiveInt().default(30_000),
  python_memory_bytes: positiveInt().default(268_435_456),
});

// Schedules fire from every api instance: each pass claims due schedules (row locks skip what
// another instance holds), so more instances never fire a tick twice.
export const schedulesSchema = section({
  // Whether this api instance fires schedules at all (routes work either way).
  enabled: z.boolean(expected('true or false')).default(true),
  // How often an instance looks for due schedules; a tick fires at most this late.
  poll_ms: intAtLeast(100).default(1_000),
  // A tick found later than this is missed (everything was down): the schedule's catch_up says
  // whether it fires once for the missed ticks or skips them.
  misfire_grace_ms: intAtLeast(1_000).default(60_000),
  // Schedules one pass fires at most, per instance.
  batch_size: positiveInt().default(100),
  max_per_project: positiveInt().default(1_000),
});

// The MCP facade as an OAuth 2.1 resource server (project keys keep working beside it). A
// section of its own, [mcp_oauth], not [mcp.oauth]: env overrides are two levels deep.
export const mcpOauthSchema = section({
  // The authorization server whose JWT access tokens are accepted; empty turns OAuth off.
  issuer: z.string(expected('a URL or ""')).default(''),
  // Where the issuer's signing keys are (its JWKS document).
  jwks_url: z.string(expected('a URL or ""')).default(''),
  // The api's public URL: a project's resource is <resource_base_url>/v1/projects/<p>/mcp.
  resource_base_url: z.string(expected('a URL or ""')).default(''),
  // The token claim that names the project.
  project_claim: z.string(expected('a claim name')).min(1).default('toolmesh_project'),
  // The scope a token needs (in its space-separated `scope` claim).
  scope: z.string(expected('a scope')).min(1).default('mcp'),
}).superRefine((o, ctx) => {
  if (o.issuer === '') return;
  for (const key of ['issuer', 'jwks_url', 'resource_base_url'] as const) {
    if (!URL.canParse(o[key])) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `must be a URL when mcp_oauth.issuer is set, got ${JSON.stringify(o[key])}`,
      });
    }
  }
});

/** OpenTelemetry traces: exported over OTLP/HTTP (protobuf-free JSON) when `endpoint` is set. */
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
export const catalogSchema = section({
  /** The folder; relative to the working directory when not absolute. "" = no catalog. */
  dir: z.string(expected('a folder or an empty string')).default(''),
});

// prefault, not default: a missing section is parsed from `{}` so its keys get their defaults.
export const configSchema = z
  .strictObject(
    {
      service: serviceSchema.prefault({}),
      log: logSchema.prefault({}),
      nats: natsSchema.prefault({}),
      postgres: postgresSchema.prefault({}),
      tools: toolsSchema.prefault({}),
      secrets: secretsSchema.prefault({}),
      api: apiSchema.prefault({}),
      artifacts: artifactsSchema.prefault({}),
      skills: skillsSchema.prefault({}),
      sandbox: sandboxSchema.prefault({}),
      e2b: e2bSchema.prefault({}),
      reaper: reaperSchema.prefault({}),
      quotas: quotasSchema.prefault({}),
      llm: llmSchema.prefault({}),
      agent: agentSchema.prefault({}),
      schedules: schedulesSchema.prefault({}),
      builtin: builtinSchema.prefault({}),
      retention: retentionSchema.prefault({}),
      mcp_oauth: mcpOauthSchema.prefault({}),
      otel: otelSchema.prefault({}),
      catalog: catalogSchema.prefault({}),
    },
    expected('a table'),
  )
  .superRefine((config, ctx) => {
    if (config.sandbox.provider === SandboxProviderKind.e2b && config.e2b.api_key === '') {
      ctx.addIssue({
        code: 'custom',
        path: ['e2b', 'api_key'],
        message: 'must be set when sandbox.provider is "e2b", got ""',
      });
    }
  });

export type Config = z.infer<typeof configSchema>;
export type ServiceConfig = z.infer<typeof serviceSchema>;
export type LogConfig = z.infer<typeof logSchema>;
export type NatsConfig = z.infer<typeof natsSchema>;
export type PostgresConfig = z.infer<typeof postgresSchema>;
export type ToolsConfig = z.infer<typeof toolsSchema>;
export type ApiConfig = z.infer<typeof apiSchema>;
export type SecretsConfig = z.infer<typeof secretsSchema>;
export type ArtifactsConfig = z.infer<typeof artifactsSchema>;
export type SkillsConfig = z.infer<typeof skillsSchema>;
export type SandboxConfig = z.infer<typeof sandboxSchema>;
export type E2bConfig = z.infer<typeof e2bSchema>;
export type ReaperConfig = z.infer<typeof reaperSchema>;
export type QuotasConfig = z.infer<typeof quotasSchema>;
export type LlmConfig = z.infer<typeof llmSchema>;
export type AgentConfig = z.infer<typeof agentSchema>;
export type McpOauthConfig = z.infer<typeof mcpOauthSchema>;
export type SchedulesConfig = z.infer<typeof schedulesSchema>;
export type BuiltinConfig = z.infer<typeof builtinSchema>;
export type RetentionConfig = z.infer<typeof retentionSchema>;
export type OtelConfig = z.infer<typeof otelSchema>;
export type CatalogConfig = z.infer<typeof catalogSchema>;

/** The configuration with nothing set; the type of each default is the type of its key. */
export const configDefaults: Config = configSchema.parse({});
