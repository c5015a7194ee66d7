import { describe, expect, it } from 'vitest';
import { loadConfig, redactConfig } from './index.ts';

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
