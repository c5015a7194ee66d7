// The api and a skills service on one NATS root, database and artifact store, with a sandbox
// folder of their own: what the skills.* tests need to upload a skill and run it.
import { spawnReady } from './procs.ts';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, rmdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { createSubjects, decodeMessage } from '@toolmesh/protocol';
import { pino } from 'pino';
import type { Client } from '@toolmesh/client';
import { loadConfig } from '@toolmesh/config';
import { startSkillsService, type SkillsService } from '../../services/skills/src/app.ts';
import { startTestApi, type TestApi } from '../../services/api/src/test/support.ts';
import { createTenantClient } from './tenants.ts';
import { zipFolder } from '@toolmesh/cli';

const exec = promisify(execFile);

export interface SkillsMesh {
  api: TestApi;
  /** The SDK as tenants use it: each project's calls on a bus credential of that project. */
  client: Client;
  /** The test's own connection, as the admin user: for checks no tenant may make. */
  nc: NatsConnection;
  project: { id: string; key: string };
  startSkills(extraEnv?: Record<string, string>): Promise<SkillsService>;
  /**
   * A skills service as a real child process (SIGKILL-able); resolves once it serves. With
   * `user`, it runs as that uid/gid (no supplementary groups, no capabilities) via setpriv.
   */
  spawnSkills(
    extraEnv?: Record<string, string>,
    opts?: { user?: { uid: number; gid: number } },
  ): Promise<ChildProcess>;
  /** Uploads a folder as a skill through the api; returns the version. */
  uploadSkill(dir: string): Promise<string>;
  close(): Promise<void>;
}

/** Collects the skills target's progress events (watch heartbeats) of the mesh's project. */
export function collectProgress(mesh: SkillsMesh): { events: unknown[]; sub: Subscription } {
  const subjects = createSubjects(mesh.api.config.nats.subject_root);
  const events: unknown[] = [];
  const sub = mesh.nc.subscribe(
    subjects.toolProgress({ project: mesh.project.id, channel: 'main', target: 'skills' }),
    { callback: (_e, m) => void events.push(decodeMessage('tool_progress', m.data)) },
  );
  return { events, sub };
}

const REPO_ROOT = join(import.meta.dirname, '..', '..');

/**
 * Where a child running as `user` finds the checkout: the checkout itself when the user can read
 * it, else a bind mount of it (in the child's own mount namespace, root only) under /run.
 */
async function checkoutViewFor(user: {
  uid: number;
  gid: number;
}): Promise<{ root: string; prefix: string[]; remove(): Promise<void> } | undefined> {
  const readable = await exec('setpriv', [
    `--reuid=${user.uid}`,
    `--regid=${user.gid}`,
    '--clear-groups',
    '--',
    'test',
    '-r',
    join(REPO_ROOT, 'services/skills/src/main.ts'),
  ]).then(
    () => true,
    () => false,
  );
  if (readable) return undefined;
  const root = await mkdtemp('/run/toolmesh-checkout-');
  await chmod(root, 0o755);
  return {
    root,
    prefix: [
      'unshare',
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      'mount --bind "$1" "$2" && shift 2 && exec "$@"',
      'sh',
      REPO_ROOT,
      root,
    ],
    remove: () => rmdir(root).catch(() => undefined),
  };
}

export async function startSkillsMesh(overrides: Record<string, string> = {}): Promise<SkillsMesh> {
  const sandboxRoot = await mkdtemp(join(tmpdir(), 'toolmesh-sandboxes-'));
  const api = await startTestApi({ CG__SANDBOX__ROOT_DIR: sandboxRoot, ...overrides });
  const nc = await api.nats.connect('admin');
  const client = createTenantClient(api.nats);
  const project = await api.createProject();
  const services: SkillsService[] = [];
  const children: ChildProcess[] = [];
  return {
    api,
    client,
    nc,
    project,
    startSkills: async (extraEnv = {}) => {
      const s = await startSkillsService(
        loadConfig({ env: api.serviceEnv('skills', extraEnv) }),
        pino({ level: api.config.log.level }),
      );
      services.push(s);
      return s;
    },
    spawnSkills: async (extraEnv = {}, opts = {}) => {
      const { user } = opts;
      const asUser =
        user === undefined
          ? []
          : ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--'];
      // A checkout the user cannot reach (a clone in /root, or under a 0700 temporary folder) is
      // bind-mounted for that child alone, in a mount namespace of its own, on a path it can.
      const view = user === undefined ? undefined : await checkoutViewFor(user);
      const main = join(view?.root ?? REPO_ROOT, 'services/skills/src/main.ts');
      const child = await spawnReady(
        main,
        api.serviceEnv('skills', { CG__LOG__LEVEL: 'info', ...extraEnv }),
        'tool service started',
        'skills',
        [...(view?.prefix ?? []), ...asUser],
      );
      children.push(child);
      if (view) child.once('exit', () => void view.remove());
      return child;
    },
    uploadSkill: async (dir) => {
      const boundary = '----toolmesh-skill';
      const payload = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="skill.zip"\r\nContent-Type: application/zip\r\n\r\n`,
        ),
        await zipFolder(dir),
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      const res = await api.request('POST', `/v1/projects/${project.id}/skills`, {
        key: project.key,
        payload,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      });
      if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.raw}`);
      return res.body.version.version as string;
    },
    close: async () => {
      for (const c of children) {
        if (c.exitCode === null && c.signalCode === null) {
          c.kill('SIGKILL');
          await once(c, 'exit');
        }
      }
      for (const s of services) await s.stop(5_000);
      await client.close();
      await api.close();
      await rm(sandboxRoot, { recursive: true, force: true });
    },
  };
}
