// "Is this process ours": pid, start time and command line must all match.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { isOurProcess, readProc } from './proc-proof.ts';

describe('isOurProcess', () => {
  it('our own spawned bwrap is ours; a wrong start time or command is not; a dead pid is not', async () => {
    const child = spawn('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', 'sleep', '30'], {
      stdio: 'ignore',
    });
    await once(child, 'spawn');
    const pid = child.pid!;
    try {
      // Wait for the exec into bwrap to be visible.
      let info = await readProc(pid);
      for (let i = 0; i < 50 && info?.argv[0] !== 'bwrap'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        info = await readProc(pid);
      }
      expect(info?.startTime).toMatch(/^\d+$/);
      expect(await isOurProcess(pid, info!.startTime)).toBe(true);
      expect(await isOurProcess(pid, String(Number(info!.startTime) + 1))).toBe(false);
      expect(await isOurProcess(pid, null)).toBe(false);
      expect(await isOurProcess(pid, info!.startTime, 'sleep')).toBe(false);
      // A live pid that is not bwrap, with its true start time: still not ours.
      const self = await readProc(process.pid);
      expect(await isOurProcess(process.pid, self!.startTime)).toBe(false);
    } finally {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    // Dead (and reaped): not ours, whatever start time is claimed.
    expect(await readProc(pid)).toBeUndefined();
    expect(await isOurProcess(pid, '1')).toBe(false);
  });
});
