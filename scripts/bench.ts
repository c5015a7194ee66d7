// `pnpm bench <name>`: runs one benchmark (all when no name is given) and prints its figures.
// The benchmarks run on servers as durable as `pnpm stack`'s, started here once for all of them
// and handed over as NATS_URL / DATABASE_URL: Postgres with fsync, synchronous_commit and
// full_page_writes on, JetStream fsyncing every write where the nats-server can (2.10+). The
// test fixtures they would otherwise fall back on turn durability off for speed. A NATS_URL or
// DATABASE_URL given from outside is used as it is.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { startLocalNats, startLocalPostgres } from '@toolmesh/testing';
import { jetStreamSync } from '../bench/support.ts';

const BENCHES: Record<string, string> = {
  roundtrip: 'bench/roundtrip.ts',
  api: 'bench/api-load.ts',
  sandbox: 'bench/sandbox.ts',
  agent: 'bench/agent.ts',
  tools: 'bench/tools.ts',
  mcp: 'bench/mcp.ts',
  scale: 'bench/scale.ts',
  footprint: 'bench/footprint.ts',
  console: 'bench/console.ts',
  neighbours: 'bench/neighbours.ts',
};

const wanted = process.argv.slice(2);
const names = wanted.length > 0 ? wanted : Object.keys(BENCHES);
const unknown = names.find((name) => BENCHES[name] === undefined);
if (unknown !== undefined) {
  console.error(`unknown benchmark "${unknown}"; known: ${Object.keys(BENCHES).join(', ')}`);
  process.exit(2);
}

const servers: { close(): Promise<void> }[] = [];
const env: Record<string, string> = {};
if (!process.env['NATS_URL']) {
  const nats = await startLocalNats({ syncAlways: true });
  servers.push(nats);
  env['NATS_URL'] = nats.url;
  // The benches cannot ask the server; they print and record what this says.
  env['BENCH_JETSTREAM_SYNC'] = jetStreamSync(nats);
}
if (!process.env['DATABASE_URL']) {
  const pg = await startLocalPostgres();
  servers.push(pg);
  env['DATABASE_URL'] = pg.url;
}

let status = 0;
try {
  for (const name of names) {
    console.log(`== bench ${name}`);
    // Not spawnSync: the nats-server's output is drained by this process's event loop.
    const child = spawn(process.execPath, [join(import.meta.dirname, '..', BENCHES[name] ?? '')], {
      stdio: 'inherit',
      env: { ...process.env, ...env },
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    if (code !== 0) {
      status = code ?? 1;
      break;
    }
  }
} finally {
  for (const s of servers) await s.close();
}
process.exit(status);
