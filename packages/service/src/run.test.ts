import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { createServiceLogger } from './run.ts';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, stream };
}

describe('createServiceLogger', () => {
  it('masks URL credentials and config secrets in messages, fields, bindings and errors', () => {
    const config = loadConfig({
      source: '',
      env: {
        CG__POSTGRES__URL: 'postgres://app:pg-s3cret@db:5432/mesh',
        CG__NATS__URL: 'nats://nats-t0ken@h:4222',
        CG__LLM__API_KEY: 'sk-live-abc123',
      },
    });
    const out = capture();
    const logger = createServiceLogger('test', config, out.stream);
    const child = logger.child({ url: config.nats.url });
    child.info({ dsn: config.postgres.url, nested: { k: ['sk-live-abc123'] } }, 'hello');
    const cause = new Error('password authentication failed for pg-s3cret');
    child.error(
      { err: new Error(`cannot connect to ${config.nats.url}`, { cause }) },
      'connect failed: postgres://x:y-secret@h',
    );
    const text = out.lines.join('');
    for (const secret of ['pg-s3cret', 'nats-t0ken', 'sk-live-abc123', 'y-secret']) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('postgres://app:***@db:5432/mesh');
    expect(text).toContain('nats://***@h:4222');
    expect(text).toContain('connect failed: postgres://x:***@h');
    expect(out.lines).toHaveLength(2);
    const err = JSON.parse(out.lines[1]!).err;
    expect(err.message).toBe(
      'cannot connect to nats://***@h:4222: password authentication failed for ***',
    );
    expect(err.stack).toEqual(expect.any(String));
  });
});
