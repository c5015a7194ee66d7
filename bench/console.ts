// `pnpm bench console`: the console's first page with 10,000 executions in the project. The
// rows go straight into Postgres; then Chromium (Debian's, through playwright-core) opens
// /console/ signed in, in a fresh browser context each run (empty cache), and the figure is the
// time from navigation start to the first rows of the executions table on screen
// (performance.now() in the page once the rows exist). The history route pages by keyset, so
// only the newest page travels.
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { startTestApi } from '../services/api/src/test/support.ts';
import { chromiumPath } from '../tests/support/browser.ts';
import { chromium } from 'playwright-core';
import { summarize, table } from './stats.ts';
import { writeResult } from './support.ts';

const EXECUTIONS = Number(process.env['BENCH_EXECUTIONS'] ?? 10_000);
const RUNS = Number(process.env['BENCH_RUNS'] ?? 10);
const TARGET_MS = 1_000;

// The per-key request limit stays on, far above the load, so its cost (one Postgres statement
// per request) is part of what is measured without refusing any request.
const api = await startTestApi({
  CG__LOG__LEVEL: 'warn',
  CG__API__RATE_LIMIT_PER_MINUTE: '100000000',
  CG__API__ADMIN_RATE_LIMIT_PER_MINUTE: '100000000',
});
try {
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  const project = await api.createProject();
  // One statement: ten tools, the four finished statuses, a second apart, newest now.
  await api.store.pool.query(
    `INSERT INTO state.tool_executions
       (project_id, tool_call_id, channel, tool_name, target, agent_id, status, instance_id,
        started_at, finished_at, duration_ms, attempts)
     SELECT $1, 'call-' || lpad(i::text, 6, '0'), 'main', 'bench.tool' || (i % 10), 'bench',
       CASE WHEN i % 3 = 0 THEN 'agent-' || (i % 4) END,
       (ARRAY['succeeded', 'succeeded', 'succeeded', 'failed', 'timeout', 'canceled'])[1 + i % 6],
       'bench', now() - make_interval(secs => i), now() - make_interval(secs => i) + interval '20 ms',
       5 + (i % 200), 1
     FROM generate_series(1, $2::int) AS i`,
    [project.id, EXECUTIONS],
  );
  // What autovacuum would do after such a load: fresh statistics for the planner.
  await api.store.pool.query('ANALYZE state.tool_executions');
  const { rows } = await api.store.pool.query<{ n: string }>(
    'SELECT count(*) AS n FROM state.tool_executions WHERE project_id = $1',
    [project.id],
  );
  console.log(`${rows[0]?.n} executions in project ${project.id}`);

  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  const samples: number[] = [];
  const apiSamples: number[] = [];
  let shown = 0;
  try {
    for (let run = 0; run <= RUNS; run++) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      await context.addInitScript(
        ([key, id]) => {
          sessionStorage.setItem('toolmesh.key', key);
          sessionStorage.setItem('toolmesh.project', id);
        },
        [project.key, project.id] as const,
      );
      const page = await context.newPage();
      await page.goto(`${base}/console/#/executions`, { waitUntil: 'commit' });
      await page.waitForSelector('table.executions tbody tr', { timeout: 30_000 });
      const [ms, apiMs] = await page.evaluate(() => {
        const list = performance
          .getEntriesByType('resource')
          .find((e) => e.name.includes('/executions?'));
        return [performance.now(), list ? list.duration : NaN];
      });
      shown = await page.locator('table.executions tbody tr').count();
      await context.close();
      if (run > 0) {
        // run 0 warms the api's prepared statements and the JIT
        samples.push(ms);
        apiSamples.push(apiMs);
      }
    }
  } finally {
    await browser.close();
  }
  const s = summarize(samples);
  const worst = Math.max(...samples);
  const apiP50 = Math.round(summarize(apiSamples).p50_ms);
  console.log(
    table([
      {
        executions: EXECUTIONS,
        runs: s.n,
        rows_shown: shown,
        p50_ms: Math.round(s.p50_ms),
        max_ms: Math.round(worst),
        history_request_p50_ms: apiP50,
        target_ms: TARGET_MS,
      },
    ]),
  );
  console.log(
    `first rows rendered in ${Math.round(s.p50_ms)} ms (p50), ${Math.round(worst)} ms (worst): ` +
      (worst < TARGET_MS ? `under ${TARGET_MS} ms` : `OVER ${TARGET_MS} ms`),
  );
  await writeResult('console', {
    page: 'GET /console/#/executions, navigation start to first rows rendered',
    executions: EXECUTIONS,
    rows_shown: shown,
    runs: s.n,
    p50_ms: Math.round(s.p50_ms),
    mean_ms: Math.round(s.mean_ms),
    max_ms: Math.round(worst),
    history_request_p50_ms: apiP50,
    target_ms: TARGET_MS,
    under_target: worst < TARGET_MS,
    node: process.version,
    cpus: cpus().length,
    measured_at: new Date().toISOString(),
  });
} finally {
  await api.close();
}
