// The two ways a skills service runs, for suites that must hold in both (the red team): as root
// (in this process: commands dropped to nobody, cgroups where delegated) and as an unprivileged
// user (a child process started through setpriv as nobody, with no groups and no capabilities:
// rlimits instead of cgroups). A suite that is not root cannot make the root mode: it gets the
// unprivileged mode only, as its own user, and the mode's name says so (never a skip).
import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { SkillsMesh } from './skills-mesh.ts';

const run = promisify(execFile);
export const isRoot = process.getuid?.() === 0;
export const NOBODY = { uid: 65534, gid: 65534 } as const;

export type Mode = 'root' | 'unprivileged';
export const serviceModes: { mode: Mode; name: string }[] = isRoot
  ? [
      { mode: 'root', name: 'service as root' },
      { mode: 'unprivileged', name: 'service as an unprivileged user (nobody)' },
    ]
  : [
      {
        mode: 'unprivileged',
        name: 'service as an unprivileged user (this suite is not root: no root mode here)',
      },
    ];

export interface ModeService {
  /** The service's own sandbox folder (removed by stop). */
  sandboxRoot: string;
  /** The uid the service runs as. */
  uid: number;
  stop(): Promise<void>;
}

/**
 * Starts the mesh's skills service in `mode` on a sandbox folder of its own. As nobody, the
 * service owns that folder and the artifact store, and nothing else it did not already reach.
 */
export async function startSkillsAs(
  mesh: SkillsMesh,
  mode: Mode,
  env: Record<string, string>,
): Promise<ModeService> {
  const sandboxRoot = await mkdtemp(join(tmpdir(), `toolmesh-${mode}-sandboxes-`));
  const full = {
    CG__SERVICE__INSTANCE_ID: `${mode}-${process.pid}-${Date.now()}`,
    ...env,
    CG__SANDBOX__ROOT_DIR: sandboxRoot,
  };
  const cleanup = () => rm(sandboxRoot, { recursive: true, force: true });
  if (mode === 'root') {
    const service = await mesh.startSkills(full);
    return { sandboxRoot, uid: 0, stop: async () => (await service.stop(5_000), cleanup()) };
  }
  let child: ChildProcess;
  // A temporary folder of its own: the host's /tmp holds root-owned sockets of earlier processes
  // (sandbox-runtime names them by pid), which nobody could not clear if its pid matched one.
  const ownTmp = await mkdtemp(join(tmpdir(), `toolmesh-${mode}-tmp-`));
  const cleanupAll = async () => {
    await cleanup();
    await rm(ownTmp, { recursive: true, force: true });
  };
  if (isRoot) {
    await chown(sandboxRoot, NOBODY.uid, NOBODY.gid);
    await chown(ownTmp, NOBODY.uid, NOBODY.gid);
    await run('chown', ['-R', `${NOBODY.uid}:${NOBODY.gid}`, mesh.api.env['CG__ARTIFACTS__ROOT']!]);
    child = await mesh.spawnSkills(
      { ...full, HOME: sandboxRoot, TMPDIR: ownTmp },
      { user: NOBODY },
    );
    // Positive control: the service really is nobody, without a capability.
    const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
    if (
      !/^Uid:\s+65534\s+65534\s+65534\s+65534$/m.test(status) ||
      !/^CapEff:\s+0+$/m.test(status)
    ) {
      throw new Error(`the unprivileged service is not nobody without capabilities:\n${status}`);
    }
  } else {
    child = await mesh.spawnSkills({ ...full, TMPDIR: ownTmp });
  }
  return {
    sandboxRoot,
    uid: isRoot ? NOBODY.uid : process.getuid!(),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      await cleanupAll();
    },
  };
}
