// Sandboxes: the project's sessions with their state, the lock holder and when it lapses, and
// the idle and hard TTLs; refreshed every few seconds while the page is open.
import { get, p } from '../api.ts';
import { badge, clear, h, table, time } from '../dom.ts';

interface Sandbox {
  sandbox_id: string;
  provider: string;
  agent_id: string | null;
  session_key: string;
  state: string;
  created_at: string;
  last_used_at: string;
  idle_expires_at: string | null;
  hard_expires_at: string | null;
  lock_owner: string | null;
  lock_expires_at: string | null;
  reap_attempts: number;
  last_error: string | null;
}

const left = (iso: string | null) => {
  if (!iso) return '—';
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
  return s <= 0 ? 'due' : s < 120 ? `${s} s` : `${Math.round(s / 60)} min`;
};

export async function sandboxesPage(root: HTMLElement, signal: AbortSignal): Promise<void> {
  const box = h('div');
  const reaper = h('span', { class: 'reaper' });
  clear(root, h('div', { class: 'toolbar' }, h('h1', {}, 'Sandboxes'), reaper), box);
  async function load(): Promise<void> {
    const r = await get<{
      instances: number;
      last_pass_at: string | null;
      last_pass_ago_ms: number | null;
    }>(p('/sandboxes/reaper'));
    reaper.textContent =
      r.last_pass_at === null
        ? 'reaper: no pass recorded'
        : `reaper: last pass ${Math.round((r.last_pass_ago_ms ?? 0) / 1000)} s ago (${time(r.last_pass_at)}), ${r.instances} instance(s)`;
    const { sandboxes } = await get<{ sandboxes: Sandbox[] }>(p('/sandboxes?limit=200'));
    clear(
      box,
      sandboxes.length === 0
        ? h('p', { class: 'muted' }, 'no sandbox sessions')
        : table(
            [
              'session',
              'provider',
              'agent',
              'state',
              'lock held by',
              'lock lapses',
              'idle TTL',
              'hard TTL',
              'last used',
              'reap attempts',
              'last error',
            ],
            sandboxes.map((s) =>
              h(
                'tr',
                { 'data-sandbox': s.sandbox_id },
                h('td', { class: 'mono' }, s.session_key),
                h('td', {}, s.provider),
                h('td', {}, s.agent_id ?? '—'),
                h('td', {}, badge(s.state)),
                h('td', { class: 'mono' }, s.lock_owner ?? '—'),
                h('td', {}, left(s.lock_expires_at)),
                h('td', {}, left(s.idle_expires_at)),
                h('td', {}, left(s.hard_expires_at)),
                h('td', {}, time(s.last_used_at)),
                h('td', {}, s.reap_attempts),
                h('td', {}, s.last_error ?? '—'),
              ),
            ),
          ),
    );
  }
  await load();
  const timer = setInterval(() => void load().catch(() => undefined), 5000);
  signal.addEventListener('abort', () => clearInterval(timer));
}
