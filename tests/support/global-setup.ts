// Runs once before the test files (vitest `globalSetup`): where the tests' sandboxes live. As
// root, sandboxed commands run as `sandbox.uid` (65534), which cannot enter a checkout in a
// private folder (a clone in /root, 0700): the tests then keep their sandboxes where that uid can
// reach them, chosen exactly as `pnpm stack` chooses its own (scripts/stack-state.ts), in a
// folder apart from the stack's. The meshes and the test api pass it to every service they start
// (CG__SANDBOX__ROOT_DIR), unless a test names a folder of its own.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DATA, sandboxRootDir } from '../../scripts/stack-state.ts';

export default function setup(): void {
  if (process.env['CG__SANDBOX__ROOT_DIR']) return;
  const state = join(DATA, 'tests');
  mkdirSync(state, { recursive: true });
  process.env['CG__SANDBOX__ROOT_DIR'] = resolve(sandboxRootDir(state) ?? join(state, 'sandboxes'));
}
