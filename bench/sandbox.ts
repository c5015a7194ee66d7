// `pnpm bench sandbox`: skills.run_cmd of `true` in a warm session through the whole mesh
// (client SDK -> JetStream -> skills service -> bubblewrap sandbox -> result event), against the
// floor measured in the same run: a bare bubblewrap spawn of /bin/true. Also the sandbox alone
// (provider.exec in this process, no mesh), so the mesh's share and the sandbox's share show.
import type { ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { createClient } from '@toolmesh/client';
import { bareBwrapTrue, createLocalSandboxProvider } from '@toolmesh/sandbox';
import { spawnReady, ROOT_DIR, writeResult, stopChildren, benchServers, drive } from './support.ts';
import { summarize, table } from './stats.ts';

const N = Number(process.env['BENCH_N'] ?? 200);
const WARMUP = 10;

const { nats, db } = await benchServers();
const scratch = await mkdtemp(join(tmpdir(), 'toolmesh-bench-sandbox-'));
// mkdtemp makes it 0700; as root, sandboxed commands run as sandbox.uid, which must pass through.
await chmod(scratch, 0o711);
const children: ChildProcess[] = [];
const nc = await connect({ servers: nats.url, noAsyncTraces: true });
try {
  // --- the mesh ---
  children.push(
    await spawnReady(
      [join(ROOT_DIR, 'services/skills/src/main.ts')],
      {
        CG__NATS__URL: nats.url,
        CG__NATS__SUBJECT_ROOT: nats.root,
        CG__POSTGRES__URL: db.url,
        CG__ARTIFACTS__ROOT: join(scratch, 'artifacts'),
        CG__SANDBOX__ROOT_DIR: join(scratch, 'sandboxes'),
        CG__LOG__LEVEL: 'info',
      },
      'tool service started',
    ),
  );
  const client = createClient({ nc, root: nats.root });
  const runTrue = async () => {
    const r = await client.callTool({
      project: 'bench',
      channel: 'sandbox',
      tool: 'skills.run_cmd',
      arguments: { command: 'true', session_id: 'bench-warm' },
    });
    const exit = (r.content.result as { exit_code?: number } | undefined)?.exit_code;
    if (r.status !== 'succeeded' || exit !== 0) {
      throw new Error(`run_cmd ended ${r.status}: ${JSON.stringify(r.content)}`);
    }
  };
  await drive(WARMUP, 1, runTrue);
  const mesh = summarize((await drive(N, 1, runTrue)).latencies);

  // --- the sandbox alone, in this process ---
  const provider = await createLocalSandboxProvider({ rootDir: join(scratch, 'direct') });
  const sandbox = await provider.create({
    key: { project: 'bench', agent: '-', session: 'direct' },
  });
  const execTrue = async () => {
    const r = await sandbox.exec({ shell: 'true' }, { timeoutMs: 30_000 });
    if (r.exitCode !== 0) throw new Error(`exec(true) exited ${r.exitCode}: ${r.stderr.text}`);
  };
  await drive(WARMUP, 1, execTrue);
  const direct = summarize((await drive(N, 1, execTrue)).latencies);
  await provider.destroy(sandbox.id);
  await provider.close();

  // --- the floor ---
  await drive(WARMUP, 1, bareBwrapTrue);
  const floor = summarize((await drive(N, 1, bareBwrapTrue)).latencies);

  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const result = {
    p50_ms: mesh.p50_ms,
    p99_ms: mesh.p99_ms,
    floor_p50_ms: floor.p50_ms,
    floor_p99_ms: floor.p99_ms,
    ratio_p50: ratio(mesh.p50_ms, floor.p50_ms),
    ratio_p99: ratio(mesh.p99_ms, floor.p99_ms),
    sandbox_exec_p50_ms: direct.p50_ms,
    sandbox_exec_p99_ms: direct.p99_ms,
    mesh_overhead_p50_ms: Math.round((mesh.p50_ms - direct.p50_ms) * 1000) / 1000,
    calls: N,
    node: process.version,
    cpus: cpus().length,
    measured_at: new Date().toISOString(),
  };
  console.log(
    table([
      { run: 'skills.run_cmd true, warm session', 'p50 ms': mesh.p50_ms, 'p99 ms': mesh.p99_ms },
      { run: 'sandbox exec true (no mesh)', 'p50 ms': direct.p50_ms, 'p99 ms': direct.p99_ms },
      { run: 'floor: bare bwrap /bin/true', 'p50 ms': floor.p50_ms, 'p99 ms': floor.p99_ms },
    ]),
  );
  console.log(
    `\nratio to floor: p50 ${result.ratio_p50}x, p99 ${result.ratio_p99}x; ` +
      `mesh overhead over the sandbox alone: ${result.mesh_overhead_p50_ms} ms at p50`,
  );
  await writeResult('sandbox', result);
} finally {
  await stopChildren(children);
  await nc.close();
  await nats.cleanup();
  await db.cleanup();
  await rm(scratch, { recursive: true, force: true });
}
