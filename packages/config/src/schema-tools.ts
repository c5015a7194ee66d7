// The configuration of tool calls: the tool services' limits, per-project quotas, the built-in
// tools, the MCP facade's OAuth and the MCP server catalog.
import { z } from 'zod';
import {
  expected,
  positiveInt,
  hostName,
  port,
  intAtLeast,
  section,
  notAbove,
  intBetween,
} from './schema-kit.ts';

export const toolsSchema = section({
  concurrency: positiveInt().default(64),
  // Of those, the most one project may hold while a lighter project (under this cap, with a call
  // in flight or waiting, or one in the last second) is active; alone, or beside projects at the
  // cap, it may use all (round robin). 0: no cap.
  max_project_inflight: intAtLeast(0).default(8),
  max_call_bytes: positiveInt().default(262_144),
  max_result_bytes: positiveInt().default(524_288),
  // Largest arguments kept on an execution row; larger ones are kept as a size marker.
  execution_arguments_max_bytes: intAtLeast(0).default(8_192),
  // The deepest a call's arguments may nest (objects and arrays), over HTTP and the bus; deeper
  // fails nesting_too_deep at once. At most 1000: serializing deeper overflows the stack.
  max_arguments_depth: intBetween(1, 1_000).default(64),
  // The deepest a tool's parameters or output schema may nest, as JSON (registration, updates,
  // OpenAPI imports); deeper is 400 nesting_too_deep.
  max_schema_depth: intBetween(2, 1_000).default(100),
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
  // What an MCP server asks during a call when no MCP client can answer it: sampling is refused
  // unless this is on, then [llm] answers it (its model). The default of every project; a
  // project's settings (tools.mcp_sampling_llm) override it. Elicitation becomes an input request.
  mcp_sampling_llm: z.boolean().default(false),
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
  // Where the tools service answers GET /healthz; port 0 (the default) picks a free one, logged
  // at start, so two instances (or two `pnpm stack`s) on one host never collide.
  health_host: hostName().default('127.0.0.1'),
  health_port: port().default(0),
}).superRefine((tools, ctx) => {
  notAbove(ctx, 'tools', tools, 'default_timeout_ms', 'max_timeout_ms');
  notAbove(ctx, 'tools', tools, 'retry_base_ms', 'retry_max_ms');
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
  // Each project's command stream (its tool calls, cancels and wakeups, kept nats.cmd_max_age_sec):
  // stored bytes, stored messages and the largest message. A publish past one is refused by
  // JetStream and reported quota_exceeded (HTTP 429); nothing is stored. An admin may set a
  // project's own (PUT /v1/projects/:p/quotas).
  bus_max_bytes: positiveInt().default(536_870_912),
  bus_max_messages: positiveInt().default(1_000_000),
  bus_max_message_bytes: positiveInt().default(1_048_576),
  // Tool calls one project may start a minute, over every instance of the tools and skills
  // services (a bucket in Postgres holding a minute's worth); a call past it fails rate_limited
  // and runs nothing. An admin may set a project's own; 0 turns it off.
  bus_calls_per_minute: intAtLeast(0).default(60_000),
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

export const catalogSchema = section({
  /** The folder; relative to the working directory when not absolute. "" = no catalog. */
  dir: z.string(expected('a folder or an empty string')).default(''),
});
