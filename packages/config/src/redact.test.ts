import { describe, expect, it } from 'vitest';
import { createRedactor, loadConfig, redactConfig, redactUrls, secretsOf } from './index.ts';

describe('redactConfig', () => {
  it('masks the password in connection URLs and keeps the rest readable', () => {
    const config = loadConfig({
      source: '',
      env: {
        CG__POSTGRES__URL: 'postgres://app:s3cret@db.internal:5432/mesh',
        CG__NATS__URL: 'nats://svc:n4ts@h1:4222,nats://h2:4222',
      },
    });
    const safe = redactConfig(config);
    expect(safe.postgres.url).toBe('postgres://app:***@db.internal:5432/mesh');
    expect(safe.nats.url).toBe('nats://svc:***@h1:4222,nats://h2:4222');
    expect(JSON.stringify(safe)).not.toMatch(/s3cret|n4ts/);
    expect(safe.tools).toEqual(config.tools);
  });

  it('masks the E2B api key of a loaded config', () => {
    const config = loadConfig({
      source: '',
      env: { CG__SANDBOX__PROVIDER: 'e2b', CG__E2B__API_KEY: 'e2b_s3cret_key' },
    });
    expect(config.e2b.api_key).toBe('e2b_s3cret_key');
    const safe = redactConfig(config);
    expect(safe.e2b.api_key).toBe('***');
    expect(JSON.stringify(safe)).not.toContain('e2b_s3cret_key');
  });

  it('masks the LLM api key and credentials in its base URL', () => {
    const config = loadConfig({
      source: '',
      env: {
        CG__LLM__API_KEY: 'sk-live-abc123',
        CG__LLM__BASE_URL: 'https://user:pw123@llm.internal/v1',
      },
    });
    const safe = redactConfig(config);
    expect(safe.llm.api_key).toBe('***');
    expect(safe.llm.base_url).toBe('https://user:***@llm.internal/v1');
    expect(JSON.stringify(safe)).not.toMatch(/sk-live|pw123/);
    expect(safe.llm.max_retries).toBe(config.llm.max_retries);
  });

  it('does not change the config it was given', () => {
    const config = loadConfig({ source: '', env: { CG__POSTGRES__URL: 'postgres://a:b@h/db' } });
    redactConfig(config);
    expect(config.postgres.url).toBe('postgres://a:b@h/db');
  });

  it('masks a password holding characters a URL should have escaped', () => {
    const safe = redactConfig({ url: 'postgres://app:p@ss/w,rd@db:5432/mesh' });
    expect(safe.url).toBe('postgres://app:***@db:5432/mesh');
  });

  it('masks the NATS creds and account keys settings', () => {
    const config = loadConfig({
      env: { CG__NATS__CREDS: '/run/secrets/api.creds', CG__NATS__AUTH_KEYS: '{"v":1}' },
    });
    const shown = JSON.stringify(redactConfig(config));
    expect(shown).not.toContain('/run/secrets/api.creds');
    expect(shown).not.toContain('{"v":1}');
    expect(redactConfig(config).nats.creds).toBe('***');
  });

  it('masks every value under a key that names a secret, at any depth', () => {
    const safe = redactConfig({
      llm: {
        api_key: 'sk-1',
        auth: { bearer_token: 't', passwords: ['p1', 'p2'] },
        max_tokens: 4096,
      },
      gcs: { clientSecret: 'c', bucket: 'b', private_key_file: '' },
    });
    expect(safe).toEqual({
      llm: {
        api_key: '***',
        auth: { bearer_token: '***', passwords: ['***', '***'] },
        max_tokens: 4096,
      },
      gcs: { clientSecret: '***', bucket: 'b', private_key_file: '' },
    });
  });
});

describe('redactUrls', () => {
  it.each([
    ['postgres://app:s3cret@db:5432/mesh', 'postgres://app:***@db:5432/mesh'],
    ['postgres://app@db:5432/mesh', 'postgres://app@db:5432/mesh'],
    ['postgresql://h/db?user=app&password=s3cret', 'postgresql://h/db?user=app&password=***'],
    [
      'postgres://h/db?sslmode=require&sslpassword=k3y',
      'postgres://h/db?sslmode=require&sslpassword=***',
    ],
    ['nats://s3cr3t-token@h:4222', 'nats://***@h:4222'],
    ['nats://u:p@h1:4222,nats://tok3n@h2:4222', 'nats://u:***@h1:4222,nats://***@h2:4222'],
    ['nats://h1?token=abc,nats://h2', 'nats://h1?token=***,nats://h2'],
    ['wss://h/x?auth_token=abc&x=1#frag', 'wss://h/x?auth_token=***&x=1#frag'],
    ['https://api.example.com/v1?api_key=sk-1&q=ok', 'https://api.example.com/v1?api_key=***&q=ok'],
    ['https://ghp_abc@github.example/x', 'https://***@github.example/x'],
    ['https://llm.internal/v1', 'https://llm.internal/v1'],
    [
      'file:///work/node_modules/.pnpm/vitest@5.1.1_x/a.js:1:2',
      'file:///work/node_modules/.pnpm/vitest@5.1.1_x/a.js:1:2',
    ],
    ['https://h/a@b', 'https://h/a@b'],
    ['https://h:8080/a@b', 'https://h:8080/a@b'],
  ])('%s', (input, expected) => {
    expect(redactUrls(input)).toBe(expected);
  });

  it('masks URLs inside prose and keeps the prose', () => {
    expect(
      redactUrls('cannot connect to NATS at nats://svc:pw123@h:4222: connection refused'),
    ).toBe('cannot connect to NATS at nats://svc:***@h:4222: connection refused');
    expect(redactUrls('url "postgres://a:b1@h/db" failed')).toBe(
      'url "postgres://a:***@h/db" failed',
    );
  });
});

describe('createRedactor', () => {
  it('masks every secret of a config wherever it is quoted, and URL credentials', () => {
    const config = loadConfig({
      source: '',
      env: {
        CG__POSTGRES__URL: 'postgres://app:pg-p%40ss@db:5432/mesh',
        CG__NATS__URL: 'nats://nats-token-123@h1:4222',
        CG__LLM__API_KEY: 'sk-live-abc123',
        CG__SANDBOX__PROVIDER: 'e2b',
        CG__E2B__API_KEY: 'e2b_s3cret_key',
        CG__API__ADMIN_KEY: 'admin-key-0123456789abcdefghij',
      },
    });
    const secrets = secretsOf(config);
    expect(secrets).toEqual(
      expect.arrayContaining([
        'pg-p%40ss',
        'pg-p@ss',
        'nats-token-123',
        'sk-live-abc123',
        'e2b_s3cret_key',
        'admin-key-0123456789abcdefghij',
      ]),
    );
    expect(secrets).not.toContain('app');
    const r = createRedactor(secrets);
    const line = r.text(
      'password authentication failed (pg-p@ss); key sk-live-abc123 refused; see http://u:x1@h',
    );
    expect(line).toBe('password authentication failed (***); key *** refused; see http://u:***@h');
    expect(createRedactor(['pa"ss\\word']).text(JSON.stringify({ m: 'x pa"ss\\word y' }))).toBe(
      '{"m":"x *** y"}',
    );
    expect(r.text('{"a":["e2b_s3cret_key"],"b":{"c":"nats://nats-token-123@h"}}')).toBe(
      '{"a":["***"],"b":{"c":"nats://***@h"}}',
    );
  });
});
