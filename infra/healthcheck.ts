// The container health check of every toolmesh process: `node infra/healthcheck.ts <service>`.
// Exit 0 healthy, 1 not. The api is asked over HTTP (/readyz checks NATS and Postgres itself),
// the tools service too (/healthz on [tools] health_port).
// The other processes serve no HTTP, so the check proves what they need is reachable from this
// container, and, when the process writes heartbeats to state.service_instances (the skills
// service does, every [skills] reaper_interval_ms), that this container's newest one is fresh:
// a process wedged in a loop stops heartbeating even though its connections stay up.
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

async function checkApi(): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${config.api.port}/readyz`, {
    signal: AbortSignal.timeout(4_000),
  }).catch((err: unknown) => fail(`api: ${(err as Error).message}`));
  if (!res.ok) fail(`api /readyz answered ${res.status}: ${await res.text()}`);
}

async function checkTools(): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${config.tools.health_port}/healthz`, {
    signal: AbortSignal.timeout(4_000),
  }).catch((err: unknown) => fail(`tools: ${(err as Error).message}`));
  if (!res.ok) fail(`tools /healthz answered ${res.status}: ${await res.text()}`);
}

async function checkWorker(): Promise<void> {
  // One attempt only: a health check must answer, not wait for a reconnect.
  const once = { ...config, nats: { ...config.nats, max_reconnect_attempts: 0 } };
  const nc = await connectNatsFromConfig(once, `healthcheck:${service}`, logger).catch(
    (err: unknown) => fail(`nats: ${(err as Error).message}`),
  );
  await nc.close();
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

await (service === 'api' ? checkApi() : service === 'tools' ? checkTools() : checkWorker());
process.stdout.write('healthy\n');
