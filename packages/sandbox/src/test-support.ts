// Shared by the sandbox tests: a real local provider over a fresh folder, and a /proc scan that
// finds processes by a marker in their command line (to prove nothing of a command is left).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import {
  createLocalSandboxProvider,
  type LocalSandboxOptions,
  type LocalSandboxProvider,
} from './local.ts';

export interface ProviderFixture {
  readonly provider: LocalSandboxProvider;
}

/** One provider per test file, as one per process in a service. */
export function useLocalProvider(
  options: Omit<LocalSandboxOptions, 'rootDir'> = {},
): ProviderFixture {
  const fixture = {} as { provider: LocalSandboxProvider };
  let root = '';
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'toolmesh-sandbox-test-'));
    fixture.provider = await createLocalSandboxProvider({ ...options, rootDir: root });
  });
  afterAll(async () => {
    await fixture.provider?.close();
    if (root !== '') await rm(root, { recursive: true, force: true });
  });
  return fixture;
}

export function marker(): string {
  return `tm_marker_${randomBytes(8).toString('hex')}`;
}

/** Pids of live processes whose command line contains `text`, ourselves excluded. */
export async function processesWith(text: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) found.push(Number(entry));
  }
  return found;
}

/** Polls until `count` processes carry the marker (the positive control of a kill test). */
export async function waitForProcesses(
  text: string,
  count: number,
  timeoutMs = 10_000,
): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = await processesWith(text);
    if (pids.length >= count) return pids;
    if (Date.now() > deadline)
      throw new Error(`only ${pids.length} processes with ${text} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export const SESSION = { project: 'proj', agent: 'agent', session: 'sess' } as const;
