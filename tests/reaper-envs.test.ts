// Installed environments nothing uses any more, removed by the sandbox-reaper: real local build
// sandboxes holding an environment's files, state.skill_envs rows pointing at them, and the
// skills and MCP servers that do (or no longer do) refer to them, in two projects. What is still
// referred to, by its own project, stays; so does anything written recently or still building.
// A failed destroy is reported and the pass goes on.
import { createHash, randomUUID } from 'node:crypto';
import { access, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { collectUnusedEnvs } from '../services/sandbox-reaper/src/envs.ts';
import { startReaperService } from '../services/sandbox-reaper/src/app.ts';
import type { Destroyers } from '../services/sandbox-reaper/src/providers.ts';
import { countingDestroyers, startReaperWorld, type ReaperWorld } from './support/reaper-rows.ts';

let world: ReaperWorld;
const A = 'env-gc-a';
const B = 'env-gc-b';

beforeAll(async () => {
  world = await startReaperWorld();
  for (const p of [A, B]) {
    await world.store.pool.query(
      `INSERT INTO resource.projects (project_id, name) VALUES ($1, $1)`,
      [p],
    );
  }
}, 60_000);
afterAll(async () => {
  await world?.close();
});

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const npmVersion = (identifier: string, version: string) =>
  sha(`npm\u0000${identifier}\u0000${version}`);

interface Env {
  project: string;
  skill: string;
  version: string;
  sandboxId: string;
  folder: string;
}

/** A ready environment built `ageSec` ago in a real sandbox of its own, with a file in it. */
async function env(
  project: string,
  skill: string,
  version: string,
  o: { ageSec?: number; status?: 'ready' | 'failed' | 'building' } = {},
): Promise<Env> {
  const sb = await world.provider.create({
    key: { project, agent: `env-build-${randomUUID().slice(0, 8)}`, session: 'build' },
  });
  const location = `${sb.workdir}/env`;
  await mkdir(join(location, 'venv'), { recursive: true });
  await writeFile(join(location, 'venv', 'installed.txt'), 'a package');
  await sb.close();
  await world.store.pool.query(
    `INSERT INTO state.skill_envs (project_id, skill_name, version, provider, status, kinds,
       owner_instance, lease_until, location, sandbox_id, updated_at)
     VALUES ($1, $2, $3, 'local', $4, '{python}', 'builder', now(), $5, $6,
       now() - make_interval(secs => $7::float8))`,
    [project, skill, version, o.status ?? 'ready', location, sb.id, o.ageSec ?? 7200],
  );
  return { project, skill, version, sandboxId: sb.id, folder: join(world.rootDir, sb.id) };
}

async function skill(project: string, name: string, version: string): Promise<void> {
  const id = randomUUID();
  await world.store.pool.query(
    `INSERT INTO resource.skills (skill_id, project_id, name, description) VALUES ($1, $2, $3, 'd')`,
    [id, project, name],
  );
  await world.store.pool.query(
    `INSERT INTO resource.skill_versions (skill_id, version, storage_uri, size_bytes, description,
       front_matter, files)
     VALUES ($1, $2, 'mem://x', 1, 'd', '{}', 1)`,
    [id, version],
  );
}

async function mcpServer(project: string, name: string, identifier: string, version: string) {
  await world.store.pool.query(
    `INSERT INTO resource.mcp_servers (server_id, project_id, name, transport, command, package)
     VALUES ($1, $2, $3, 'stdio', 'node', $4)`,
    [randomUUID(), project, name, { registry_type: 'npm', identifier, version }],
  );
}

const rowsLeft = async () =>
  (
    await world.store.pool.query<{ project_id: string; skill_name: string; version: string }>(
      `SELECT project_id, skill_name, version FROM state.skill_envs ORDER BY 1, 2, 3`,
    )
  ).rows;
const exists = (folder: string) =>
  access(folder).then(
    () => true,
    () => false,
  );
/** One pass over environments unwritten for an hour. */
const collect = (destroyers: Destroyers) =>
  collectUnusedEnvs({
    store: world.store,
    destroyers,
    olderThanMs: 3_600_000,
    batchSize: 100,
    logger: pino({ level: 'silent' }),
  });
const keyOf = (e: Env) => ({ project_id: e.project, skill_name: e.skill, version: e.version });

it('removes what no skill version or MCP server of its project refers to, and nothing else', async () => {
  const v1 = sha('skill v1');
  const v2 = sha('skill v2');
  // Skills: a version that exists keeps its environment (active or not); a deleted skill's goes.
  await skill(A, 'kept-skill', v1);
  const keptSkill = await env(A, 'kept-skill', v1);
  const deletedSkill = await env(A, 'deleted-skill', v2);
  // The same skill name and version in project B, where no such skill exists: B's row goes.
  const otherProjectsSkill = await env(B, 'kept-skill', v1);
  // MCP packages: the version a server of the project runs stays; an older one and another
  // project's copy (no server there) go.
  await mcpServer(A, 'env-mcp', '@acme/env-mcp', '1.0.0');
  const running = await env(A, 'mcp-npm:@acme/env-mcp', npmVersion('@acme/env-mcp', '1.0.0'));
  const older = await env(A, 'mcp-npm:@acme/env-mcp', npmVersion('@acme/env-mcp', '0.9.0'));
  const otherProjectsPkg = await env(
    B,
    'mcp-npm:@acme/env-mcp',
    npmVersion('@acme/env-mcp', '1.0.0'),
  );
  // Unused but written moments ago, or still building: left alone.
  const recent = await env(A, 'fresh-skill', sha('fresh'), { ageSec: 10 });
  const building = await env(A, 'building-skill', sha('building'), { status: 'building' });
  const failed = await env(A, 'failed-skill', sha('failed'), { status: 'failed' });

  const { destroyers, calls } = countingDestroyers(world.provider);
  const pass = await collect(destroyers);
  expect(pass).toEqual({ deleted: 5, destroyed: 5, failed: 0 });

  const gone = [deletedSkill, otherProjectsSkill, older, otherProjectsPkg, failed];
  const kept = [keptSkill, running, recent, building];
  expect(await rowsLeft()).toEqual(
    kept
      .map(keyOf)
      .sort((x, y) =>
        `${x.project_id}${x.skill_name}${x.version}`.localeCompare(
          `${y.project_id}${y.skill_name}${y.version}`,
        ),
      ),
  );
  for (const e of gone) {
    expect(await exists(e.folder), e.skill).toBe(false);
    expect(calls.get(e.sandboxId)).toBe(1);
  }
  for (const e of kept) {
    expect(await exists(join(e.folder, 'work', 'env', 'venv', 'installed.txt')), e.skill).toBe(
      true,
    );
    expect(calls.has(e.sandboxId)).toBe(false);
  }

  // A second pass finds nothing more.
  expect(await collect(destroyers)).toEqual({ deleted: 0, destroyed: 0, failed: 0 });
});

it('reports a destroy that fails and goes on with the others', async () => {
  const first = await env(A, 'gone-one', sha('one'));
  const second = await env(A, 'gone-two', sha('two'));
  const { destroyers } = countingDestroyers(world.provider, (id) =>
    id === first.sandboxId ? 1 : 0,
  );
  const pass = await collect(destroyers);
  expect(pass).toEqual({ deleted: 2, destroyed: 1, failed: 1 });
  expect(await exists(second.folder)).toBe(false);
  // The row is gone (no session mounts it again); the folder that could not be removed is left.
  expect((await rowsLeft()).some((r) => r.skill_name === 'gone-one')).toBe(false);
  expect(await exists(first.folder)).toBe(true);
});

it('runs after every reaper pass of the daemon, as configured', async () => {
  const e = await env(B, 'daemon-skill', sha('daemon'), { ageSec: 120 });
  const config = loadConfig({
    env: {
      CG__POSTGRES__URL: world.dbUrl,
      CG__SANDBOX__ROOT_DIR: world.rootDir,
      CG__REAPER__HEALTH_PORT: '0',
      CG__REAPER__INTERVAL_MS: '60000',
      CG__REAPER__UNUSED_ENVS_AFTER_SEC: '60',
    },
  });
  const { destroyers } = countingDestroyers(world.provider);
  const reaper = await startReaperService(config, pino({ level: 'silent' }), { destroyers });
  try {
    for (let i = 0; (await exists(e.folder)) && i < 200; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(await exists(e.folder)).toBe(false);
    expect((await rowsLeft()).some((r) => r.skill_name === 'daemon-skill')).toBe(false);
  } finally {
    await reaper.stop();
  }
});
