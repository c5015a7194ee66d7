// The mesh on a three-node NATS cluster: both streams and the lease bucket at replicas 3, two
// skills-service instances, 2,000 calls (500 of them published twice) while one NATS node is
// SIGKILLed and restarted mid-run, and then the same while the Postgres server restarts. Every
// call must end with exactly one card; none may be lost.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Header, createNames, encodeMessage } from '@toolmesh/protocol';
import {
  startLocalPostgres,
  startTestNatsCluster,
  type LocalPostgres,
  type TestNatsCluster,
} from '@toolmesh/testing';
import { startMesh, type Mesh } from './support/mesh.ts';

const CALLS = 2_000;
const isDuplicated = (i: number) => i % 4 === 0; // 500 of 2,000

let cluster: TestNatsCluster;
beforeAll(async () => {
  cluster = await startTestNatsCluster({ nodes: 3 });
}, 120_000);
afterAll(async () => {
  await cluster?.close();
});

/** Publishes CALLS echo calls, a quarter of them twice, retrying a publish the cluster refused. */
async function publishAll(
  mesh: Mesh,
  scope: { project: string; channel: string },
  ids: string[],
  onProgress: (published: number) => Promise<void>,
): Promise<void> {
  const js = jetstream(mesh.nc);
  const subject = mesh.client.subjects.toolCall({ ...scope, target: 'builtin', tool: 'echo' });
  // A publish can fail while its node is down or a stream leader moves: a caller sends it again
  // under the same ids, and JetStream's duplicate window keeps it one message.
  const retry = async <T>(send: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await send();
      } catch (err) {
        if (attempt >= 60) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  };
  for (let start = 0; start < CALLS; start += 50) {
    await Promise.all(
      ids.slice(start, start + 50).flatMap((id, k) => {
        const i = start + k;
        const sends: Promise<unknown>[] = [
          retry(() =>
            mesh.client.publishToolCall({
              ...scope,
              tool: 'builtin.echo',
              toolCallId: id,
              arguments: { i },
            }),
          ),
        ];
        if (isDuplicated(i)) {
          const h = headers();
          h.set(Header.toolCallId, id);
          const body = encodeMessage('tool_call', {
            v: 1,
            tool_call_id: id,
            tool_name: 'builtin.echo',
            arguments: { i },
          });
          sends.push(retry(() => js.publish(subject, body, { headers: h, msgID: `dup-${id}` })));
        }
        return sends;
      }),
    );
    await onProgress(Math.min(start + 50, CALLS));
  }
}

async function expectOneCardEach(mesh: Mesh, project: string, ids: string[]): Promise<void> {
  const count = async () =>
    Number(
      (
        await mesh.store.pool.query<{ n: string }>(
          `SELECT count(DISTINCT tool_call_id) AS n FROM cards WHERE project_id = $1 AND kind = 'tool.result'`,
          [project],
        )
      ).rows[0]?.n ?? 0,
    );
  const deadline = Date.now() + 180_000;
  while ((await count()) < ids.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
  }
  const { rows } = await mesh.store.pool.query<{ tool_call_id: string; n: string; status: string }>(
    `SELECT c.tool_call_id, count(*) AS n, min(e.status) AS status
       FROM cards c JOIN state.tool_executions e
         ON e.project_id = c.project_id AND e.tool_call_id = c.tool_call_id
      WHERE c.project_id = $1 AND c.kind = 'tool.result' GROUP BY c.tool_call_id`,
    [project],
  );
  expect(rows.length).toBe(ids.length); // none lost
  expect(rows.filter((r) => r.n !== '1')).toEqual([]); // one card each
  expect(rows.filter((r) => r.status !== 'succeeded')).toEqual([]);
  const have = new Set(rows.map((r) => r.tool_call_id));
  expect(ids.filter((id) => !have.has(id))).toEqual([]);
}

it(
  'streams and the lease bucket have three replicas; a node SIGKILLed and restarted mid-run loses no call and files one card each',
  { timeout: 300_000 },
  async () => {
    const scope = { project: 'proj-cluster', channel: 'load' };
    const mesh = await startMesh(
      { CG__NATS__REPLICAS: '3', CG__TOOLS__LEASE_TTL_MS: '3000', CG__TOOLS__ACK_WAIT_MS: '3000' },
      { natsServer: cluster },
    );
    try {
      await mesh.startService();
      await mesh.startService();
      const jsm = await jetstreamManager(mesh.nc);
      const names = createNames(mesh.config.nats.subject_root);
      // The project's command stream as the api makes it with this configuration (replicas 3).
      await mesh.nats.provisionProject(scope.project, mesh.config);
      const streams = [
        names.projectCommandStream(scope.project),
        names.eventStream,
        `KV_${names.leaseBucket}`,
      ];
      for (const name of streams) {
        const info = await jsm.streams.info(name);
        expect(info.config.num_replicas, name).toBe(3);
        expect(1 + (info.cluster?.replicas?.length ?? 0), name).toBe(3);
      }
      const ids = Array.from({ length: CALLS }, (_, i) => `cl-${i}`);
      const victim = cluster.nodes[1]!;
      let killed = false;
      let restarted: Promise<void> | undefined;
      await publishAll(mesh, scope, ids, async (published) => {
        if (!killed && published >= 600) {
          killed = true;
          await victim.kill();
          restarted = new Promise((r) => setTimeout(r, 3_000)).then(() => victim.start());
        }
      });
      expect(killed).toBe(true);
      await restarted;
      await expectOneCardEach(mesh, scope.project, ids);
      // The restarted node caught up: every stream is again three current replicas. While a
      // stream elects its leader again its info request may go unanswered (a timeout): that is
      // "not yet", like a replica still behind.
      const deadline = Date.now() + 60_000;
      for (const name of streams) {
        for (;;) {
          let seen: unknown;
          try {
            const peers = (await jsm.streams.info(name)).cluster?.replicas ?? [];
            if (peers.length === 2 && peers.every((p) => p.current && !p.offline)) break;
            seen = peers;
          } catch (err) {
            seen = (err as Error).message;
          }
          if (Date.now() > deadline)
            throw new Error(`${name} replicas did not catch up: ${JSON.stringify(seen)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    } finally {
      await mesh.close();
    }
  },
);

it(
  'on the cluster, a Postgres restart mid-run loses no call and files one card each',
  { timeout: 300_000 },
  async () => {
    const scope = { project: 'proj-cluster-pg', channel: 'load' };
    const pg: LocalPostgres = await startLocalPostgres();
    const mesh = await startMesh(
      {
        CG__NATS__REPLICAS: '3',
        CG__TOOLS__RETRY_BASE_MS: '100',
        CG__TOOLS__RETRY_MAX_MS: '1000',
        CG__POSTGRES__CONNECT_TIMEOUT_MS: '1000',
      },
      { natsServer: cluster, databaseUrl: pg.url },
    );
    try {
      await mesh.startService();
      await mesh.startService();
      const ids = Array.from({ length: CALLS }, (_, i) => `pg-${i}`);
      let stopped = false;
      let restarted: Promise<void> | undefined;
      await publishAll(mesh, scope, ids, async (published) => {
        if (!stopped && published >= 600) {
          stopped = true;
          await pg.stop();
          restarted = new Promise((r) => setTimeout(r, 3_000)).then(() => pg.start());
        }
      });
      expect(stopped).toBe(true);
      await restarted;
      await expectOneCardEach(mesh, scope.project, ids);
    } finally {
      await mesh.close();
      await pg.close();
    }
  },
);
