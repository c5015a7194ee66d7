// The console's shell: sign-in (a project key, or the admin key and then a project), the
// navigation, and a hash router over the pages. Each page gets an AbortSignal that ends its
// live subscriptions when the user navigates away.
import './style.css';
import { ApiError, get, session } from './api.ts';
import { clear, h } from './dom.ts';
import { executionsPage } from './pages/executions.ts';
import { tasksPage, taskPage } from './pages/tasks.ts';
import { threadsPage, threadPage } from './pages/threads.ts';
import { artifactsPage } from './pages/artifacts.ts';
import { sandboxesPage } from './pages/sandboxes.ts';
import { toolsPage } from './pages/tools.ts';
import { metricsPage } from './pages/metrics.ts';
import { approvalsPage } from './pages/approvals.ts';
import { inputsPage } from './pages/inputs.ts';

export type Page = (root: HTMLElement, signal: AbortSignal, arg?: string) => Promise<void>;

const pages: Record<string, [string, Page]> = {
  executions: ['Executions', executionsPage],
  tasks: ['Agents & tasks', tasksPage],
  threads: ['Threads', threadsPage],
  artifacts: ['Artifacts', artifactsPage],
  sandboxes: ['Sandboxes', sandboxesPage],
  tools: ['Tools', toolsPage],
  approvals: ['Approvals', approvalsPage],
  inputs: ['Inputs', inputsPage],
  metrics: ['Metrics', metricsPage],
};

const app = document.getElementById('app')!;
let current: AbortController | undefined;

function signInView(message?: string): void {
  const key = h('input', {
    type: 'password',
    name: 'key',
    placeholder: 'tmk_… or the admin key',
    required: true,
    autocomplete: 'off',
  }) as HTMLInputElement;
  const project = h('input', {
    name: 'project',
    placeholder: 'project id (empty with the admin key)',
  }) as HTMLInputElement;
  const error = h('p', { class: 'error', role: 'alert' }, message ?? '');
  const choose = h('div', { class: 'projects' });
  const form = h(
    'form',
    { class: 'signin', onsubmit: (e: Event) => void submit(e) },
    h('h1', {}, 'toolmesh console'),
    h('label', {}, 'API key', key),
    h('label', {}, 'Project', project),
    h('button', { type: 'submit' }, 'Sign in'),
    error,
    choose,
  );
  async function submit(e: Event): Promise<void> {
    e.preventDefault();
    error.textContent = '';
    const k = key.value.trim();
    const id = project.value.trim();
    try {
      if (id) {
        await get(`/v1/projects/${encodeURIComponent(id)}`, k);
        session.signIn(k, id);
        location.hash = '#/executions';
        route();
        return;
      }
      const { projects } = await get<{ projects: { id: string; name: string }[] }>(
        '/v1/projects',
        k,
      );
      clear(
        choose,
        h('h2', {}, 'Projects'),
        ...projects.map((pr) =>
          h(
            'button',
            {
              type: 'button',
              class: 'project',
              'data-project': pr.id,
              onclick: () => {
                session.signIn(k, pr.id);
                location.hash = '#/executions';
                route();
              },
            },
            `${pr.id} — ${pr.name}`,
          ),
        ),
      );
    } catch (err) {
      error.textContent =
        err instanceof ApiError
          ? err.status === 404 || (err.status === 401 && !id)
            ? id
              ? `no project ${id} for this key`
              : 'a project key needs its project id; the project list needs the admin key'
            : err.message
          : String(err);
    }
  }
  clear(app, form);
}

function route(): void {
  current?.abort();
  if (!session.key || !session.project) return signInView();
  const [name = 'executions', ...rest] = location.hash.replace(/^#\//, '').split('/');
  // A thread is named by its agent and its id: `#/threads/<agent>/<thread>`.
  const arg = rest.length ? rest.map(decodeURIComponent).join('/') : undefined;
  const entry = pages[name] ?? pages['executions']!;
  const page: Page =
    name === 'tasks' && arg ? taskPage : name === 'threads' && arg ? threadPage : entry[1];
  const main = h('main', { 'data-page': name });
  const nav = h(
    'nav',
    {},
    h('strong', {}, 'toolmesh'),
    ...Object.entries(pages).map(([k, [label]]) =>
      h('a', { href: `#/${k}`, class: k === name ? 'active' : '' }, label),
    ),
    h('span', { class: 'who' }, `project ${session.project}`),
    h(
      'button',
      {
        type: 'button',
        onclick: () => {
          session.signOut();
          route();
        },
      },
      'Sign out',
    ),
  );
  clear(app, nav, main);
  const ctl = new AbortController();
  current = ctl;
  page(main, ctl.signal, arg).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 401) {
      session.signOut();
      return signInView('the key was refused; sign in again');
    }
    if (!ctl.signal.aborted)
      main.append(
        h('p', { class: 'error', role: 'alert' }, String(err instanceof Error ? err.message : err)),
      );
  });
}

window.addEventListener('hashchange', route);
route();
