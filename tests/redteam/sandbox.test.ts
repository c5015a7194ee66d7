// Red team, sandbox: each attack of issue 13 run as a tenant through skills.run_cmd over the bus,
// against a skills service configured as a deployment is (its checkout, .data/, an artifact
// root, other projects' sessions, the host's /tmp), and each asserted refused or contained, with
// the service still serving afterwards. Secrets are canaries: random text planted where the
// real ones live, which must never come back in a result.
//
// The whole suite runs once per mode of the service: as root (when the suite is root: the
// service in this process, commands dropped to nobody, cgroups for memory and CPU) and as an
// unprivileged user (a child process started through setpriv as nobody with no groups or
// capabilities, rlimits for memory and CPU). A suite that is not root has no root mode: it runs
// the unprivileged mode only, as itself, and its describe names say so.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../../services/api/src/test/support.ts';
import { plantCanaries, type Canaries } from '../support/canaries.ts';
import { REPO_ROOT } from '../support/mesh.ts';
import { startSkillsMesh, type SkillsMesh } from '../support/skills-mesh.ts';
import { NOBODY, serviceModes, startSkillsAs, type Mode } from '../support/service-modes.ts';

const MEMORY_BYTES = 256 * 1024 * 1024;
const CPU_PERCENT = 25;
// Under RLIMIT_CPU the limit is this share of the command's timeout in CPU seconds: a spin must
// get more than this share of a core to hit it before its timeout, which a busy CI host still
// gives a 5% share (at 25%, a load of 12 per core ends it by its timeout instead).
const RLIMIT_CPU_PERCENT = 5;
const MAX_OUTPUT_BYTES = 1024 * 1024;
const limitsEnv = {
  CG__SKILLS__MAX_OUTPUT_BYTES: String(MAX_OUTPUT_BYTES),
  CG__SANDBOX__MEMORY_BYTES: String(MEMORY_BYTES),
  CG__SANDBOX__CPU_PERCENT: String(CPU_PERCENT),
};

let c: Canaries;
let mesh: SkillsMesh;
let other: { id: string; key: string };
let attacker: { id: string; key: string };
let artifactsRoot = '';
let sandboxRoot = '';
let serviceUid = 0;

beforeAll(async () => {
  mesh = await startSkillsMesh();
  artifactsRoot = mesh.api.env['CG__ARTIFACTS__ROOT']!;
  c = await plantCanaries(artifactsRoot, 'redteam-sandbox');
}, 120_000);

/**
 * Starts the skills service in `mode` with a fresh attacker and victim project, and plants the
 * victim's secret in its session. Returns the stop function.
 */
async function startMode(mode: Mode): Promise<() => Promise<void>> {
  const service = await startSkillsAs(mesh, mode, {
    ...limitsEnv,
    ...(mode === 'root' ? {} : { CG__SANDBOX__CPU_PERCENT: String(RLIMIT_CPU_PERCENT) }),
  });
  sandboxRoot = service.sandboxRoot;
  serviceUid = service.uid;
  attacker = await mesh.api.createProject();
  other = await mesh.api.createProject();
  // Another tenant keeps a secret in its session's workdir.
  const planted = await mesh.client.callTool({
    project: other.id,
    channel: 'main',
    tool: 'skills.run_cmd',
    arguments: { command: `echo ${c.secrets.otherProject} > secret.txt`, session_id: 'victim' },
    timeoutMs: 60_000,
  });
  expect(planted.status, JSON.stringify(planted.content)).toBe('succeeded');
  return () => service.stop();
}

afterAll(async () => {
  await mesh?.close();
  await c?.remove();
});

const run = (args: Record<string, unknown>, timeoutMs = 60_000) =>
  mesh.client.callTool({
    project: attacker.id,
    channel: 'main',
    tool: 'skills.run_cmd',
    arguments: { session_id: 'attacker', ...args },
    timeoutMs,
  });

/** Everything a result shows the tenant, as one string. */
const shown = (r: { content: unknown }) => JSON.stringify(r.content);

describe.each(serviceModes)('$name', ({ mode }) => {
  let stopMode: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    stopMode = await startMode(mode);
  }, 120_000);
  afterAll(async () => {
    await stopMode?.();
  });

  afterEach(async () => {
    // The service still serves, in the attacker's session and in a fresh one.
    for (const session_id of ['attacker', `fresh-${Date.now()}`]) {
      const r = await run({ command: 'echo still-serving', session_id });
      expect(r.status, shown(r)).toBe('succeeded');
      expect((r.content.result as { stdout: string }).stdout).toBe('still-serving\n');
    }
  });

  describe('red team: reading what is not the tenant’s', () => {
    it.each([
      ['the admin key file', () => `cat ${c.adminKeyFile}; ls -A ${c.dataDir}`],
      ['the checkout', () => `cat ${join(REPO_ROOT, 'package.json')}; ls -A ${REPO_ROOT}`],
      ["the service's config.toml", () => `cat ${join(REPO_ROOT, 'config.toml')}`],
      ['the artifact root', () => `ls -RA ${artifactsRoot}; cat ${c.artifactFile}`],
      [
        "another project's session workdir",
        () => `ls -A ${sandboxRoot}; cat ${sandboxRoot}/*/work/secret.txt`,
      ],
      ['the host /tmp', () => `ls -A /tmp; cat ${c.hostTmpFile}`],
      ['/etc/shadow', () => 'cat /etc/shadow /etc/gshadow; ls -A /etc'],
      ['the environment of the service', () => 'env; cat /proc/1/environ | tr "\\0" "\\n"'],
    ])('%s', async (_what, command) => {
      const r = await run({ command: `${command()}; echo done` });
      expect(r.status, shown(r)).toBe('succeeded');
      const text = shown(r);
      expect((r.content.result as { stdout: string }).stdout).toMatch(/done\n$/);
      for (const secret of Object.values(c.secrets)) expect(text).not.toContain(secret);
      expect(text).not.toContain(ADMIN_KEY);
      expect(text).not.toMatch(/root:[^:]*:\d+:/); // a shadow line
      expect(text).not.toContain('"name": "toolmesh"'); // package.json
      expect(text).not.toContain('[sandbox]'); // config.toml
      expect(text).not.toContain('postgres://');
    });
  });

  describe('red team: escaping the workdir', () => {
    it('cannot write outside the workdir (checkout, sandboxes, artifacts, /etc, host /tmp)', async () => {
      const name = `redteam-write-${process.pid}`;
      const targets = [REPO_ROOT, sandboxRoot, artifactsRoot, '/etc', '/usr/local/bin', '/var/tmp'];
      const r = await run({
        command: `for d in ${targets.join(' ')}; do echo x > "$d/${name}" && echo "wrote $d"; done; echo x > /tmp/${name}; echo done`,
      });
      expect(r.status, shown(r)).toBe('succeeded');
      // Under /tmp (the test's sandbox and artifact roots live there) a write lands in the
      // command's private /tmp; anywhere else it fails. Either way nothing reaches the host.
      const { stdout } = r.content.result as { stdout: string };
      expect(stdout).toMatch(/done\n$/);
      expect(stdout).not.toMatch(/wrote (?!\/tmp\/)/);
      for (const d of [...targets, '/tmp']) {
        await expect(readFile(join(d, name))).rejects.toThrow();
      }
    });

    it('is not root: id -u', async () => {
      const r = await run({ command: 'id -u; id -g' });
      const [uid, gid] = (r.content.result as { stdout: string }).stdout.trim().split('\n');
      expect(uid).not.toBe('0');
      expect(gid).not.toBe('0');
      // As root the command is dropped to nobody; unprivileged, it is the service's own user.
      expect(uid).toBe(String(mode === 'root' ? NOBODY.uid : serviceUid));
    });
  });

  describe('red team: exhausting the host', () => {
    it('a fork bomb is contained by the process cap', async () => {
      const r = await run({
        command: 'b() { b | b & }; b; sleep 3; echo bomb-done',
        timeout_ms: 15_000,
      });
      expect(['succeeded', 'timeout']).toContain(r.status);
    });

    // Root gets cgroups (an OOM kill, CPU bandwidth); an unprivileged service gets rlimits (the
    // allocation fails inside the program, the CPU time limit kills). Each run asserts its own.
    it(`a memory hog is contained (${mode === 'root' ? 'memory cgroup: `oom`' : 'RLIMIT_AS'})`, async () => {
      const r = await run({
        command: `python3 -c "a = bytearray(${MEMORY_BYTES * 2}); print('survived')"`,
      });
      expect(shown(r)).not.toContain('survived');
      if (mode === 'root') {
        expect(r.status, shown(r)).toBe('failed');
        expect(r.content.error?.code).toBe('oom');
        expect(r.content.error?.details).toMatchObject({ limit: 'memory' });
      } else {
        expect(shown(r)).toContain('MemoryError');
      }
    });

    it(`a CPU spin is held to its share (${mode === 'root' ? 'cpu cgroup' : 'RLIMIT_CPU: `cpu_limit`'})`, async () => {
      if (mode !== 'root') {
        // RLIMIT_CPU = 5% of 20 s = 1 s of CPU.
        const r = await run({ command: 'while :; do :; done', timeout_ms: 20_000 });
        expect(r.status, shown(r)).toBe('failed');
        expect(r.content.error?.code).toBe('cpu_limit');
        return;
      }
      const r = await run({ command: 'timeout 3 sh -c "while :; do :; done"; times' });
      expect(r.status, shown(r)).toBe('succeeded');
      const children = (r.content.result as { stdout: string }).stdout.trim().split('\n')[1] ?? '';
      const cpuSec = [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce(
        (sum, m) => sum + Number(m[1]) * 60 + Number(m[2]),
        0,
      );
      expect(cpuSec).toBeGreaterThan(0);
      expect(cpuSec).toBeLessThan((3 * CPU_PERCENT) / 100 + 0.4);
    });

    it('a 1 GiB output listed 32 times is refused by its size and costs nothing', async () => {
      // 1 GiB: the most one file may be (sandbox.file_size_bytes); sparse, so no disk either.
      const r = await run({
        command: 'truncate -s 1G big.bin',
        outputs: Array.from({ length: 32 }, () => 'big.bin'),
      });
      expect(r.status, shown(r)).toBe('succeeded');
      const result = r.content.result as {
        output_errors: { code: string; message: string }[];
        artifacts: unknown[];
      };
      expect(result.artifacts).toEqual([]);
      expect(result.output_errors).toHaveLength(32);
      // Each refused by the sandbox from the file's size, before a byte was read: the full size
      // is what only its stat knows (the read guard would name the 16 MiB it had read, and the
      // service's check after a whole read words it without the quoted path). The unit test of
      // getFile shows the same refusal for a sparse TiB, which no read would get through.
      for (const e of result.output_errors) {
        expect(e.code).toBe('too_large');
        expect(e.message).toContain(`"big.bin" is ${1024 ** 3} bytes, over the limit of`);
      }
    });
  });
});
