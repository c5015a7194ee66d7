import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cg-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function errorOf(load: () => unknown): ConfigError {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected loadConfig to throw');
}

/** Loads `source` as if it were config.toml and returns the error it raises. */
function failure(source: string, env: Record<string, string> = {}): ConfigError {
  return errorOf(() => loadConfig({ path: 'config.toml', source, env }));
}

describe('loadConfig', () => {
  it('fills every key a file leaves out with its default', () => {
    const config = loadConfig({ source: '[tools]\nconcurrency = 8\n', env: {} });
    expect(config.tools.concurrency).toBe(8);
    expect(config.tools.max_deliver).toBe(50);
    expect(config.postgres.pool_max).toBe(10);
    expect(config.log.level).toBe('info');
  });

  it('applies environment overrides by the type of the key, over the file', () => {
    const config = loadConfig({
      source: '[tools]\nconcurrency = 8\n[service]\ninstance_id = "from-file"\n',
      env: {
        CG__TOOLS__CONCURRENCY: '128',
        CG__NATS__MAX_RECONNECT_ATTEMPTS: '-1',
        CG__Postgres__Url: 'postgres://app:pw@db:5432/mesh',
        CG__LOG__LEVEL: 'debug',
        CG__SERVICE__INSTANCE_ID: 'worker-1',
        CG__TOOLS__maxTimeoutMs: '7200000',
        HOME: '/root',
        CG__TOOLS__RETRY_BASE_MS: undefined,
      },
    });
    expect(config.tools.concurrency).toBe(128);
    expect(config.nats.max_reconnect_attempts).toBe(-1);
    expect(config.postgres.url).toBe('postgres://app:pw@db:5432/mesh');
    expect(config.log.level).toBe('debug');
    expect(config.service.instance_id).toBe('worker-1');
    expect(config.tools.max_timeout_ms).toBe(7_200_000);
    expect(config.tools.retry_base_ms).toBe(250);
  });

  it('reads the file CG_CONFIG names and reports errors under that name', () => {
    const file = join(dir, 'staging.toml');
    writeFileSync(file, '[nats]\nsubject_root = "staging"\n');
    expect(loadConfig({ env: { CG_CONFIG: file } }).nats.subject_root).toBe('staging');

    writeFileSync(file, '[nats]\n\nsubject_root = "a.b"\n');
    expect(() => loadConfig({ env: { CG_CONFIG: file } })).toThrow(
      `${file}:3: nats.subject_root: expected 1-64 characters of [A-Za-z0-9_-], got "a.b"`,
    );
  });

  it('reports a file that cannot be read', () => {
    const err = errorOf(() => loadConfig({ path: '/nonexistent/config.toml', env: {} }));
    expect(err.code).toBe('invalid_config');
    expect(err.message).toBe('/nonexistent/config.toml: cannot read the file (ENOENT)');
  });
});

describe('loadConfig errors', () => {
  it('names the file, line and key of an unknown key', () => {
    const err = failure(
      '[service]\ninstance_id = "a"\n\n[nats]\n# the server\nurll = "nats://x"\n',
    );
    expect(err.code).toBe('invalid_config');
    expect(err.message).toBe('config.toml:6: nats.urll: unknown key');
    expect(err.issues).toEqual([
      { source: 'config.toml:6', key: 'nats.urll', message: 'unknown key' },
    ]);
  });

  it('finds the key in its own section when another section has the same key', () => {
    const err = failure(
      '[postgres]\nurl = "postgres://h/db"\n\n[nats]\nurl = "nats://a, nats://b"\n',
    );
    expect(err.message).toBe(
      'config.toml:5: nats.url: expected a NATS URL or a comma-separated list of them, got "nats://a, nats://b"',
    );
  });

  it('rejects an unknown section at its header line', () => {
    const err = failure('[log]\nlevel = "warn"\n\n[natss]\nurl = "nats://x"\n');
    expect(err.message).toBe('config.toml:4: natss: unknown section');
  });

  it('reports a value of the wrong type with its line', () => {
    const source = [
      '[tools]',
      'concurrency = "abc"',
      'lease_ttl_ms = 1000',
      '[log]',
      'level = "loud"',
    ];
    const err = failure(source.join('\n'));
    expect(err.message.split('\n')).toEqual([
      'config.toml:2: tools.concurrency: expected a positive integer, got "abc"',
      'config.toml:3: tools.lease_ttl_ms: expected an integer >= 3000, got 1000',
      'config.toml:5: log.level: expected one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ]);
  });

  it('rejects a fractional value for an integer key', () => {
    expect(failure('[tools]\nmax_deliver = 2.5\n').message).toBe(
      'config.toml:2: tools.max_deliver: expected a positive integer, got 2.5',
    );
  });

  it('rejects an unknown environment override', () => {
    const err = failure('', { CG__NATS__URLL: 'nats://x' });
    expect(err.message).toBe('env CG__NATS__URLL: nats.urll: unknown key');
  });

  it('rejects an override that does not name a section and a key', () => {
    expect(failure('', { CG__TOOLS: '1' }).message).toBe(
      'env CG__TOOLS: expected CG__<SECTION>__<KEY>',
    );
  });

  it('reports a bad environment value under the variable name', () => {
    const err = failure('[tools]\nconcurrency = 4\n', { CG__TOOLS__CONCURRENCY: 'abc' });
    expect(err.message).toBe(
      'env CG__TOOLS__CONCURRENCY: tools.concurrency: expected a positive integer, got "abc"',
    );
  });

  it('checks the default timeout against the maximum', () => {
    const err = failure('[tools]\ndefault_timeout_ms = 120000\nmax_timeout_ms = 60000\n');
    expect(err.message).toBe(
      'config.toml:2: tools.default_timeout_ms: must not exceed tools.max_timeout_ms (60000), got 120000',
    );
  });

  it('checks the cross-field rules when an override breaks them', () => {
    const err = failure('', { CG__TOOLS__RETRY_BASE_MS: '20000' });
    expect(err.message).toBe(
      'env CG__TOOLS__RETRY_BASE_MS: tools.retry_base_ms: must not exceed tools.retry_max_ms (10000), got 20000',
    );
    expect(failure('[tools]\nack_wait_ms = 500\n').message).toBe(
      'config.toml:2: tools.ack_wait_ms: expected an integer >= 1000, got 500',
    );
  });

  it('keeps the dedupe window within the stream max age, as JetStream requires', () => {
    const err = failure('[nats]\ncmd_max_age_sec = 60\n');
    expect(err.message).toBe(
      'config.toml:1: nats.dedupe_window_sec: must not exceed nats.cmd_max_age_sec and nats.evt_max_age_sec (60), got 120',
    );
  });

  it('requires an E2B api key when the e2b sandbox provider is chosen', () => {
    const err = failure('[sandbox]\nprovider = "e2b"\n');
    expect(err.message).toContain(
      'e2b.api_key: must be set when sandbox.provider is "e2b", got ""',
    );
    expect(failure('[sandbox]\nprovider = "docker"\n').message).toBe(
      'config.toml:2: sandbox.provider: expected one of local, e2b, got "docker"',
    );
  });

  it('reports a TOML syntax error with its line', () => {
    const err = failure('[nats]\nurl = "nats://x"\nsubject_root = \n');
    expect(err.message).toBe('config.toml:3: invalid TOML: invalid value');
    expect(err.cause).toBeDefined();
  });

  it('reports every problem at once', () => {
    const err = failure('[nats]\nurll = 1\n[foo]\n', { CG__TOOLS__CONCURRENCY: '0' });
    expect(err.issues.map((i) => `${i.source} ${i.key}`)).toEqual([
      'config.toml:2 nats.urll',
      'config.toml:3 foo',
      'env CG__TOOLS__CONCURRENCY tools.concurrency',
    ]);
  });

  it('refuses a short admin key by its key and length, never echoing it', () => {
    const err = failure('[api]\nadmin_key = "short-secret"\n');
    expect(err.issues).toEqual([
      expect.objectContaining({ source: 'config.toml:2', key: 'api.admin_key' }),
    ]);
    expect(err.message).toMatch(/at least 24 characters long.*got 12 characters/);
    expect(err.message).not.toContain('short-secret');
    const env = failure('', { CG__API__ADMIN_KEY: 'x'.repeat(23) });
    expect(env.message).toContain('env CG__API__ADMIN_KEY: api.admin_key');
    expect(
      loadConfig({ source: '', env: { CG__API__ADMIN_KEY: 'x'.repeat(24) } }).api.admin_key,
    ).toHaveLength(24);
    expect(loadConfig({ source: '', env: {} }).api.admin_key).toBe('');
  });

  it('limits failed authentications by default', () => {
    const api = loadConfig({ source: '', env: {} }).api;
    expect(api.auth_failure_limit).toBe(20);
    expect(api.auth_failure_window_sec).toBe(60);
  });

  it('sets per-project quotas by default (calls off); 0 turns one off, a negative one is refused', () => {
    expect(loadConfig({ source: '', env: {} }).quotas).toEqual({
      calls_per_project: 0,
      sandboxes_per_project: 64,
      running_tasks_per_project: 64,
      bus_max_bytes: 536_870_912,
      bus_max_messages: 1_000_000,
      bus_max_message_bytes: 1_048_576,
      bus_calls_per_minute: 60_000,
    });
    expect(
      loadConfig({ source: '[quotas]\nbus_calls_per_minute = 0\n', env: {} }).quotas
        .bus_calls_per_minute,
    ).toBe(0);
    // A project's command stream always has limits: 0 (unlimited in JetStream) is refused.
    expect(failure('', { CG__QUOTAS__BUS_MAX_MESSAGES: '0' }).message).toContain(
      'CG__QUOTAS__BUS_MAX_MESSAGES',
    );
    expect(
      loadConfig({ source: '[quotas]\nsandboxes_per_project = 0\n', env: {} }).quotas
        .sandboxes_per_project,
    ).toBe(0);
    expect(failure('', { CG__QUOTAS__CALLS_PER_PROJECT: '-1' }).message).toContain(
      'CG__QUOTAS__CALLS_PER_PROJECT',
    );
  });

  it("takes the MCP endpoints' allowed hosts and origins and refuses a malformed entry", () => {
    const api = loadConfig({
      source:
        '[api]\nallowed_hosts = ["api:8080", "mesh.example.com", "[::1]:9000", "my_api"]\n' +
        'allowed_origins = ["https://console.example.com", "http://10.0.0.5:8080"]\n',
      env: {},
    }).api;
    expect(api.allowed_hosts).toEqual(['api:8080', 'mesh.example.com', '[::1]:9000', 'my_api']);
    expect(api.allowed_origins).toEqual(['https://console.example.com', 'http://10.0.0.5:8080']);
    for (const bad of ['http://api:8080', 'api:0', 'api:99999', '*', '', 'a b', '[zz]:80', 'x/y']) {
      expect(failure('', { CG__API__ALLOWED_HOSTS: JSON.stringify([bad]) }).message).toBe(
        `env CG__API__ALLOWED_HOSTS: api.allowed_hosts.0: expected a host or host:port, got ${JSON.stringify(bad)}`,
      );
    }
    for (const bad of ['console.example.com', 'https://x/', 'https://x/path', 'null', 'ftp://x']) {
      expect(failure(`[api]\nallowed_origins = [${JSON.stringify(bad)}]\n`).message).toBe(
        `config.toml:2: api.allowed_origins.0: expected an origin (http(s)://host[:port]), got ${JSON.stringify(bad)}`,
      );
    }
    expect(failure('', { CG__API__ALLOWED_HOSTS: 'api:8080' }).message).toBe(
      'env CG__API__ALLOWED_HOSTS: api.allowed_hosts: expected an array of hosts, got "api:8080"',
    );
  });

  it('never echoes a secret or a URL password in its messages', () => {
    const key = failure('', { CG__SECRETS__KEY: 'not-base64-32-bytes-s3cret' });
    expect(key.message).toContain('env CG__SECRETS__KEY: secrets.key');
    expect(key.message).not.toContain('s3cret');
    const url = failure('', { CG__POSTGRES__URL: 'mysql://app:pw-s3cret@db/x' });
    expect(url.message).toContain('mysql://app:***@db/x');
    const broken = failure('', { CG__POSTGRES__URL: 'postgres:/app:pw-s3cret@db/x' });
    expect(broken.message).toContain('postgres.url');
    expect(`${url.message}${broken.message}`).not.toContain('s3cret');
    expect(failure('[tools]\nconcurrency = "x"\n').message).toContain('got "x"');
  });
});
