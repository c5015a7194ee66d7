// The red team's canaries: random text planted where a deployment keeps what a tenant must never
// read (the admin key under <checkout>/.data, another project's artifact under the artifact
// root, a file in the host's /tmp), so a test can assert none of it ever comes back. A checkout
// this user cannot write to (the suite run as another user) gets a stand-in data folder.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './mesh.ts';

export interface Canaries {
  /** The planted texts, and the one a test plants in another project's session itself. */
  secrets: { adminKey: string; artifact: string; hostTmp: string; otherProject: string };
  dataDir: string;
  adminKeyFile: string;
  hostTmpFile: string;
  /** Another project's artifact file under the artifact root. */
  artifactFile: string;
  remove(): Promise<void>;
}

const canary = () => `canary-${randomBytes(12).toString('hex')}`;

export async function plantCanaries(artifactsRoot: string, name: string): Promise<Canaries> {
  const secrets = {
    adminKey: canary(),
    artifact: canary(),
    hostTmp: canary(),
    otherProject: canary(),
  };
  const file = `${name}-${process.pid}`;
  let dataDir = join(REPO_ROOT, '.data');
  try {
    await mkdir(dataDir, { recursive: true });
    await writeFile(join(dataDir, `${file}-admin-key`), `${secrets.adminKey}\n`, { mode: 0o600 });
  } catch {
    dataDir = await mkdtemp(join(tmpdir(), 'toolmesh-redteam-data-'));
    await writeFile(join(dataDir, `${file}-admin-key`), `${secrets.adminKey}\n`, { mode: 0o600 });
  }
  const adminKeyFile = join(dataDir, `${file}-admin-key`);
  const artifactFile = join(artifactsRoot, 'artifacts', 'victim', 'data.txt');
  await mkdir(join(artifactsRoot, 'artifacts', 'victim'), { recursive: true });
  await writeFile(artifactFile, secrets.artifact);
  const hostTmpFile = join('/tmp', `toolmesh-${file}`);
  await writeFile(hostTmpFile, secrets.hostTmp);
  return {
    secrets,
    dataDir,
    adminKeyFile,
    hostTmpFile,
    artifactFile,
    remove: async () => {
      await rm(adminKeyFile, { force: true });
      if (dataDir !== join(REPO_ROOT, '.data')) await rm(dataDir, { recursive: true, force: true });
      await rm(hostTmpFile, { force: true });
    },
  };
}
