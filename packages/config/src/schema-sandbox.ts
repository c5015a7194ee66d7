// The configuration of where work runs and what it leaves: artifacts, skills, sandboxes (local
// or E2B), the reaper and the execution log's retention.
import { z } from 'zod';
import {
  expected,
  positiveInt,
  hostName,
  port,
  intAtLeast,
  matching,
  section,
  HTTP_URL_OR_EMPTY,
  notAbove,
} from './schema-kit.ts';

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
  notAbove(ctx, 'skills', skills, 'run_timeout_default_ms', 'run_timeout_max_ms');
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
  // local: bytes one sandbox's files may take (its workdir; each command's private /tmp too).
  disk_bytes: intAtLeast(1024 * 1024).default(10_737_418_240),
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
  notAbove(ctx, 'sandbox', sandbox, 'idle_ttl_sec', 'hard_ttl_sec');
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
  // GET /healthz and /metrics; port 0 (the default) picks a free one, logged at start.
  health_host: hostName().default('127.0.0.1'),
  health_port: port().default(0),
  // Installed environments (skill dependencies, MCP server packages) nothing refers to any more
  // are removed once they have not been written for this long; 0 keeps them all.
  unused_envs_after_sec: intAtLeast(0).default(3600),
}).superRefine((reaper, ctx) => {
  notAbove(ctx, 'reaper', reaper, 'retry_base_ms', 'retry_max_ms');
});

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

// Retention of the execution log: finished executions and their cards older than this are
// deleted in batches by the sandbox-reaper daemon. 0 keeps them for ever.
export const retentionSchema = section({
  executions_max_age_hours: intAtLeast(0).default(0),
  // Rows one delete statement removes; each batch is its own short transaction.
  batch_size: positiveInt().default(1_000),
  // How often the daemon looks for expired executions.
  interval_sec: positiveInt().default(300),
  // Idempotency-Key records of POST /executions older than this are forgotten (the key is new
  // again) and deleted by the same daemon; also deleted with their execution.
  idempotency_keys_max_age_hours: positiveInt().default(24),
});
