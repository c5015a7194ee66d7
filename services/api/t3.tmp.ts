import { readFileSync } from 'node:fs';
const { prepareImport } = await import('./src/openapi/prepare.ts');
for (const f of ['paged-list-3.1.json', 'swagger-2.0-store.json']) {
  const doc = readFileSync('../../tests/fixtures/openapi/' + f, 'utf8');
  const out = prepareImport(doc, { prefix: 'x', security: { key: 'k' }, category: 'x', tags: [] }, { maxDepth: 128, maxOperations: 2000, maxExpansion: 1e6, maxSchemaDepth: 100 });
  console.log(JSON.stringify(out, null, 1).slice(0, 4000));
}
