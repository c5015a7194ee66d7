// Reading `nats.creds` and `nats.auth_keys`: a path or the text inline, and errors that name
// the setting and the path but never echo what the file holds.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintUser } from './jwts.ts';
import { generateBusKeys } from './keys.ts';
import { loadBusKeys, loadCreds } from './load.ts';
import { servicePermissions } from './permissions.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolmesh-auth-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('loading NATS credentials', () => {
  it('reads creds and keys from a path or inline', async () => {
    const keys = generateBusKeys();
    const { creds } = await mintUser(keys, 'skills', servicePermissions('cg', 'skills'));
    const file = join(dir, 'skills.creds');
    await writeFile(file, creds);
    expect(loadCreds(file)).toBe(creds);
    expect(loadCreds(creds)).toBe(creds);
    const keysFile = join(dir, 'keys.json');
    await writeFile(keysFile, JSON.stringify(keys));
    expect(loadBusKeys(keysFile)).toEqual(keys);
    expect(loadBusKeys(JSON.stringify(keys))).toEqual(keys);
  });

  it('names the setting and path of a bad file, never its content', async () => {
    expect(() => loadCreds(join(dir, 'missing.creds'))).toThrow(
      /^nats\.creds: cannot read .*missing\.creds \(ENOENT\)$/,
    );
    const keys = generateBusKeys();
    const broken = { ...keys, account_signing_seed: 'not-a-seed' };
    let message = '';
    try {
      loadBusKeys(JSON.stringify(broken));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^nats\.auth_keys: NATS keys file is invalid at account_signing_seed/);
    for (const seed of [keys.operator_seed, keys.account_seed, 'not-a-seed'])
      expect(message).not.toContain(seed);
    const notCreds = join(dir, 'plain.txt');
    await writeFile(notCreds, 'SUAhello');
    expect(() => loadCreds(notCreds)).toThrow(/^nats\.creds is not a NATS \.creds file$/);
  });
});
