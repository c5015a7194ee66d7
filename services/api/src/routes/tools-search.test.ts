// Finding tools over HTTP: filters by category, tag, origin and text (literal `_` and `%`),
// pages, and a tool's details with its usage counted from the execution log.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, expectError } from '../test/support.ts';
import { tool } from './tools-fixtures.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

describe('list and details', () => {
  it('filters by category, tag, origin and text in name or description', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/tools`;
    const mk = (body: unknown) => api.request('POST', url, { key: p.key, body });
    await mk(tool('web.search', { category: 'web', tags: ['net'] }));
    await mk(
      tool('mail.find_mail', {
        category: 'email',
        tags: ['net', 'pii'],
        description: 'Find e-mails by sender',
      }),
    );
    await mk(tool('fs.read', { category: 'filesystem', description: 'Read a file (100% local)' }));
    const names = async (qs: string) => {
      const res = await api.request('GET', `${url}?${qs}`, { key: p.key });
      expect(res.status).toBe(200);
      return (res.body.tools as { name: string }[]).map((t) => t.name);
    };
    expect(await names('origin=external')).toEqual(['fs.read', 'mail.find_mail', 'web.search']);
    expect(await names('category=email')).toEqual(['mail.find_mail']);
    expect(await names('tag=net')).toEqual(['mail.find_mail', 'web.search']);
    expect(await names('tag=net&category=web')).toEqual(['web.search']);
    expect(await names('q=SENDER')).toEqual(['mail.find_mail']);
    expect(await names('q=find_')).toEqual(['mail.find_mail']); // `_` is a plain character
    expect(await names('q=100%25')).toEqual(['fs.read']);
    expect(await names('q=run_cmd')).toEqual(['skills.run_cmd', 'skills.run_cmd_async']);
    expect(await names('q=run_cmd_')).toEqual(['skills.run_cmd_async']);
    expect((await names('origin=builtin')).every((n) => n.startsWith('builtin.'))).toBe(true);
    expect(await names('origin=external&limit=2')).toEqual(['fs.read', 'mail.find_mail']);
    expect(await names('origin=external&limit=2&after=mail.find_mail')).toEqual(['web.search']);
    expectError(
      await api.request('GET', `${url}?origin=mine`, { key: p.key }),
      400,
      'invalid_request',
    );
    expectError(
      await api.request('GET', `${url}?owner=me`, { key: p.key }),
      400,
      'invalid_request',
    );
  });

  it('details carry usage from the execution log', async () => {
    const p = await api.createProject();
    await api.request('POST', `/v1/projects/${p.id}/tools`, {
      key: p.key,
      body: tool('web.search'),
    });
    const fresh = await api.request('GET', `/v1/projects/${p.id}/tools/web.search`, { key: p.key });
    expect(fresh.body.usage).toEqual({
      calls: 0,
      succeeded: 0,
      failed: 0,
      timeout: 0,
      canceled: 0,
      active: 0,
      avg_duration_ms: null,
      last_called_at: null,
    });
    const last = new Date('2030-01-02T03:04:05.000Z');
    const rows: [string, number | null, Date][] = [
      ['succeeded', 100, new Date('2030-01-01T00:00:00Z')],
      ['succeeded', 300, new Date('2030-01-01T00:00:01Z')],
      ['failed', 50, new Date('2030-01-01T00:00:02Z')],
      ['timeout', 1000, new Date('2030-01-01T00:00:03Z')],
      ['canceled', 150, new Date('2030-01-01T00:00:04Z')],
      ['running', null, last],
    ];
    const insert = (project: string, name: string, status: string, ms: number | null, at: Date) =>
      api.store.pool.query(
        `INSERT INTO state.tool_executions
           (project_id, tool_call_id, channel, tool_name, target, status, instance_id, started_at, duration_ms)
         VALUES ($1, $2, 'main', $3, 'web', $4, 'test', $5, $6)`,
        [project, randomUUID(), name, status, at, ms],
      );
    for (const [status, ms, at] of rows) await insert(p.id, 'web.search', status, ms, at);
    await insert(p.id, 'web.other', 'succeeded', 9_999, last); // another tool
    const other = await api.createProject();
    await insert(other.id, 'web.search', 'failed', 9_999, last); // another project
    const res = await api.request('GET', `/v1/projects/${p.id}/tools/web.search`, { key: p.key });
    expect(res.status).toBe(200);
    expect(res.body.usage).toEqual({
      calls: 6,
      succeeded: 2,
      failed: 1,
      timeout: 1,
      canceled: 1,
      active: 1,
      avg_duration_ms: 320,
      last_called_at: last.toISOString(),
    });
  });

  it('answers 404 for a missing tool and invalid_id for a malformed name', async () => {
    const p = await api.createProject();
    expectError(
      await api.request('GET', `/v1/projects/${p.id}/tools/web.nothing`, { key: p.key }),
      404,
      'not_found',
    );
    expectError(
      await api.request('GET', `/v1/projects/${p.id}/tools/nodot`, { key: p.key }),
      400,
      'invalid_id',
    );
    expectError(await api.request('GET', `/v1/projects/${p.id}/tools`), 401, 'unauthorized');
  });
});
