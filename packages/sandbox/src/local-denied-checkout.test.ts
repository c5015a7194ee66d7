// Regression: a checkout inside a denied read root (a clone in /root or ~, the README's natural
// place) hid the runtime's seccomp helper from the sandbox, and every command failed with
// "apply-seccomp: No such file or directory". Reads are an allow-list now, so the checkout is
// always denied: the helper alone is re-allowed (or, as root, its copy under the sandboxes'
// folder); the checkout stays unreadable.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './provider.ts';
import { SESSION, useLocalProvider } from './test-support.ts';

const CHECKOUT = join(import.meta.dirname, '..', '..', '..');
const fixture = useLocalProvider();
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await fixture.provider.create({ key: SESSION });
});
afterAll(async () => {
  await sandbox?.destroy();
});

describe('local sandbox with the checkout under a denied read root', () => {
  it('runs commands', async () => {
    const result = await sandbox.exec({ argv: ['echo', 'ok'] }, { timeoutMs: 10_000 });
    expect(result.stderr.text).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout.text).toBe('ok\n');
  });

  it('still cannot read the checkout', async () => {
    const result = await sandbox.exec(
      { argv: ['cat', join(CHECKOUT, 'package.json')] },
      { timeoutMs: 10_000 },
    );
    expect(result.exitCode).not.toBe(0);
    expect(result.stdout.text).toBe('');
  });
});
