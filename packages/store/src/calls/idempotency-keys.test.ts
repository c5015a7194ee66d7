// Idempotency-Key records against a real Postgres: claimed by one request at a time, answering
// the same request again once released, refusing another request, per project, forgotten after
// their age, and deleted by retention with their execution.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useMigratedStore } from '../test-support.ts';

const fixture = useMigratedStore(['p', 'q']);

const claim = (key: string, fingerprint: string, o: { project?: string; id?: string } = {}) =>
  fixture.store.idempotencyKeys.claim({
    projectId: o.project ?? 'p',
    key,
    fingerprint,
    toolCallId: o.id ?? randomUUID(),
    lockMs: 60_000,
    maxAgeHours: 24,
  });

const age = (key: string, hours: number) =>
  fixture.pool.query(
    `UPDATE state.idempotency_keys SET created_at = now() - make_interval(hours => $2)
     WHERE idem_key = $1`,
    [key, hours],
  );

describe('idempotency keys', () => {
  it('one request holds a key; released, the same request gets its call again, another is refused', async () => {
    const first = await claim('k1', 'f1', { id: 'call-1' });
    expect(first).toEqual({ kind: 'claimed', toolCallId: 'call-1', fresh: true });
    expect(await claim('k1', 'f1')).toEqual({ kind: 'in_progress' });
    expect(await claim('k1', 'f2')).toEqual({ kind: 'mismatch' });
    await fixture.store.idempotencyKeys.release('p', 'k1', 'call-1');
    expect(await claim('k1', 'f1')).toEqual({
      kind: 'claimed',
      toolCallId: 'call-1',
      fresh: false,
    });
    expect(await claim('k1', 'f2')).toEqual({ kind: 'mismatch' });
  });

  it('keys are per project', async () => {
    expect(await claim('k2', 'f', { id: 'in-p' })).toMatchObject({ toolCallId: 'in-p' });
    expect(await claim('k2', 'other', { project: 'q', id: 'in-q' })).toEqual({
      kind: 'claimed',
      toolCallId: 'in-q',
      fresh: true,
    });
  });

  it('a forgotten key starts afresh; an expired one too, and retention deletes expired ones', async () => {
    await claim('k3', 'f', { id: 'never-stored' });
    await fixture.store.idempotencyKeys.forget('p', 'k3', 'never-stored');
    expect(await claim('k3', 'f2', { id: 'second' })).toMatchObject({
      kind: 'claimed',
      fresh: true,
    });
    await age('k3', 25);
    expect(await claim('k3', 'f3', { id: 'third' })).toEqual({
      kind: 'claimed',
      toolCallId: 'third',
      fresh: true,
    });
    await claim('k4', 'f');
    await age('k4', 25);
    expect(await fixture.store.idempotencyKeys.deleteExpired(24, 100)).toBe(1);
    const left = await fixture.pool.query(
      `SELECT idem_key FROM state.idempotency_keys WHERE idem_key IN ('k3', 'k4')`,
    );
    expect(left.rows).toEqual([{ idem_key: 'k3' }]);
  });

  it('goes with its execution when retention deletes that', async () => {
    const id = `ret-${randomUUID()}`;
    await claim('k5', 'f', { id });
    await fixture.store.executions.enqueue({
      projectId: 'p',
      toolCallId: id,
      channel: 'api',
      toolName: 'builtin.echo',
      target: 'builtin',
      instanceId: 'api',
      requestFingerprint: 'f',
    });
    expect(await fixture.store.executions.requestFingerprint('p', id)).toBe('f');
    await fixture.pool.query(
      `UPDATE state.tool_executions SET status = 'succeeded',
         finished_at = now() - interval '3 hours' WHERE project_id = 'p' AND tool_call_id = $1`,
      [id],
    );
    expect((await fixture.store.retention.deleteExpiredExecutions(1, 100)).executions).toBe(1);
    const left = await fixture.pool.query(
      `SELECT 1 FROM state.idempotency_keys WHERE project_id = 'p' AND idem_key = 'k5'`,
    );
    expect(left.rows).toEqual([]);
    expect(await fixture.store.executions.requestFingerprint('p', id)).toBeUndefined();
  });
});
