// The provider factory follows `[sandbox] provider`: local by default, e2b (here against the fake
// E2B server, through the real SDK) when configured.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@toolmesh/config';
import { startFakeE2b } from '@toolmesh/testing';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createSandboxProviderFromConfig } from './connect.ts';

const logger = pino({ level: 'silent' });

describe('createSandboxProviderFromConfig', () => {
  it('builds the local provider by default', async () => {
    const root = await mkdtemp(join(tmpdir(), 'toolmesh-provider-test-'));
    try {
      const config = loadConfig({ source: '', env: { CG__SANDBOX__ROOT_DIR: root } });
      const provider = await createSandboxProviderFromConfig(config, logger);
      expect(provider.kind).toBe('local');
      await provider.close();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('builds the e2b provider from the [e2b] section', async () => {
    const fake = await startFakeE2b({ apiKey: 'e2b_from_config' });
    try {
      const config = loadConfig({
        source: '',
        env: {
          CG__SANDBOX__PROVIDER: 'e2b',
          CG__E2B__API_KEY: 'e2b_from_config',
          CG__E2B__API_URL: fake.url,
          CG__E2B__SANDBOX_URL: fake.url,
          CG__E2B__TEMPLATE: 'my-template',
        },
      });
      const provider = await createSandboxProviderFromConfig(config, logger);
      expect(provider.kind).toBe('e2b');
      const sandbox = await provider.create({ key: { project: 'p', agent: 'a', session: 's' } });
      const result = await sandbox.exec({ argv: ['echo', 'configured'] }, { timeoutMs: 10_000 });
      expect(result.stdout.text).toBe('configured\n');
      expect(fake.sandboxes()).toMatchObject([{ id: sandbox.id, templateId: 'my-template' }]);
      await sandbox.destroy();
      await provider.close();
    } finally {
      await fake.stop();
    }
  });
});
