// Calls held for approval, written straight into the store an hour apart (held-0 the oldest), so
// a test has approvals past the newest page without running a tool service.
import pg from 'pg';
import type { TestApi } from '../../services/api/src/test/support.ts';

const BASE = Date.parse('2026-01-05T00:00:00Z');
const HOUR = 3_600_000;

/** When `held-<i>` was held. */
export const heldAt = (i: number): string => new Date(BASE + i * HOUR).toISOString();

export async function holdApprovals(api: TestApi, project: string, n: number): Promise<void> {
  const db = new pg.Client({ connectionString: api.config.postgres.url });
  await db.connect();
  try {
    for (let i = 0; i < n; i++) {
      await api.store.approvals.park({
        projectId: project,
        toolCallId: `held-${i}`,
        channel: 'main',
        toolName: 'builtin.echo',
        target: 'builtin',
        instanceId: 'test',
        arguments: { i },
        requiredBy: { source: 'target', mode: 'required' },
        timeoutMs: 86_400_000 * 365,
        subject: `${api.config.nats.subject_root}.v1.${project}.main.cmd.tool.builtin.echo`,
        headers: {},
        body: new TextEncoder().encode('{}'),
      });
      await db.query(
        'UPDATE state.approvals SET requested_at = $3 WHERE project_id = $1 AND tool_call_id = $2',
        [project, `held-${i}`, heldAt(i)],
      );
    }
  } finally {
    await db.end();
  }
}
