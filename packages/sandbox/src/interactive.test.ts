// `Sandbox.interact` on both adapters: a long-running command whose stdin stays open and whose
// stdout streams back chunk by chunk (what an MCP stdio server needs), killed as a whole.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InteractiveProcess, Sandbox } from './provider.ts';
import { useFakeE2bProvider } from './e2b-test-support.ts';
import { SESSION, useLocalProvider } from './test-support.ts';

const local = useLocalProvider();
const e2b = useFakeE2bProvider();

/** Collects stdout and resolves `next(text)` once that text has arrived. */
function lines() {
  let seen = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  return {
    onStdout: (chunk: Uint8Array) => {
      seen += Buffer.from(chunk).toString('utf8');
      for (const w of waiters.filter((w) => seen.includes(w.text))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    },
    next: (text: string) =>
      seen.includes(text)
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ text, resolve })),
    get seen() {
      return seen;
    },
  };
}

describe.each([
  ['local', () => local.provider],
  ['e2b', () => e2b.provider],
] as const)('%s: interact', (_name, providerOf) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await providerOf().create({ key: SESSION });
  });
  afterAll(async () => {
    await sandbox?.destroy();
  });

  it('talks to a program line by line over stdin and stdout', async () => {
    const out = lines();
    // Echoes each line back in upper case, as a request/response server would.
    const proc: InteractiveProcess = await sandbox.interact(
      { shell: 'while IFS= read -r line; do echo "got ${line^^}"; done; echo bye' },
      { onStdout: out.onStdout },
    );
    await proc.write('hello\n');
    await out.next('got HELLO\n');
    await proc.write('second\n');
    await out.next('got SECOND\n');
    await proc.closeStdin();
    const result = await proc.wait();
    expect(result.exitCode).toBe(0);
    expect(out.seen).toBe('got HELLO\ngot SECOND\nbye\n');
  });

  it('kill ends the program; a later write is refused', async () => {
    const out = lines();
    const proc = await sandbox.interact(
      { shell: 'echo ready; while IFS= read -r line; do echo "$line"; done' },
      { onStdout: out.onStdout },
    );
    await out.next('ready\n');
    const result = await proc.kill();
    expect(result).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    await expect(proc.write('late\n')).rejects.toMatchObject({ reason: 'closed' });
  });
});
