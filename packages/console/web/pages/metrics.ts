// Metrics: calls per minute (bars) with p50/p95 durations (lines), totals over the window, and
// failure rate by tool, from the api's per-minute route over Postgres executions.
import { get, p } from '../api.ts';
import { rateBars, timeChart } from '../charts.ts';
import { clear, h, ms } from '../dom.ts';

interface PerMinute {
  minutes: {
    minute: string;
    calls: number;
    failed: number;
    p50_ms: number | null;
    p95_ms: number | null;
  }[];
  by_tool: { tool: string; calls: number; failed: number; failure_rate: number }[];
}

const hhmm = (iso: string) =>
  new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hour12: false });

/** Every minute of the window, empty ones included, so the x axis is time. */
function fill(data: PerMinute['minutes'], minutes: number): PerMinute['minutes'] {
  const by = new Map(data.map((m) => [Date.parse(m.minute), m]));
  const end = Math.floor(Date.now() / 60_000) * 60_000;
  const out: PerMinute['minutes'] = [];
  for (let t = end - (minutes - 1) * 60_000; t <= end; t += 60_000) {
    out.push(
      by.get(t) ?? {
        minute: new Date(t).toISOString(),
        calls: 0,
        failed: 0,
        p50_ms: null,
        p95_ms: null,
      },
    );
  }
  return out;
}

export async function metricsPage(root: HTMLElement, signal: AbortSignal): Promise<void> {
  const windowSel = h(
    'select',
    { name: 'window' },
    ...[30, 60, 360, 1440].map((m) =>
      h('option', { value: m, selected: m === 60 }, m < 120 ? `${m} min` : `${m / 60} h`),
    ),
  ) as HTMLSelectElement;
  const box = h('div');
  clear(root, h('div', { class: 'toolbar' }, h('h1', {}, 'Metrics'), windowSel), box);
  async function load(): Promise<void> {
    const minutes = Number(windowSel.value);
    const d = await get<PerMinute>(p(`/executions/per-minute?minutes=${minutes}`));
    const all = fill(d.minutes, minutes);
    const xs = all.map((m) => hhmm(m.minute));
    const calls = all.reduce((n, m) => n + m.calls, 0);
    const failed = all.reduce((n, m) => n + m.failed, 0);
    const worst95 = Math.max(0, ...all.map((m) => m.p95_ms ?? 0));
    clear(
      box,
      h(
        'div',
        { class: 'stats' },
        h('div', {}, h('b', {}, calls), ' calls'),
        h(
          'div',
          {},
          h('b', {}, calls ? `${((failed / calls) * 100).toFixed(1)}%` : '—'),
          ' failed',
        ),
        h('div', {}, h('b', {}, ms(worst95 || null)), ' worst p95 in a minute'),
      ),
      h('h2', {}, 'Calls per minute'),
      timeChart(
        xs,
        [{ label: 'calls', cls: 'calls', values: all.map((m) => m.calls) }],
        'calls/min',
      ),
      h('h2', {}, 'Duration p50 / p95 per minute'),
      h(
        'p',
        { class: 'legend' },
        h('span', { class: 'k p50' }, 'p50'),
        ' ',
        h('span', { class: 'k p95' }, 'p95'),
      ),
      timeChart(
        xs,
        [
          { label: '', cls: 'none', values: all.map(() => 0) },
          { label: 'p50', cls: 'p50', values: all.map((m) => m.p50_ms) },
          { label: 'p95', cls: 'p95', values: all.map((m) => m.p95_ms) },
        ],
        'ms',
      ),
      h('h2', {}, 'Failure rate by tool'),
      d.by_tool.length
        ? rateBars(
            d.by_tool.map((t) => ({ name: t.tool, rate: t.failure_rate, note: `of ${t.calls}` })),
          )
        : h('p', { class: 'muted' }, 'no calls in this window'),
    );
  }
  windowSel.addEventListener('change', () => void load());
  await load();
  const timer = setInterval(() => void load().catch(() => undefined), 15_000);
  signal.addEventListener('abort', () => clearInterval(timer));
}
