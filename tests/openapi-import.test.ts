// OpenAPI import against real servers: two published documents kept as fixture files (YAML,
// tests/fixtures/openapi/README.md says where they come from): the Figma REST API (54
// operations, all imported, its deprecated operations as deprecated tools) with four imported
// tools called against a local HTTP server implementing them, and Swagger Petstore v3 imported
// under a prefix; imported tools called through the mesh (api, tools
// service, NATS, Postgres) against a local HTTP server implementing those Petstore operations;
// a re-import with one operation changed and one removed (disabled, not deleted); another
// project's key refused; bad documents and limits refused with clear 4xx answers.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from '@toolmesh/client';
import { expectError } from '../services/api/src/test/support.ts';
import { runToolmesh } from './support/cli.ts';
import { REPO_ROOT } from './support/mesh.ts';
import { newSecretsKey, startToolsMesh, type ToolsMesh } from './support/tools-mesh.ts';

const PETSTORE = readFileSync(join(REPO_ROOT, 'tests/fixtures/openapi/petstore-v3.yaml'), 'utf8');
const FIGMA = readFileSync(
  join(REPO_ROOT, 'tests/fixtures/openapi/figma-rest-api-v0.43.0.yaml'),
  'utf8',
);
const TOKEN = `pet-token-${randomUUID()}`;
const FIGMA_TOKEN = `figd_${randomUUID()}`;
const MAX_OPERATIONS = 60;
const MAX_BYTES = 1_000_000;

interface Pet {
  id: number;
  name: string;
  photoUrls: string[];
  status?: string;
}

/** The Petstore operations the test calls, as the published API answers them. */
async function startPetstore() {
  const pets = new Map<number, Pet>();
  const seen: { method: string; path: string; headers: IncomingHttpHeaders }[] = [];
  let nextId = 1;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://petstore');
      seen.push({ method: req.method ?? '', path: url.pathname, headers: req.headers });
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const json = (status: number, v: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(v));
      };
      // Published beside the API, as the real Petstore publishes it; the CLI fetches it from here.
      if (url.pathname === '/api/v3/openapi.yaml') {
        res.writeHead(200, { 'content-type': 'application/yaml' });
        return res.end(PETSTORE);
      }
      if (req.headers['authorization'] !== `Bearer ${TOKEN}`) return json(401, { code: 401 });
      const byId = /^\/api\/v3\/pet\/(\d+)$/.exec(url.pathname);
      if (req.method === 'POST' && url.pathname === '/api/v3/pet') {
        const pet = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Pet;
        const stored = { ...pet, id: nextId++ };
        pets.set(stored.id, stored);
        return json(200, stored);
      }
      if (req.method === 'GET' && url.pathname === '/api/v3/pet/findByStatus') {
        const status = url.searchParams.get('status');
        return json(
          200,
          [...pets.values()].filter((p) => p.status === status),
        );
      }
      if (req.method === 'GET' && byId) {
        const pet = pets.get(Number(byId[1]));
        return pet ? json(200, pet) : json(404, { message: 'Pet not found' });
      }
      if (req.method === 'DELETE' && byId) {
        return pets.delete(Number(byId[1])) ? json(200, 'Pet deleted') : json(404, {});
      }
      json(404, { message: 'no such operation here' });
    })();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    pets,
    seen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

interface FigmaComment {
  id: string;
  file_key: string;
  message: string;
  user: { id: string; handle: string; img_url: string };
  created_at: string;
  client_meta: null;
  order_id: string;
  reactions: unknown[];
}

/**
 * Four operations of the Figma REST API as the published document describes them (paths,
 * X-Figma-Token auth, answers of the documented shape): getMe, postComment, getComments, and
 * the deprecated getTeamProjects.
 */
async function startFigma() {
  const comments: FigmaComment[] = [];
  const seen: { method: string; path: string; token: unknown }[] = [];
  const me = { id: '1337', handle: 'Ada', img_url: 'https://example.test/ada.png', email: 'a@x' };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://figma');
      seen.push({
        method: req.method ?? '',
        path: url.pathname,
        token: req.headers['x-figma-token'],
      });
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const json = (status: number, v: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(v));
      };
      if (req.headers['x-figma-token'] !== FIGMA_TOKEN) {
        return json(403, { status: 403, err: 'Invalid token' });
      }
      const onFile = /^\/v1\/files\/([^/]+)\/comments$/.exec(url.pathname);
      if (req.method === 'GET' && url.pathname === '/v1/me') return json(200, me);
      if (req.method === 'POST' && onFile) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { message: string };
        const comment: FigmaComment = {
          id: String(comments.length + 1),
          file_key: decodeURIComponent(onFile[1]!),
          message: body.message,
          user: { id: me.id, handle: me.handle, img_url: me.img_url },
          created_at: new Date(0).toISOString(),
          client_meta: null,
          order_id: String(comments.length + 1),
          reactions: [],
        };
        comments.push(comment);
        return json(200, comment);
      }
      if (req.method === 'GET' && onFile) {
        const key = decodeURIComponent(onFile[1]!);
        return json(200, { comments: comments.filter((c) => c.file_key === key) });
      }
      const team = /^\/v1\/teams\/([^/]+)\/projects$/.exec(url.pathname);
      if (req.method === 'GET' && team) {
        return json(200, { name: `team ${team[1]}`, projects: [{ id: '7', name: 'Roadmap' }] });
      }
      json(404, { status: 404, err: 'Not found' });
    })();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    comments,
    seen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let mesh: ToolsMesh;
let store: Awaited<ReturnType<typeof startPetstore>>;
let figma: Awaited<ReturnType<typeof startFigma>>;
let a: { id: string; key: string };
let b: { id: string; key: string };

beforeAll(async () => {
  store = await startPetstore();
  figma = await startFigma();
  mesh = await startToolsMesh({
    CG__SECRETS__KEY: newSecretsKey(),
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    // Figma's document is converted and checked in a few seconds of CPU; the machine running the
    // suite is shared, so the import's deadline is set well past that here (the red-team tests
    // check the deadline itself).
    CG__API__OPENAPI_TIMEOUT_MS: '120000',
    CG__API__OPENAPI_MAX_BYTES: String(MAX_BYTES),
    CG__API__OPENAPI_MAX_OPERATIONS: String(MAX_OPERATIONS),
  });
  a = await mesh.api.createProject();
  b = await mesh.api.createProject();
  const res = await mesh.request('PUT', `/v1/projects/${a.id}/secrets/petstore_token`, {
    key: a.key,
    body: { value: TOKEN },
  });
  expect(res.status, res.raw).toBe(201);
  const fig = await mesh.request('PUT', `/v1/projects/${a.id}/secrets/figma_token`, {
    key: a.key,
    body: { value: FIGMA_TOKEN },
  });
  expect(fig.status, fig.raw).toBe(201);
}, 120_000);
afterAll(async () => {
  await mesh?.close();
  await store?.close();
  await figma?.close();
});

const importDoc = (document: unknown, extra: Record<string, unknown> = {}, project = a) =>
  mesh.request('POST', `/v1/projects/${project.id}/openapi`, {
    key: project.key,
    body: {
      prefix: 'petstore',
      document,
      base_url: `${store.url}/api/v3`,
      security: { petstore_auth: 'petstore_token', api_key: 'petstore_token' },
      ...extra,
    },
  });

const call = (tool: string, args: Record<string, unknown>, project = a): Promise<ToolResult> =>
  mesh.client.callTool(
    { project: project.id, channel: 'test', tool, arguments: args },
    { waitMs: 60_000 },
  );

async function tool(name: string) {
  const res = await mesh.request('GET', `/v1/projects/${a.id}/tools/${name}`, { key: a.key });
  expect(res.status, res.raw).toBe(200);
  return res.body as Record<string, unknown> & { http: Record<string, unknown> };
}

describe('importing the published Figma REST API document (54 operations)', () => {
  const doc = parseYaml(FIGMA) as {
    info: { version: string };
    paths: Record<
      string,
      Record<string, { operationId: string; deprecated?: boolean; tags?: string[] }>
    >;
  };
  const operations = Object.values(doc.paths).flatMap((item) => Object.values(item));
  const figmaImport = () =>
    mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: {
        prefix: 'figma',
        document: FIGMA,
        base_url: figma.url,
        security: { PersonalAccessToken: 'figma_token' },
      },
    });
  const list = async (query: string) => {
    const res = await mesh.request('GET', `/v1/projects/${a.id}/tools?q=figma.&${query}`, {
      key: a.key,
    });
    expect(res.status, res.raw).toBe(200);
    return res.body as {
      tools: { name: string }[];
      counts: { total: number; categories: Record<string, number>; tags: Record<string, number> };
    };
  };

  it('imports every operation as a tool, with the version and the deprecated flag', async () => {
    expect(operations.length).toBe(54);
    const res = await figmaImport();
    expect(res.status, res.raw).toBe(200);
    const report = res.body as { added: string[]; skipped: unknown[]; warnings: string[] };
    expect(report.skipped).toEqual([]);
    expect([...report.added].sort()).toEqual(
      operations.map((o) => `figma.${o.operationId}`).sort(),
    );
    // Schemes left unmapped (other tokens, OAuth) are named; the personal token is used.
    expect(report.warnings.join('\n')).toContain('OAuth2');

    const me = await tool('figma.getMe');
    expect(me['version']).toBe('0.43.0');
    expect(me['deprecated']).toBe(false);
    expect(me['http']).toEqual({
      method: 'GET',
      url: `${figma.url}/v1/me`,
      auth: { type: 'header', header: 'X-Figma-Token', secret: 'figma_token' },
    });
    const deprecated = operations.filter((o) => o.deprecated === true).map((o) => o.operationId);
    expect(deprecated.sort()).toEqual([
      'getProjectFiles',
      'getProjectMeta',
      'getTeamProjects',
      'getTeamWebhooks',
    ]);
    expect(await tool('figma.getTeamProjects')).toMatchObject({
      deprecated: true,
      version: '0.43.0',
    });

    // Deprecated operations are left out of lists unless asked for; the counts say the same.
    const shown = await list('');
    expect(shown.tools).toHaveLength(50);
    expect(shown.tools.map((t) => t.name)).not.toContain('figma.getTeamProjects');
    expect(shown.counts.total).toBe(50);
    expect(shown.counts.categories).toEqual({ openapi: 50 });
    const commentOps = operations.filter((o) => o.tags?.includes('Comments') && !o.deprecated);
    expect(shown.counts.tags['Comments']).toBe(commentOps.length);
    const all = await list('include_deprecated=true');
    expect(all.counts.total).toBe(54);
    expect(all.tools.map((t) => t.name)).toContain('figma.getTeamProjects');
  });

  it('runs imported tools against a server implementing those operations', async () => {
    const me = await call('figma.getMe', {});
    expect(me.status, JSON.stringify(me.content)).toBe('succeeded');
    expect(me.content.result).toMatchObject({ id: '1337', handle: 'Ada' });

    const posted = await call('figma.postComment', {
      file_key: 'fK3y',
      body: { message: 'Looks good to me' },
    });
    expect(posted.status, JSON.stringify(posted.content)).toBe('succeeded');
    expect(posted.content.result).toMatchObject({ file_key: 'fK3y', message: 'Looks good to me' });
    expect(figma.comments).toHaveLength(1);

    const listed = await call('figma.getComments', { file_key: 'fK3y', as_md: true });
    expect(listed.status, JSON.stringify(listed.content)).toBe('succeeded');
    expect(listed.content.result).toEqual({ comments: figma.comments });
    const get = figma.seen.findLast((s) => s.method === 'GET' && s.path.endsWith('/comments'))!;
    expect(get.token).toBe(FIGMA_TOKEN);

    // A deprecated operation still runs; its card says it is deprecated.
    const old = await call('figma.getTeamProjects', { team_id: '42' });
    expect(old.status, JSON.stringify(old.content)).toBe('succeeded');
    expect(old.content.result).toMatchObject({ name: 'team 42' });
    const card = await mesh.request('GET', `/v1/projects/${a.id}/cards/${old.card_id}`, {
      key: a.key,
    });
    expect((card.body as { metadata: unknown }).metadata).toMatchObject({
      deprecation: { deprecated: true, version: '0.43.0' },
    });

    // The document's schema checks arguments before anything is sent.
    const before = figma.seen.length;
    const bad = await call('figma.postComment', { file_key: 'fK3y', body: { text: 'no message' } });
    expect(bad.content.error?.code).toBe('invalid_arguments');
    expect(figma.seen.length).toBe(before);
    expect(JSON.stringify([me, posted, listed, old, bad])).not.toContain(FIGMA_TOKEN);
  });

  it("maps the OAuth2 scheme to an OAuth 2.0 config, asking for each operation's scopes", async () => {
    const oauth = {
      type: 'oauth2',
      grant: 'refresh_token',
      token_url_secret: 'figma_token_url',
      client_id_secret: 'figma_client_id',
      client_secret_secret: 'figma_client_secret',
      refresh_token_secret: 'figma_refresh_token',
    };
    const res = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: {
        prefix: 'figmaoauth',
        document: FIGMA,
        base_url: figma.url,
        security: { OAuth2: oauth },
      },
    });
    expect(res.status, res.raw).toBe(200);
    // getMe accepts a personal token or OAuth2 with two scopes: the mapped OAuth2 is used.
    expect((await tool('figmaoauth.getMe'))['http']).toEqual({
      method: 'GET',
      url: `${figma.url}/v1/me`,
      auth: { ...oauth, scope: 'current_user:read files:read' },
    });
    // A scope the config names wins over the requirement's.
    const again = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: {
        prefix: 'figmaoauth',
        document: FIGMA,
        base_url: figma.url,
        security: { OAuth2: { ...oauth, scope: 'current_user:read' } },
      },
    });
    expect(again.status, again.raw).toBe(200);
    expect((await tool('figmaoauth.getMe'))['http']).toMatchObject({
      auth: { scope: 'current_user:read' },
    });

    // An OAuth 2.0 config for a scheme that is not OAuth, or one missing its client, is refused.
    const apiKey = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: { prefix: 'figmabad', document: FIGMA, security: { PersonalAccessToken: oauth } },
    });
    expect(apiKey.status, apiKey.raw).toBe(400);
    expect(apiKey.body.error).toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('PersonalAccessToken is of type apiKey'),
    });
    const { client_id_secret: _, ...noClient } = oauth;
    const incomplete = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: { prefix: 'figmabad', document: FIGMA, security: { OAuth2: noClient } },
    });
    expect(incomplete.status, incomplete.raw).toBe(400);
    expect(incomplete.raw).toContain('security');
  });

  it('a re-import with one operation changed and one removed updates one and disables the other', async () => {
    const changed = parseYaml(FIGMA) as typeof doc;
    (changed.paths['/v1/me']!['get'] as unknown as Record<string, unknown>)['summary'] =
      'Who am I, for this token.';
    delete changed.paths['/v1/files/{file_key}/comments/{comment_id}']!['delete'];
    const res = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: {
        prefix: 'figma',
        document: toYaml(changed),
        base_url: figma.url,
        security: { PersonalAccessToken: 'figma_token' },
      },
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      added: [],
      changed: ['figma.getMe'],
      removed: ['figma.deleteComment'],
    });
    expect((res.body as { unchanged: string[] }).unchanged).toHaveLength(52);
    expect((await tool('figma.getMe'))['description']).toMatch(/^Who am I, for this token\./);
    expect((await tool('figma.deleteComment'))['enabled']).toBe(false);
    const r = await call('figma.deleteComment', { file_key: 'fK3y', comment_id: '1' });
    expect(r.content.error?.code).toBe('tool_disabled');

    // A new version of the document is a change of every tool's version.
    const bumped = { ...(parseYaml(FIGMA) as typeof doc) };
    bumped.info = { ...bumped.info, version: '0.44.0' };
    const again = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: {
        prefix: 'figma',
        document: bumped,
        base_url: figma.url,
        security: { PersonalAccessToken: 'figma_token' },
      },
    });
    expect(again.status, again.raw).toBe(200);
    expect((again.body as { changed: string[] }).changed).toHaveLength(54);
    expect((await tool('figma.deleteComment'))['enabled']).toBe(true);
    expect((await tool('figma.getMe'))['version']).toBe('0.44.0');
  });
});

describe('importing Swagger Petstore v3', () => {
  it('turns every operation the http kind can run into a tool, and says why the others were skipped', async () => {
    const res = await importDoc(PETSTORE);
    expect(res.status, res.raw).toBe(200);
    const report = res.body as Record<string, unknown[]>;
    // 19 operations: uploadFile sends application/octet-stream, which an http tool cannot.
    expect(report['added']).toHaveLength(18);
    expect(report['added']).toEqual(
      expect.arrayContaining([
        'petstore.addPet',
        'petstore.getPetById',
        'petstore.findPetsByStatus',
        'petstore.deletePet',
        'petstore.loginUser',
      ]),
    );
    expect(report['skipped']).toEqual([
      {
        operation: 'uploadFile',
        reason: expect.stringContaining('application/octet-stream') as unknown,
      },
    ]);
    expect(report['changed']).toEqual([]);
    expect(report['removed']).toEqual([]);

    const get = await tool('petstore.getPetById');
    expect(get['description']).toBe('Find pet by ID.\n\nReturns a single pet.');
    expect(get['origin']).toBe('http');
    expect(get['tags']).toEqual(['pet']);
    expect(get['parameters']).toMatchObject({
      type: 'object',
      required: ['petId'],
      properties: { petId: { type: 'integer', format: 'int64' } },
    });
    expect(get['http']).toEqual({
      method: 'GET',
      url: `${store.url}/api/v3/pet/{petId}`,
      auth: { type: 'header', header: 'api_key', secret: 'petstore_token' },
    });
    const add = await tool('petstore.addPet');
    // The request body, dereferenced from #/components/schemas/Pet, is one argument.
    expect(add['parameters']).toMatchObject({
      required: ['body'],
      properties: {
        body: {
          required: ['name', 'photoUrls'],
          properties: { category: { properties: { name: { type: 'string' } } } },
        },
      },
    });
    expect(add['http']).toMatchObject({
      method: 'POST',
      body_param: 'body',
      auth: { type: 'bearer' },
    });
    expect((await tool('petstore.deletePet'))['http']).toMatchObject({
      header_params: { api_key: 'api_key' },
    });
  });

  it('runs imported tools through the tools service against the real server', async () => {
    const added = await call('petstore.addPet', {
      body: { name: 'doggie', photoUrls: ['https://example.test/d.png'], status: 'available' },
    });
    expect(added.status, JSON.stringify(added.content)).toBe('succeeded');
    const pet = added.content.result as Pet;
    expect(pet).toMatchObject({ name: 'doggie', status: 'available' });
    expect(store.pets.get(pet.id)?.name).toBe('doggie');

    const found = await call('petstore.findPetsByStatus', { status: 'available' });
    expect(found.status).toBe('succeeded');
    expect(found.content.result).toEqual([pet]);

    const deleted = await call('petstore.deletePet', { petId: pet.id, api_key: 'delete-key' });
    expect(deleted.status, JSON.stringify(deleted.content)).toBe('succeeded');
    expect(store.pets.has(pet.id)).toBe(false);
    const del = store.seen.findLast((s) => s.method === 'DELETE')!;
    expect(del.path).toBe(`/api/v3/pet/${pet.id}`);
    expect(del.headers['api_key']).toBe('delete-key');

    // The document's schema checks the arguments before anything is sent.
    const before = store.seen.length;
    const bad = await call('petstore.getPetById', { petId: 'seven' });
    expect(bad.content.error?.code).toBe('invalid_arguments');
    expect(store.seen.length).toBe(before);
    // No secret reaches a card or an answer of the api.
    expect(JSON.stringify([added, found, deleted, bad])).not.toContain(TOKEN);
    expect(mesh.responses.join('\n')).not.toContain(TOKEN);
  });

  it('a re-import reports the changed and the removed operation, and disables the removed tool', async () => {
    const doc = parseYaml(PETSTORE) as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    doc.paths['/pet/{petId}']!['get']!['summary'] = 'Find one pet by its numeric ID.';
    delete doc.paths['/store/order/{orderId}']!['delete'];
    const res = await importDoc(toYaml(doc));
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      added: [],
      changed: ['petstore.getPetById'],
      removed: ['petstore.deleteOrder'],
    });
    expect((res.body as { unchanged: string[] }).unchanged).toHaveLength(16);
    expect((await tool('petstore.getPetById'))['description']).toMatch(/^Find one pet by its/);
    const removed = await tool('petstore.deleteOrder');
    expect(removed['enabled']).toBe(false);
    const r = await call('petstore.deleteOrder', { orderId: 1 });
    expect(r.content.error?.code).toBe('tool_disabled');

    // The original again: the removed tool comes back, enabled, and the description too.
    const again = await importDoc(PETSTORE);
    expect(again.body).toMatchObject({
      added: [],
      changed: expect.arrayContaining(['petstore.getPetById', 'petstore.deleteOrder']) as unknown,
      removed: [],
    });
    expect((await tool('petstore.deleteOrder'))['enabled']).toBe(true);
  });

  it('include and exclude select operations by tag or operation id', async () => {
    const res = await importDoc(PETSTORE, {
      prefix: 'shop',
      include: ['store', 'getUserByName'],
      exclude: ['deleteOrder'],
    });
    expect(res.status, res.raw).toBe(200);
    expect((res.body as { added: string[] }).added.sort()).toEqual([
      'shop.getInventory',
      'shop.getOrderById',
      'shop.getUserByName',
      'shop.placeOrder',
    ]);
  });
});

describe('toolmesh tools import-openapi', () => {
  it('imports from a URL, resolving the relative server against it, and reports the outcome', async () => {
    const address = await mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
    const env = { TOOLMESH_API_URL: address, TOOLMESH_API_KEY: a.key, TOOLMESH_PROJECT: a.id };
    const args = [
      'tools',
      'import-openapi',
      `${store.url}/api/v3/openapi.yaml`,
      '--prefix',
      'cli',
      '--security',
      'petstore_auth=petstore_token',
      '--include',
      'pet',
    ];
    const first = await runToolmesh(args, env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(
      'cli: 7 added, 0 changed, 0 removed (disabled), 0 unchanged, 1 skipped',
    );
    expect(first.stdout).toContain(
      'skipped uploadFile: request body media type application/octet-stream',
    );
    expect((await tool('cli.findPetsByStatus'))['http']).toMatchObject({
      url: `${store.url}/api/v3/pet/findByStatus`,
    });
    const r = await call('cli.findPetsByStatus', { status: 'sold' });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');

    // A file, and a key of another project: refused, nothing imported there.
    const file = join(REPO_ROOT, 'tests/fixtures/openapi/petstore-v3.yaml');
    const other = await runToolmesh(
      ['tools', 'import-openapi', file, '--prefix', 'cli', '--base-url', store.url],
      { ...env, TOOLMESH_API_KEY: b.key },
    );
    expect(other.code).toBe(4);
    expect(other.stderr).toMatch(/404 project "[^"]+" not found/);
    const again = await runToolmesh(
      [...args.slice(0, 2), file, ...args.slice(3), '--base-url', `${store.url}/api/v3`, '--json'],
      env,
    );
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ added: [], changed: [], removed: [] });

    // The OAuth 2.0 scheme mapped to a config in a file, with @<file>.
    const dir = await mkdtemp(join(tmpdir(), 'toolmesh-openapi-cli-'));
    const oauth = {
      type: 'oauth2',
      grant: 'client_credentials',
      token_url_secret: 'petstore_token_url',
      client_id_secret: 'petstore_client_id',
      client_secret_secret: 'petstore_client_secret',
    };
    await writeFile(join(dir, 'oauth.json'), JSON.stringify(oauth));
    const oauthed = await runToolmesh(
      [
        ...args.slice(0, 2),
        file,
        '--prefix',
        'clioauth',
        '--security',
        `petstore_auth=@${join(dir, 'oauth.json')}`,
        '--include',
        'pet',
        '--base-url',
        `${store.url}/api/v3`,
      ],
      env,
    );
    expect(oauthed.code, oauthed.stderr).toBe(0);
    expect((await tool('clioauth.findPetsByStatus'))['http']).toMatchObject({
      auth: { ...oauth, scope: 'write:pets read:pets' },
    });
    const missing = await runToolmesh(
      [...args.slice(0, 2), file, '--prefix', 'clioauth', '--security', 'petstore_auth=@nope.json'],
      env,
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('cannot read nope.json');
    await rm(dir, { recursive: true, force: true });
  }, 120_000);
});

describe('refusals', () => {
  it("another project's key cannot import into the project", async () => {
    expectError(await importDoc(PETSTORE, {}, { id: a.id, key: b.key }), 404, 'not_found');
    expectError(
      await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
        body: { prefix: 'x', document: PETSTORE },
      }),
      401,
      'unauthorized',
    );
  });

  it('refuses documents that are not OpenAPI 3.0/3.1 nor Swagger 2.0, or that reach outside themselves', async () => {
    const cases: [unknown, RegExp][] = [
      ['{ not: json: nor [yaml', /neither JSON nor YAML/],
      [{ swagger: '1.2', info: { title: 't', version: '1' }, paths: {} }, /Swagger "1.2" is not/],
      [{ openapi: '3.0.3', paths: {} }, /not valid OpenAPI: info is missing/],
      [
        {
          openapi: '3.1.0',
          info: { title: 't', version: '1' },
          paths: {
            '/a': {
              get: {
                operationId: 'a',
                parameters: [{ $ref: `${store.url}/params.json#/p` }],
                responses: { 200: { description: 'ok' } },
              },
            },
          },
        },
        /refers to other files or URLs/,
      ],
    ];
    const before = store.seen.length;
    for (const [document, message] of cases) {
      const res = await importDoc(document, { prefix: 'bad' });
      expectError(res, 400, 'invalid_openapi');
      expect(res.body.error.message).toMatch(message);
    }
    // The external $ref was never fetched.
    expect(store.seen.length).toBe(before);
  });

  it('refuses a document whose servers are relative when no base_url is given', async () => {
    const res = await mesh.request('POST', `/v1/projects/${a.id}/openapi`, {
      key: a.key,
      body: { prefix: 'rel', document: PETSTORE },
    });
    expectError(res, 400, 'invalid_openapi');
    expect(JSON.stringify(res.body.error.details)).toContain('give base_url');
  });

  it('enforces the size and operation limits', async () => {
    const paths = Object.fromEntries(
      Array.from({ length: MAX_OPERATIONS + 1 }, (_, i) => [
        `/op${i}`,
        { get: { operationId: `op${i}`, responses: { 200: { description: 'ok' } } } },
      ]),
    );
    const many = { openapi: '3.1.0', info: { title: 't', version: '1' }, paths };
    const res = await importDoc(many, { prefix: 'many' });
    expectError(res, 413, 'payload_too_large');
    expect(res.body.error.details).toEqual({
      operations: MAX_OPERATIONS + 1,
      limit: MAX_OPERATIONS,
    });
    // Narrowed by exclude, the same document fits.
    expect((await importDoc(many, { prefix: 'many', exclude: ['op0'] })).status).toBe(200);

    const big = await importDoc(PETSTORE + `\n# ${'x'.repeat(MAX_BYTES)}\n`, { prefix: 'big' });
    expectError(big, 413, 'payload_too_large');
  });

  it("refuses names held by tools that are not the import's", async () => {
    const own = await mesh.request('POST', `/v1/projects/${a.id}/tools`, {
      key: a.key,
      body: {
        name: 'mine.getInventory',
        description: 'registered by hand',
        parameters: { type: 'object' },
      },
    });
    expect(own.status, own.raw).toBe(201);
    const res = await importDoc(PETSTORE, { prefix: 'mine' });
    expectError(res, 409, 'conflict');
    expect(res.body.error.details).toEqual({ conflicts: ['mine.getInventory'] });
    // Nothing of the import was written.
    const list = await mesh.request('GET', `/v1/projects/${a.id}/tools?q=mine.`, { key: a.key });
    expect((list.body as { tools: unknown[] }).tools).toHaveLength(1);
  });
});
