// The host-side argv of a sandboxed command: cgroups joined first (as this process), then the
// drop to the sandbox user, then bwrap's line under a bash that reads no rc files.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalSandboxProvider } from './local.ts';
import { readOnlyTmpfs } from './runtime.ts';
import { hostArgv, sandboxUserFor } from './sandbox-user.ts';

const isRoot = process.getuid?.() === 0;

describe('hostArgv', () => {
  it('is the bare bash line without cgroups or user', () => {
    expect(hostArgv('echo hi', { cgroupProcs: [], user: undefined })).toEqual([
      '/bin/bash',
      '--norc',
      '--noprofile',
      '-c',
      'echo hi',
    ]);
  });

  it('joins every cgroup before it runs the line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolmesh-join-'));
    try {
      const procs = [join(dir, 'a'), join(dir, 'b')];
      for (const p of procs) await writeFile(p, '');
      const [file, ...args] = hostArgv('echo $$', { cgroupProcs: procs, user: undefined });
      const r = spawnSync(file, args, { encoding: 'utf8' });
      const pid = r.stdout.trim();
      expect(r.status).toBe(0);
      for (const p of procs) expect((await readFile(p, 'utf8')).trim()).toBe(pid);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.runIf(isRoot)('drops to the sandbox user after joining', () => {
    const user = sandboxUserFor(undefined);
    expect(user).toEqual({ uid: 65534, gid: 65534 });
    const [file, ...args] = hostArgv('id -u; id -G', { cgroupProcs: [], user });
    const r = spawnSync(file, args, { encoding: 'utf8' });
    expect(r.stdout).toBe('65534\n65534\n');
  });

  it('never drops to uid 0, and only as root', () => {
    expect(sandboxUserFor({ uid: 0, gid: 0 })).toBeUndefined();
    if (!isRoot) expect(sandboxUserFor({ uid: 1234, gid: 1234 })).toBeUndefined();
  });
});

describe.runIf(isRoot)('a sandboxes folder the sandbox user cannot enter', () => {
  it('is refused at start with a sentence saying what to do', async () => {
    const privateDir = await mkdtemp(join(tmpdir(), 'toolmesh-private-')); // 0700
    try {
      await expect(
        createLocalSandboxProvider({ rootDir: join(privateDir, 'sandboxes') }),
      ).rejects.toThrow(/uid 65534, which cannot enter .*set sandbox.root_dir/);
    } finally {
      await rm(privateDir, { recursive: true, force: true });
    }
  });
});

describe('readOnlyTmpfs', () => {
  it('remounts every hiding tmpfs read-only before /dev, but /tmp', () => {
    const line = "bwrap --ro-bind / / --tmpfs /work --tmpfs /tmp --tmpfs '/a b' --dev /dev -- sh";
    expect(readOnlyTmpfs(line)).toBe(
      "bwrap --ro-bind / / --tmpfs /work --tmpfs /tmp --tmpfs '/a b' --remount-ro /work --remount-ro '/a b' --dev /dev -- sh",
    );
  });

  it('leaves a line without its mounts (an arguments file) alone', () => {
    const line = 'sh -c x srt-args /proc/self/fd/3 bwrap --args 3 --dev /dev -- sh';
    expect(readOnlyTmpfs(line)).toBe(line);
  });
});
