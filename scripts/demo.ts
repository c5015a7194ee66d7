// `pnpm demo`: an agent task through a running stack. It creates a project through the api,
// uploads the example image skill, makes a profile and an agent, starts a task, follows the
// agent's events live over NATS, and prints the final card and where the picture is. The model
// is whatever the agent worker talks to: the scripted one `pnpm stack` starts when no LLM key is
// set, or a real one. `pnpm stack` runs it once the services are up; on its own it reads
// .data/stack.json (or the stack.json in STACK_DATA_DIR).
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { zipFolder } from '@toolmesh/cli';
import { credsConnectOptions } from '@toolmesh/client';
import { createSubjects } from '@toolmesh/protocol';

export interface DemoTarget {
  natsUrl: string;
  root: string;
  apiUrl: string;
  adminKey: string;
  /** Says which model answers, for the reader of the demo's output. */
  model: string;
}

const ROOT = join(import.meta.dirname, '..');
const say = (line: string) => console.log(`[demo] ${line}`);

interface ApiError {
  error?: { code?: string; message?: string };
}

function apiClient(base: string, key: string) {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const form = body instanceof FormData;
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined || form ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : form ? body : JSON.stringify(body),
    });
    const text = await res.text();
    const json = (text ? JSON.parse(text) : {}) as T & ApiError;
    if (!res.ok) {
      throw new Error(
        `${method} ${path}: ${res.status} ${json.error?.code}: ${json.error?.message}`,
      );
    }
    return json;
  };
}

interface TaskView {
  status: string;
  final_card?: { card_id: string; kind: string; content: unknown } | null;
}

export async function runDemo(target: DemoTarget): Promise<boolean> {
  const admin = apiClient(target.apiUrl, target.adminKey);
  const projectId = `demo-${randomBytes(3).toString('hex')}`;
  const created = await admin<{ key: { key: string } }>('POST', '/v1/projects', {
    id: projectId,
    name: 'Demo',
  });
  const api = apiClient(target.apiUrl, created.key.key);
  const p = `/v1/projects/${projectId}`;
  say(`project ${projectId} created`);

  const form = new FormData();
  const zip = await zipFolder(join(ROOT, 'examples/skills/draw-image'));
  form.set('file', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'skill.zip');
  await api('POST', `${p}/skills`, form);
  say('skill draw-image uploaded');
  await api('POST', `${p}/profiles`, {
    name: 'painter',
    allowed_tools: ['skills.*'],
    allowed_internal_tools: ['submit_result'],
    system_prompt:
      'You draw pictures with the draw-image skill (skills.run_cmd with skill "draw-image", ' +
      'output out/picture.png), then call submit_result with the artifact.',
  });
  await api('POST', `${p}/agents`, { id: 'painter', profile: 'painter' });
  say(`agent painter ready; the model: ${target.model}`);

  // The demo follows its project's events as an external publisher would: with a bus credential
  // of the project, issued by the api (on a NATS without authentication there is none to get).
  const issued = await api<{ creds: string }>('POST', `${p}/bus-credentials`, {
    name: 'demo',
  }).catch((err: unknown) => {
    if (!/bus_auth_unconfigured/.test((err as Error).message)) throw err;
    return undefined;
  });
  if (issued) say('bus credential of the project issued; following the agent with it');
  const nc = await connect({
    servers: target.natsUrl,
    ...(issued ? await credsConnectOptions(issued.creds) : {}),
  });
  try {
    // Live: the agent's events (steps, state, the task's end) and its streamed tokens.
    const subjects = createSubjects(target.root);
    const scope = { project: projectId, channel: 'main', agent: 'painter' };
    let finished: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (finished = resolve));
    const subs = (['step', 'state', 'task'] as const).map((event) =>
      nc.subscribe(subjects.agentEvent({ ...scope, event })),
    );
    for (const sub of subs) {
      void (async () => {
        for await (const m of sub) {
          const kind = m.subject.split('.').at(-1);
          say(`event ${kind}: ${m.string().slice(0, 240)}`);
          if (kind === 'task') finished();
        }
      })();
    }
    const chunks = nc.subscribe(subjects.agentChunk(scope));
    let line = '';
    void (async () => {
      for await (const m of chunks) {
        line += (JSON.parse(m.string()) as { delta?: string }).delta ?? '';
        if (line.endsWith('.') || line.length > 100) {
          say(`model> ${line}`);
          line = '';
        }
      }
    })();

    const input = 'Draw a picture that says hello from toolmesh.';
    const { task_id: taskId } = await api<{ task_id: string }>(
      'POST',
      `${p}/agents/painter/tasks`,
      {
        input,
        channel: 'main',
      },
    );
    say(`task ${taskId} started: ${JSON.stringify(input)}`);
    const deadline = Date.now() + 180_000;
    let task: TaskView = { status: 'pending' };
    while (Date.now() < deadline) {
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 500))]);
      task = await api<TaskView>('GET', `${p}/tasks/${taskId}`);
      if (task.status === 'succeeded' || task.status === 'failed') break;
    }
    for (const sub of [...subs, chunks]) sub.unsubscribe();
    say(`task ${task.status}; final card:`);
    console.log(JSON.stringify(task.final_card ?? null, null, 2));
    if (task.status !== 'succeeded') return false;

    const artifactIds = JSON.stringify(task.final_card?.content ?? {}).match(
      /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g,
    );
    for (const id of new Set(artifactIds ?? [])) {
      const a = await api<{ filename: string; storage_uri: string; download_url: string }>(
        'GET',
        `${p}/artifacts/${id}`,
      ).catch(() => undefined);
      if (!a) continue; // Some other id in the card (a tool call's).
      const path = a.storage_uri.startsWith('file:') ? fileURLToPath(a.storage_uri) : undefined;
      say(`artifact ${a.filename} (${a.storage_uri})`);
      say(`download: ${a.download_url.startsWith('/') ? target.apiUrl : ''}${a.download_url}`);
      if (path !== undefined) say(`artifact path: ${path}`);
      return path === undefined || existsSync(path);
    }
    say('the final card names no artifact');
    return false;
  } finally {
    await nc.close();
  }
}

async function targetFromStack(): Promise<DemoTarget> {
  // pnpm stack's folder (STACK_DATA_DIR, as the stack was given it). A second stack beside the
  // first keeps its file in <folder>/stacks/api-<port>/: name that folder to reach it.
  const dir = process.env['STACK_DATA_DIR']
    ? resolve(process.env['STACK_DATA_DIR'])
    : join(ROOT, '.data');
  const file = join(dir, 'stack.json');
  const text = await readFile(file, 'utf8').catch(() => {
    throw new Error(`no running stack found (${file}); start one with pnpm stack`);
  });
  return JSON.parse(text) as DemoTarget;
}

if (import.meta.main) {
  const ok = await targetFromStack()
    .then(runDemo)
    .catch((err: unknown) => {
      console.error(`demo failed: ${(err as Error).message}`);
      return false;
    });
  process.exit(ok ? 0 : 1);
}
