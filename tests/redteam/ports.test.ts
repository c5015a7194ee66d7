// Red team, exposed ports: skills.run_service's endpoints answer only a request that carries the
// endpoint's own bearer token. Without it, with another endpoint's token of the same project, or
// with another project's endpoint token, the gate refuses with 401 and the service never sees
// the request; the forwarder's unix socket behind the gate is in a private folder another user
// cannot enter, and the token is in no task head. The owner with the token is served throughout.
// The suite runs once per service mode (root, unprivileged: tests/support/service-modes.ts): the
// forwarders need no root. The host port is the service's own when it is free, another when not.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSkillsMesh, type SkillsMesh } from '../support/skills-mesh.ts';
import { processesWith } from '../support/procs.ts';
import { isRoot, NOBODY, serviceModes, startSkillsAs } from '../support/service-modes.ts';

const run = promisify(execFile);

interface Endpoint {
  port: number;
  host_port: number;
  host_port_fallback: boolean;
  url: string;
  token: string;
}

let mesh: SkillsMesh;
let other: { id: string; key: string };
let mine: Endpoint;
let mineToo: Endpoint;
let theirs: Endpoint;
const greeting = `ports${Date.now()}`;

const tasks: { project: string; id: string }[] = [];

/** Starts a service in `project` with port 8000 exposed: the http-hello skill, or a static server. */
async function expose(
  project: string,
  session: string,
  greet?: string,
  port = 8000,
): Promise<Endpoint> {
  const r = await mesh.client.callTool({
    project,
    channel: 'main',
    tool: 'skills.run_service',
    arguments: {
      ...(greet === undefined
        ? { command: `python3 -m http.server ${port} --bind 127.0.0.1` }
        : { skill: 'http-hello', command: `python3 server.py --port ${port} --greeting ${greet}` }),
      session_id: session,
      expose_ports: [port],
    },
    timeoutMs: 90_000,
  });
  expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
  const res = r.content.result as { task_id: string; endpoints: Endpoint[] };
  tasks.push({ project, id: res.task_id });
  return res.endpoints[0]!;
}

let serviceUid = 0;

beforeAll(async () => {
  mesh = await startSkillsMesh();
  await mesh.uploadSkill(join(import.meta.dirname, '..', '..', 'examples/skills/http-hello'));
}, 120_000);

afterAll(async () => {
  await mesh?.close();
});

const get = (ep: Endpoint, token?: string) =>
  fetch(
    `${ep.url}/probe`,
    token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
  );

/** A port nothing on the host listens on right now. */
async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

describe.each(serviceModes)('red team: exposed ports, $name', ({ mode }) => {
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const service = await startSkillsAs(mesh, mode, {});
    stop = () => service.stop();
    serviceUid = service.uid;
    other = await mesh.api.createProject();
    tasks.length = 0;
    mine = await expose(mesh.project.id, `svc-a-${mode}`, greeting);
    mineToo = await expose(mesh.project.id, `svc-b-${mode}`, `${greeting}b`);
    theirs = await expose(other.id, `svc-c-${mode}`);
  }, 240_000);
  afterAll(async () => {
    await stop?.();
  });

  it('the owner with the endpoint token reaches the service', async () => {
    const res = await get(mine, mine.token);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ greeting, path: '/probe' });
    // The scheme is case-insensitive (RFC 7235).
    const lower = await fetch(`${mine.url}/`, {
      headers: { authorization: `bearer ${mine.token}` },
    });
    expect(lower.status).toBe(200);
  });

  it.each([
    ['no token', () => get(mine)],
    ['a wrong token', () => get(mine, 'x'.repeat(43))],
    ["another endpoint's token of the same project", () => get(mine, mineToo.token)],
    ["another project's endpoint token", () => get(mine, theirs.token)],
    ['the token in the query string', () => fetch(`${mine.url}/probe?token=${mine.token}`)],
    [
      'basic auth with the token',
      () =>
        fetch(`${mine.url}/probe`, {
          headers: { authorization: `Basic ${Buffer.from(`x:${mine.token}`).toString('base64')}` },
        }),
    ],
  ])('refuses %s with 401, naming no token', async (_what, request) => {
    const res = await request();
    expect(res.status).toBe(401);
    const body = await res.text();
    expect(JSON.parse(body)).toMatchObject({ error: { code: 'unauthorized' } });
    for (const ep of [mine, mineToo, theirs]) expect(body).not.toContain(ep.token);
    expect(body).not.toContain(greeting);
  });

  it("the other project's endpoint refuses this project's token, and serves its own", async () => {
    expect((await get(theirs, mine.token)).status).toBe(401);
    const own = await fetch(`${theirs.url}/`, {
      headers: { authorization: `Bearer ${theirs.token}` },
    });
    expect(own.status).toBe(200);
    expect(await own.text()).toContain('Directory listing');
  });

  it('a WebSocket upgrade without the token is refused', async () => {
    const { stdout } = await run('bash', [
      '-c',
      `printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: Upgrade\\r\\nUpgrade: websocket\\r\\nSec-WebSocket-Version: 13\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n\\r\\n' | socat -t 2 - TCP:127.0.0.1:${mine.host_port}`,
    ]);
    expect(stdout).toMatch(/^HTTP\/1\.1 401/);
  });

  it('the forwarder behind the gate listens on a socket in a private folder only', async () => {
    // The forwarder's own socket, as the task head records it: a host port can be reused.
    const head = await mesh.api.store.skillTasks.get(mesh.project.id, tasks[0]!.id);
    const recorded = (head?.endpoints[0] as { forwarder_socket: string }).forwarder_socket;
    const [pid] = await processesWith(`UNIX-LISTEN:${recorded},`);
    expect(pid).toBeDefined();
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    const socket = argv[1]!.replace(/^UNIX-LISTEN:/, '').split(',')[0]!;
    expect(argv[1]).toMatch(/^UNIX-LISTEN:/);
    expect((await stat(dirname(socket))).mode & 0o777).toBe(0o700);
    expect((await stat(socket)).mode & 0o077).toBe(0);
    // No TCP listener but the gate: the socat has no TCP-LISTEN of its own.
    expect(argv.some((a) => a.startsWith('TCP-LISTEN'))).toBe(false);
    expect((await stat(socket)).uid).toBe(serviceUid);
    if (isRoot) {
      // Another unprivileged user on the host (the sandboxes' nobody, or when the service is
      // nobody, another uid) cannot connect to it.
      const stranger = serviceUid === NOBODY.uid ? 65533 : NOBODY.uid;
      const tried = await run('setpriv', [
        `--reuid=${stranger}`,
        `--regid=${stranger}`,
        '--clear-groups',
        'socat',
        '-u',
        '/dev/null',
        `UNIX-CONNECT:${socket}`,
      ]).then(
        () => 'connected',
        (err: { stderr?: string }) => err.stderr ?? 'refused',
      );
      expect(tried).toMatch(/Permission denied/);
    }
  });

  it(
    "takes the service's own port on the host when it is free, and says so when it is not",
    {
      timeout: 180_000,
    },
    async () => {
      const own = await freePort();
      const free = await expose(mesh.project.id, `svc-own-${mode}`, `${greeting}own`, own);
      expect(free).toMatchObject({ port: own, host_port: own, host_port_fallback: false });
      expect(free.url).toBe(`http://127.0.0.1:${own}`);
      expect((await get(free, free.token)).status).toBe(200);

      const busy = createServer();
      busy.listen(await freePort(), '127.0.0.1');
      await once(busy, 'listening');
      try {
        const taken = (busy.address() as AddressInfo).port;
        const moved = await expose(mesh.project.id, `svc-busy-${mode}`, `${greeting}busy`, taken);
        expect(moved).toMatchObject({ port: taken, host_port_fallback: true });
        expect(moved.host_port).not.toBe(taken);
        const res = await get(moved, moved.token);
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ greeting: `${greeting}busy` });
        expect((await get(moved)).status).toBe(401);
      } finally {
        busy.close();
      }
    },
  );

  it('no token is kept in the task heads', async () => {
    const heads = await Promise.all(
      tasks.map((t) => mesh.api.store.skillTasks.get(t.project, t.id)),
    );
    expect(heads.map((h) => h?.endpoints.length)).toEqual(tasks.map(() => 1));
    const text = JSON.stringify(heads);
    for (const ep of [mine, mineToo, theirs]) expect(text).not.toContain(ep.token);
    expect(text).toContain(`"host_port":${mine.host_port}`);
  });
});
