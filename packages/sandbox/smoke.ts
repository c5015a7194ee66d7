import { createLocalSandboxProvider } from './src/index.ts';
const p = await createLocalSandboxProvider({ rootDir: '/tmp/tm-smoke' });
const sb = await p.create({ key: { project: 'p', agent: 'a', session: 's' } });
for (const s of ['echo partial output; echo the error >&2; exit 7', 'exit 7', 'echo a; exit 0', 'mkdir -p sub/dir', 'pwd']) {
  const r = await sb.exec({ shell: s }, { timeoutMs: 5000 }); console.log(s, r.exitCode, r.durationMs);
}
await sb.destroy(); await p.close();
