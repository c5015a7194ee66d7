import { readFileSync } from 'node:fs';
let t = performance.now();
const { prepareImport } = await import('./src/openapi/prepare.ts');
console.log('import', Math.round(performance.now() - t));
const doc = readFileSync('../../tests/fixtures/openapi/figma-rest-api-v0.43.0.yaml', 'utf8');
for (let i = 0; i < 3; i++) {
t = performance.now();
const out = prepareImport(doc, { prefix: 'figma', security: {}, category: 'x', tags: [] }, { maxDepth: 128, maxOperations: 2000, maxExpansion: 1e6, maxSchemaDepth: 100 });
console.log(out.tools.length, out.skipped.slice(0,3), Math.round(performance.now() - t));
}
