import { readFileSync } from 'node:fs';
import { createImportRunner } from './src/openapi/run.ts';
import pino from 'pino';
const doc = readFileSync('/work/wt-openapi/tests/fixtures/openapi/figma-rest-api-v0.43.0.yaml', 'utf8');
const r = createImportRunner({ limits: { maxDepth: 128, maxOperations: 2000, maxExpansion: 1e6, maxSchemaDepth: 100 }, timeoutMs: 60000, maxHeapMb: 256, maxConcurrent: 2, logger: pino() });
let t = performance.now();
const out = await r.prepare(Buffer.from(JSON.stringify({ prefix: 'figma', document: doc })));
console.log(out.prepared.tools.length, Math.round(performance.now() - t));
