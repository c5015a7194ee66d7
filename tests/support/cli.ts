// The `toolmesh` CLI as a child process against a running api: what the tests that drive a
// command end to end share. The environment is exactly `env` plus PATH.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export const CLI_MAIN = join(import.meta.dirname, '..', '..', 'packages/cli/src/main.ts');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `toolmesh <args>` to its end. */
export function runToolmesh(args: string[], env: Record<string, string>): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI_MAIN, ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
