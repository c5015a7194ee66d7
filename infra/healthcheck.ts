// The container health check of every toolmesh process: `node infra/healthcheck.ts <service>`.
// Exit 0 healthy, 1 not. It asks the process itself, so the answer is about that process's own
// connections, not fresh ones made for the check: the api's /readyz (Postgres answers, the NATS
// server answers a PING within [api] readyz_nats_timeout_ms), every other process's /healthz on
// its configured health port (docker-compose.yml sets one each). The skills service also has to
// have written a fresh heartbeat row in state.service_instances (every [skills]
// reaper_interval_ms). A process whose health port is 0 (any free one, which the check cannot
// know) is checked the old way: NATS and Postgres reachable from this container.
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '@toolmesh/config';
import { connectNatsFromConfig, createStoreFromConfig } from '@toolmesh/service';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'max-age-ms': { type: 'string' } },
});
const service = positionals[0] ?? 'api';
const config = loadConfig({ env: process.env });
const logger = pino({ level: 'silent' });

function fail(why: string): never {
  process.stdout.write(`unhealthy: ${why}\n`);
  process.exit(1);
}

/** GET http://127.0.0.1:<port><path>: a 2xx, or the check fails with what came back. */
async function ask(port: number, path: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    signal: AbortSignal.timeout(4_000),
  }).catch((err: unknown) => fail(`${service}: ${(err as Error).message}`));
  if (!res.ok) fail(`${service} ${path} answered ${res.status}: ${await res.text()}`);
}

/** The health port of a process without an HTTP api; 0 when it picks any free one. */
function healthPortOf(name: string): number {
  switch (name) {
    case 'skills':
      return config.skills.health_port;
    case 'tools':
      return config.tools.health_port;
    case 'agent-worker':
      return config.agent.health_port;
    case 'sandbox-reaper':
      return config.reaper.health_port;
    default:
      return fail(`unknown process ${name} (api, skills, tools, agent-worker, sandbox-reaper)`);
  }
}

async function checkConnections(): Promise<void> {
  // One attempt only: a health check must answer, not wait for a reconnect.
  const once = { ...config, nats: { ...config.nats, max_reconnect_attempts: 0 } };
  const nc = await connectNatsFromConfig(once, `healthcheck:${service}`, logger).catch(
    (err: unknown) => fail(`nats: ${(err as Error).message}`),
  );
  await nc.close();
}

async function checkHeartbeat(): Promise<void> {
  const store = createStoreFromConfig(config, `healthcheck:${service}`, logger);
  try {
    const mine = (await store.instances.list(service)).filter((r) => r.host === hostname());
    if (mine.length === 0) return;
    const maxAgeMs = values['max-age-ms']
      ? Number(values['max-age-ms'])
      : 3 * config.skills.reaper_interval_ms;
    const newest = Math.min(...mine.map((r) => r.seen_ago_ms));
    if (newest > maxAgeMs) fail(`last heartbeat ${newest} ms ago (limit ${maxAgeMs} ms)`);
  } catch (err) {
    fail(`postgres: ${(err as Error).message}`);
  } finally {
    await store.close();
  }
}

if (service === 'api') {
  await ask(config.api.port, '/readyz');
} else {
  const port = healthPortOf(service);
  if (port === 0) await checkConnections();
  else await ask(port, '/healthz');
  if (service === 'skills' || port === 0) await checkHeartbeat();
}
process.stdout.write('healthy\n');
