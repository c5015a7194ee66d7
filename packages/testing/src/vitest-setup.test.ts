// The test setup fails a test during which a NATS permission violation was logged, naming the
// subject and the user, and lets a test that expects the refusal pass. Runs a fixture file under
// the same setup in a vitest of its own and reads its report.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const exec = promisify(execFile);
const here = import.meta.dirname;

it('fails the test that hit a violation, naming its user and subject', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'toolmesh-setup-'));
  try {
    const config = join(dir, 'vitest.config.mjs');
    const output = join(dir, 'report.json');
    await writeFile(
      config,
      `export default { test: {
        root: ${JSON.stringify(here)},
        include: ['fixtures/violates.fixture.ts'],
        setupFiles: [${JSON.stringify(join(here, 'vitest-setup.ts'))}],
        reporters: ['json'],
        outputFile: ${JSON.stringify(output)},
      } };\n`,
    );
    const vitest = join(here, '..', '..', '..', 'node_modules', '.bin', 'vitest');
    // It exits non-zero: one of its tests fails, as it should.
    await exec(vitest, ['run', '--config', config], { cwd: here }).catch(() => undefined);
    const report = JSON.parse(await readFile(output, 'utf8')) as {
      testResults: {
        assertionResults: { title: string; status: string; failureMessages: string[] }[];
      }[];
    };
    const results = report.testResults.flatMap((f) => f.assertionResults);
    const failed = results.find((r) => r.title === 'subscribes where its user may not');
    expect(failed?.status).toBe('failed');
    expect(failed?.failureMessages.join('\n')).toMatch(
      /Subscription violation by the skills user on subject "t[0-9a-f]{10}\.v1\.p1\.c1\.cmd\.tool\.builtin\.echo"/,
    );
    const allowed = results.find((r) => r.title.endsWith('says it expects the refusal'));
    expect(allowed?.status).toBe('passed');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
