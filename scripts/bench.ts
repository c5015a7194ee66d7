// `pnpm bench <name>`: runs one benchmark (all when no name is given) and prints its figures.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

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
};

const wanted = process.argv.slice(2);
const names = wanted.length > 0 ? wanted : Object.keys(BENCHES);
for (const name of names) {
  const file = BENCHES[name];
  if (!file) {
    console.error(`unknown benchmark "${name}"; known: ${Object.keys(BENCHES).join(', ')}`);
    process.exit(2);
  }
  console.log(`== bench ${name}`);
  const r = spawnSync(process.execPath, [join(import.meta.dirname, '..', file)], {
    stdio: 'inherit',
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
