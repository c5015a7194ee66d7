// The registry's built-in tools that keep a project's data: files (builtin.read_file, write_file,
// list_files, and the /files routes) and documents (loaded over the api as JSON lines, found with
// builtin.search_documents, read with builtin.get_document). Through the bus as any caller, over
// HTTP, and through an agent; a file written by one agent is read by another of the project; and
// another project reaches none of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';

let mesh: AgentMesh;
let other: { id: string; key: string };

beforeAll(async () => {
  mesh = await startAgentMesh({
    CG__BUILTIN__FILE_MAX_BYTES: '1000',
    CG__BUILTIN__FILES_PER_PROJECT: '5',
    CG__BUILTIN__DOCUMENTS_PER_REQUEST: '10',
  });
  await mesh.startSkills();
  await mesh.startWorker();
  other = await mesh.api.createProject();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const call = (tool: string, args: Record<string, unknown>, project = mesh.project.id) =>
  mesh.client.callTool({ project, channel: 'main', tool, arguments: args });
const http = (
  method: 'GET' | 'PUT' | 'POST' | 'DELETE',
  url: string,
  o: { body?: unknown; payload?: string; headers?: Record<string, string>; key?: string } = {},
) =>
  mesh.api.request(method, `/v1/projects/${mesh.project.id}${url}`, {
    key: o.key ?? mesh.project.key,
    ...(o.body !== undefined ? { body: o.body } : {}),
    ...(o.payload !== undefined ? { payload: o.payload } : {}),
    ...(o.headers ? { headers: o.headers } : {}),
  });

describe('files', () => {
  it('writes, reads and lists files through the bus, with paths made canonical', async () => {
    const w = await call('builtin.write_file', {
      path: 'notes/./draft/../todo.md',
      content: 'buy milk',
    });
    expect(w.status).toBe('succeeded');
    expect(w.content.result).toEqual({ path: '/notes/todo.md', size: 8, created: true });
    const again = await call('builtin.write_file', {
      path: '/notes/todo.md',
      content: 'buy milk and tea',
    });
    expect(again.content.result).toEqual({ path: '/notes/todo.md', size: 16, created: false });
    await call('builtin.write_file', { path: 'readme.txt', content: 'hello' });

    const r = await call('builtin.read_file', { path: 'notes//todo.md' });
    expect(r.content.result).toMatchObject({
      path: '/notes/todo.md',
      content: 'buy milk and tea',
      size: 16,
    });
    const all = await call('builtin.list_files', {});
    expect((all.content.result as { files: { path: string }[] }).files.map((f) => f.path)).toEqual([
      '/notes/todo.md',
      '/readme.txt',
    ]);
    const notes = await call('builtin.list_files', { path: 'notes' });
    expect(
      (notes.content.result as { files: { path: string }[] }).files.map((f) => f.path),
    ).toEqual(['/notes/todo.md']);
  });

  it('refuses paths above the root, missing files and files past the quotas, each with its code', async () => {
    const up = await call('builtin.read_file', { path: 'notes/../../etc/passwd' });
    expect(up.status).toBe('failed');
    expect(up.content.error, JSON.stringify(up.content.error)).toMatchObject({
      code: 'invalid_arguments',
    });
    expect(up.content.error?.message).toMatch(/leaves the root/);
    const missing = await call('builtin.read_file', { path: 'nope.txt' });
    expect(missing.content.error).toMatchObject({
      code: 'not_found',
      message: 'no file /nope.txt',
    });
    const big = await call('builtin.write_file', { path: 'big.txt', content: 'x'.repeat(1001) });
    expect(big.content.error).toMatchObject({
      code: 'quota_exceeded',
      details: { quota: 'file_bytes', limit: 1000, current: 1001 },
    });
    for (const n of [1, 2, 3])
      await call('builtin.write_file', { path: `many/${n}.txt`, content: 'x' });
    const sixth = await call('builtin.write_file', { path: 'many/4.txt', content: 'x' });
    expect(sixth.content.error).toMatchObject({
      code: 'quota_exceeded',
      details: { quota: 'files', limit: 5 },
    });
    // Replacing a file is not a new one: still allowed at the count limit.
    expect((await call('builtin.write_file', { path: 'many/1.txt', content: 'y' })).status).toBe(
      'succeeded',
    );
    const nul = await call('builtin.write_file', { path: 'nul.txt', content: 'a\u0000b' });
    expect(nul.content.error).toMatchObject({ code: 'invalid_arguments' });
    // Deleting frees the count again.
    for (const n of [1, 2, 3])
      expect((await http('DELETE', `/files/content?path=many/${n}.txt`)).status).toBe(204);
  });

  it('is the same store over HTTP: put there, read by the tool, and the other way round', async () => {
    const put = await http('PUT', '/files/content?path=shared/plan.txt', {
      body: { content: 'step 1' },
    });
    expect(put.status).toBe(201);
    expect(put.body).toMatchObject({ path: '/shared/plan.txt', size: 6 });
    const r = await call('builtin.read_file', { path: '/shared/plan.txt' });
    expect(r.content.result).toMatchObject({ content: 'step 1' });
    const got = await http('GET', '/files/content?path=/notes/todo.md');
    expect(got.body).toMatchObject({ path: '/notes/todo.md', content: 'buy milk and tea' });
    const listed = await http('GET', '/files?path=/shared');
    expect(listed.body.files.map((f: { path: string }) => f.path)).toEqual(['/shared/plan.txt']);
    expect((await http('GET', '/files/content?path=../../etc/passwd')).status).toBe(400);
    expect((await http('DELETE', '/files/content?path=shared/plan.txt')).status).toBe(204);
    expect((await http('GET', '/files/content?path=shared/plan.txt')).status).toBe(404);
  });

  it("another project sees none of this project's files, over the bus or HTTP", async () => {
    const theirs = await call('builtin.read_file', { path: '/notes/todo.md' }, other.id);
    expect(theirs.content.error).toMatchObject({ code: 'not_found' });
    const list = await call('builtin.list_files', {}, other.id);
    expect(list.content.result).toMatchObject({ files: [] });
    await call('builtin.write_file', { path: '/notes/todo.md', content: 'theirs' }, other.id);
    expect(
      (await call('builtin.read_file', { path: '/notes/todo.md' })).content.result,
    ).toMatchObject({
      content: 'buy milk and tea',
    });
    for (const [method, url] of [
      ['GET', '/files'],
      ['GET', '/files/content?path=/notes/todo.md'],
      ['PUT', '/files/content?path=/notes/todo.md'],
      ['DELETE', '/files/content?path=/notes/todo.md'],
    ] as const) {
      const res = await http(method, url, {
        key: other.key,
        body: method === 'PUT' ? { content: 'x' } : undefined,
      });
      expect([401, 403, 404], `${method} ${url}`).toContain(res.status);
    }
    expect(
      (await call('builtin.read_file', { path: '/notes/todo.md' })).content.result,
    ).toMatchObject({
      content: 'buy milk and tea',
    });
  });

  it(
    'a file one agent writes is read by another agent of the project',
    { timeout: 60_000 },
    async () => {
      await mesh.createAgent({
        id: 'writer',
        allowedTools: ['builtin.*'],
        script: [
          {
            toolCalls: [
              {
                name: 'builtin__write_file',
                arguments: { path: 'handoff.md', content: 'the answer is 42' },
              },
            ],
          },
          {
            toolCalls: [{ name: 'submit_result', arguments: { result: { wrote: 'handoff.md' } } }],
          },
        ],
      });
      await mesh.createAgent({
        id: 'reader',
        allowedTools: ['builtin.*'],
        script: [
          { toolCalls: [{ name: 'builtin__read_file', arguments: { path: 'handoff.md' } }] },
          (req) => {
            const tool = req.body.messages.findLast((m) => m.role === 'tool');
            const text =
              typeof tool?.content === 'string' ? tool.content : JSON.stringify(tool?.content);
            return {
              toolCalls: [{ name: 'submit_result', arguments: { result: { read: text } } }],
            };
          },
        ],
      });
      expect((await mesh.finished(await mesh.startTask('writer', 'write it'))).status).toBe(
        'succeeded',
      );
      const task = await mesh.finished(await mesh.startTask('reader', 'read it'));
      expect(task.status).toBe('succeeded');
      expect(JSON.stringify(task.final_card?.content)).toContain('the answer is 42');
    },
  );
});

describe('documents', () => {
  const lines = [
    {
      id: 'mail-1',
      title: 'Invoice for October',
      body: 'Please find attached the invoice for October. Payment is due in 30 days.',
      metadata: { from: 'billing@acme.test' },
    },
    {
      id: 'mail-2',
      title: 'Lunch on Friday',
      body: 'Shall we have lunch on Friday? The new place serves great noodles.',
    },
    {
      id: 'mail-3',
      title: 'Re: invoices',
      body: 'The invoices for September and October were both paid last week.',
    },
  ];
  const ndjson = (docs: unknown[]) => docs.map((d) => JSON.stringify(d)).join('\n') + '\n';
  const load = (payload: string, key?: string, collection = 'mail') =>
    http('POST', `/documents?collection=${collection}`, {
      payload,
      headers: { 'content-type': 'application/x-ndjson' },
      ...(key ? { key } : {}),
    });

  it('loads JSON lines all or none, naming the bad line', async () => {
    const bad = await load(ndjson([lines[0]]) + '{"id": "x"}\n');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^line 2: body/);
    expect((await http('GET', '/documents/mail-1')).status).toBe(404); // nothing written
    const ok = await load(ndjson(lines));
    expect(ok.status, ok.raw).toBe(200);
    expect(ok.body).toEqual({ inserted: 3, updated: 0 });
    expect((await load(ndjson([lines[1]]))).body).toEqual({ inserted: 0, updated: 1 });
    const many = await load(
      ndjson(Array.from({ length: 11 }, (_, i) => ({ id: `n${i}`, body: 'x' }))),
    );
    expect(many.status).toBe(413);
  });

  it('search_documents ranks matches (stemmed) and marks them; get_document returns the whole', async () => {
    const found = await call('builtin.search_documents', {
      query: 'invoice october',
      collection: 'mail',
    });
    expect(found.status).toBe('succeeded');
    const results = (
      found.content.result as { results: { id: string; snippet: string; rank: number }[] }
    ).results;
    expect(results.map((r) => r.id)).toEqual(['mail-1', 'mail-3']); // "invoices" matches "invoice"
    expect(results[0]!.rank).toBeGreaterThan(results[1]!.rank);
    expect(results[0]!.snippet).toMatch(/<mark>invoice<\/mark>/i);
    const limited = await call('builtin.search_documents', { query: 'invoice', limit: 1 });
    expect((limited.content.result as { results: unknown[] }).results).toHaveLength(1);
    const none = await call('builtin.search_documents', { query: 'invoice -october' });
    expect((none.content.result as { results: unknown[] }).results).toEqual([]);
    const doc = await call('builtin.get_document', { id: 'mail-1' });
    expect(doc.content.result).toMatchObject({
      id: 'mail-1',
      collection: 'mail',
      title: 'Invoice for October',
      metadata: { from: 'billing@acme.test' },
    });
    expect((await call('builtin.get_document', { id: 'mail-9' })).content.error).toMatchObject({
      code: 'not_found',
    });
    const over = await http('GET', `/documents?query=${encodeURIComponent('noodles')}`);
    expect(over.body.results.map((r: { id: string }) => r.id)).toEqual(['mail-2']);
  });

  it("another project finds none of this project's documents", async () => {
    const theirs = await call('builtin.search_documents', { query: 'invoice' }, other.id);
    expect((theirs.content.result as { results: unknown[] }).results).toEqual([]);
    expect(
      (await call('builtin.get_document', { id: 'mail-1' }, other.id)).content.error,
    ).toMatchObject({
      code: 'not_found',
    });
    expect([401, 403, 404]).toContain((await load(ndjson(lines), other.key)).status);
    for (const url of ['/documents?query=invoice', '/documents/mail-1']) {
      expect([401, 403, 404], url).toContain((await http('GET', url, { key: other.key })).status);
    }
    expect([401, 403, 404]).toContain(
      (await http('DELETE', '/documents/mail-1', { key: other.key })).status,
    );
    expect((await http('GET', '/documents/mail-1')).status).toBe(200);
  });
});
