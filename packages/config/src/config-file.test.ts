// The root config.toml documents every key with its default. These tests keep the file and the
// schema from drifting apart: a key added to one and not the other fails here.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { configSchema, loadConfig } from './index.ts';

const rootFile = fileURLToPath(new URL('../../../config.toml', import.meta.url));
const rootSource = readFileSync(rootFile, 'utf8');

function schemaKeys(): string[] {
  return Object.entries(configSchema.shape).flatMap(([section, schema]) =>
    Object.keys(schema.unwrap().shape).map((key) => `${section}.${key}`),
  );
}

function fileKeys(table: Record<string, unknown>): string[] {
  return Object.entries(table).flatMap(([section, keys]) =>
    Object.keys(keys as Record<string, unknown>).map((key) => `${section}.${key}`),
  );
}

describe('root config.toml', () => {
  it('loads without error from the default path', () => {
    const config = loadConfig({ env: {} });
    expect(config.nats.url).toBe('nats://127.0.0.1:4222');
    expect(config.tools.concurrency).toBe(64);
  });

  it('lists every schema key and no other', () => {
    const table = parseToml(rootSource);
    expect(fileKeys(table).sort()).toEqual(schemaKeys().sort());
  });

  it('holds the schema defaults as its values', () => {
    expect(parseToml(rootSource)).toEqual(configSchema.parse({}));
  });

  it('has a comment line above every key', () => {
    const lines = rootSource.split('\n');
    const keyLines = lines.flatMap((line, i) => (/^[a-z_]+ = /.test(line) ? [i] : []));
    expect(keyLines).toHaveLength(schemaKeys().length);
    const uncommented = keyLines
      .filter((i) => !lines[i - 1]?.startsWith('# '))
      .map((i) => lines[i]);
    expect(uncommented).toEqual([]);
  });

  it('fills an empty instance_id with hostname-pid', () => {
    const config = loadConfig({ env: {} });
    const host = hostname().replace(/[^A-Za-z0-9_-]/g, '-');
    expect(config.service.instance_id).toBe(`${host}-${process.pid}`.slice(-64));
  });
});
