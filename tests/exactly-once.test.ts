// Regression guard for the mesh's central promise: every call ends with exactly one result
// card, even when calls are published twice and the service is SIGKILLed mid-stream.
import { jetstream } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Header, encodeMessage } from '@toolmesh/protocol';
import { startMesh, type Mesh } from './support/mesh.ts';
import { collectResults, type ResultCollector } from './support/results.ts';

const scope = { project: 'proj-eo', channel: 'load' };
const CALLS = 2_000;
const isDuplicated = (i: number) => i % 4 === 0; // 500 of 2,000

let mesh: Mesh;
let results: ResultCollector;
beforeAll(async () => {
  // Short lease and ack wait, so the killed instance's calls come back within seconds.
  mesh = await startMesh({ CG__TOOLS__LEASE_TTL_MS: '3000', CG__TOOLS__ACK_WAIT_MS: '2000' });
  results = await collectResults(mesh.nc, mesh.client.subjects, scope);
});
afterAll(async () => {
  results?.close();
  await mesh?.close();
});

it(
  '2,000 calls, 500 published twice, service SIGKILLed and restarted: one card each',
  { timeout: 180_000 },
  async () => {
    const first = await mesh.spawnService();
    // The project's command stream exists before its calls, as the api makes it at creation.
    await mesh.nats.provisionProject(scope.project);
    const js = jetstream(mesh.nc);
    const subject = mesh.client.subjects.toolCall({ ...scope, target: 'builtin', tool: 'echo' });
    const ids = Array.from({ length: CALLS }, (_, i) => `eo-${i}`);

    const publishing = (async () => {
      for (let start = 0; start < CALLS; start += 100) {
        await Promise.all(
          ids.slice(start, start + 100).flatMap((id, k) => {
            const i = start + k;
            const sends = [
              mesh.client.publishToolCall({
                ...scope,
                tool: 'builtin.echo',
                toolCallId: id,
                arguments: { i },
              }),
            ];
            if (isDuplicated(i)) {
              // Same tool call id, different Nats-Msg-Id: JetStream stores both copies.
              const h = headers();
              h.set(Header.toolCallId, id);
              const body = encodeMessage('tool_call', {
                v: 1,
                tool_call_id: id,
                tool_name: 'builtin.echo',
                arguments: { i },
              });
              sends.push(
                js
                  .publish(subject, body, { headers: h, msgID: `dup-${id}` })
                  .then((a) => ({ toolCallId: id, subject, seq: a.seq, duplicate: a.duplicate })),
              );
            }
            return sends;
          }),
        );
      }
    })();

    // Kill the service with calls in flight, then start a new one.
    while (results.events.length < 300) await new Promise((r) => setTimeout(r, 10));
    first.kill('SIGKILL');
    await once(first, 'exit');
    const killedAt = results.events.length;
    await mesh.spawnService();
    await publishing;

    const byId = await results.waitForAll(ids, 150_000);
    // Duplicates answer too: wait until each has its second event (the re-emit of the same card).
    const dupIds = ids.filter((_, i) => isDuplicated(i));
    const deadline = Date.now() + 60_000;
    while (dupIds.some((id) => (byId.get(id)?.length ?? 0) < 2) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }

    expect(killedAt).toBeLessThan(CALLS); // the kill really happened mid-stream
    const { rows: counts } = await mesh.store.pool.query<{
      tool_call_id: string;
      n: string;
      card: string;
    }>(
      `SELECT tool_call_id, count(*) AS n, min(card_id::text) AS card FROM cards
     WHERE project_id = $1 AND kind = 'tool.result' GROUP BY tool_call_id`,
      [scope.project],
    );
    expect(counts.length).toBe(CALLS);
    expect(counts.filter((r) => r.n !== '1')).toEqual([]);
    const cardOf = new Map(counts.map((r) => [r.tool_call_id, r.card]));

    for (const [i, id] of ids.entries()) {
      const evs = byId.get(id) ?? [];
      expect(evs.length, id).toBeGreaterThanOrEqual(isDuplicated(i) ? 2 : 1);
      for (const ev of evs) {
        expect(ev.card_id, id).toBe(cardOf.get(id));
        expect(ev.status, id).toBe('succeeded');
        expect(ev.content.result, id).toEqual({ i });
      }
    }
    const { rows: execs } = await mesh.store.pool.query<{ status: string; n: string }>(
      `SELECT status, count(*) AS n FROM state.tool_executions WHERE project_id = $1 GROUP BY status`,
      [scope.project],
    );
    expect(execs).toEqual([{ status: 'succeeded', n: String(CALLS) }]);
  },
);
