// `pnpm e2b-connect-probe` as a user runs it, against the fake E2B server with and without the
// /connect route: the human summary, the --json report, and a given sandbox (paused, or gone).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createE2bSandboxProvider } from '@toolmesh/sandbox';
import { startFakeE2b, type FakeE2b } from '@toolmesh/testing';
import { afterEach, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../scripts/e2b-connect-probe.ts', import.meta.url));
let fake: FakeE2b | undefined;

afterEach(async () => {
  await fake?.stop();
  fake = undefined;
});

async function probe(server: FakeE2b, ...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [script, ...args], {
    env: {
      PATH: process.env.PATH,
      CG__E2B__API_KEY: server.apiKey,
      CG__E2B__API_URL: server.url,
      CG__E2B__SANDBOX_URL: server.url,
      CG__LOG__LEVEL: 'silent',
    },
  });
  return stdout;
}

describe('e2b-connect-probe', () => {
  it('reports /connect as supported, proves the path, and kills its own sandbox', async () => {
    fake = await startFakeE2b();
    const text = await probe(fake);
    expect(text).toContain('/connect: supported (HTTP 200); open() uses it.');
    expect(text).toContain('verified: a command ran through that path');
    const report = JSON.parse(await probe(fake, '--json'));
    expect(report).toMatchObject({
      createdForProbe: true,
      state: 'running',
      connect: 'supported',
      connectStatus: 200,
      verified: true,
      fallback: { resumeNeeded: false, hasEnvdAccessToken: true, envdUrl: fake.url },
    });
    expect(fake.sandboxes()).toEqual([]);
  });

  it('reports /connect as missing and the fallback steps on an older server', async () => {
    fake = await startFakeE2b({ connectRoute: false });
    const text = await probe(fake);
    expect(text).toContain(
      '/connect: missing (HTTP 404 while the sandbox exists); open() falls back:',
    );
    expect(text).toMatch(/1\. GET .*\/sandboxes\/\S+ \(state, envdAccessToken, domain\)/);
    expect(text).toContain(`2. envd at ${fake.url} with X-Access-Token`);
    const report = JSON.parse(await probe(fake, '--json'));
    expect(report).toMatchObject({ connect: 'missing', connectStatus: 404, verified: true });
    expect(fake.sandboxes()).toEqual([]);
  });

  it('plans a resume for a given paused sandbox and leaves it alone otherwise', async () => {
    fake = await startFakeE2b({ connectRoute: false });
    const provider = createE2bSandboxProvider({
      apiKey: fake.apiKey,
      apiUrl: fake.url,
      sandboxUrl: fake.url,
      domain: 'sandbox.test',
      template: 'base',
      workdir: '/home/user/work',
      requestTimeoutMs: 10_000,
      sandboxTimeoutSec: 600,
    });
    const sandbox = await provider.create({ key: { project: 'p', agent: 'a', session: 's' } });
    await provider.close();
    const sbx = { sandboxId: sandbox.id };
    fake.pause(sbx.sandboxId);
    const before = fake.requests().length;
    const report = JSON.parse(await probe(fake, '--sandbox', sbx.sandboxId, '--json'));
    expect(report).toMatchObject({
      sandboxId: sbx.sandboxId,
      createdForProbe: false,
      state: 'paused',
      connect: 'missing',
      fallback: { resumeNeeded: true },
    });
    expect(report.verified).toBeUndefined();
    expect(report.fallback.steps[1]).toBe(`POST ${fake.url}/sandboxes/${sbx.sandboxId}/resume`);
    expect(fake.sandboxes()).toMatchObject([{ id: sbx.sandboxId, state: 'paused' }]);
    expect(
      fake
        .requests()
        .slice(before)
        .filter((r) => r.rpc !== undefined),
    ).toEqual([]);
  });

  it('says a given sandbox is gone', async () => {
    fake = await startFakeE2b();
    const text = await probe(fake, '--sandbox', 'isb-gone');
    expect(text).toContain('sandbox: isb-gone, gone');
    expect(text).toContain('the API says the sandbox is gone (404)');
  });
});
