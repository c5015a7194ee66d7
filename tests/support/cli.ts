// The `toolmesh` CLI as a child process against a running api: what the tests that drive a
// command end to end share. The environment is exactly `env` plus PATH.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestApi } from '../../services/api/src/test/support.ts';

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

/**
 * A bus credential of the project, issued by the api (POST /bus-credentials) and written to a
 * `.creds` file in `dir`, as a user gives it to the CLI (TOOLMESH_BUS_CREDS).
 */
export async function issueBusCreds(
  api: Pick<TestApi, 'request'>,
  project: { id: string; key: string },
  dir: string,
): Promise<string> {
  const res = await api.request('POST', `/v1/projects/${project.id}/bus-credentials`, {
    key: project.key,
    body: { name: 'cli' },
  });
  if (res.status !== 201) throw new Error(`issuing a bus credential failed: ${res.raw}`);
  const file = join(dir, `${project.id}.creds`);
  await writeFile(file, res.body.creds as string, { mode: 0o600 });
  return file;
}
