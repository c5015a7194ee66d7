// Shared by the e2b adapter tests: a fake E2B server per test file and an e2b provider pointed
// at it (REST and envd on the same plain-HTTP URL), as one per process in a service.
import { startFakeE2b, type FakeE2b, type FakeE2bOptions } from '@toolmesh/testing';
import { afterAll, beforeAll } from 'vitest';
import {
  createE2bSandboxProvider,
  type E2bSandboxOptions,
  type E2bSandboxProvider,
} from './e2b.ts';

export interface E2bFixture {
  readonly fake: FakeE2b;
  readonly provider: E2bSandboxProvider;
  /** A second provider, as another service instance would have. */
  readonly other: E2bSandboxProvider;
}

export const FAKE_DOMAIN = 'sandbox.test';

export function providerFor(
  fake: FakeE2b,
  options: Partial<E2bSandboxOptions> = {},
): E2bSandboxProvider {
  return createE2bSandboxProvider({
    apiKey: fake.apiKey,
    apiUrl: fake.url,
    sandboxUrl: fake.url,
    domain: FAKE_DOMAIN,
    template: 'base',
    workdir: '/home/user/work',
    requestTimeoutMs: 10_000,
    sandboxTimeoutSec: 600,
    ...options,
  });
}

export function useFakeE2bProvider(fakeOptions: FakeE2bOptions = {}): E2bFixture {
  const fixture = {} as { fake: FakeE2b; provider: E2bSandboxProvider; other: E2bSandboxProvider };
  beforeAll(async () => {
    fixture.fake = await startFakeE2b(fakeOptions);
    fixture.provider = providerFor(fixture.fake);
    fixture.other = providerFor(fixture.fake);
  });
  afterAll(async () => {
    await fixture.provider?.close();
    await fixture.other?.close();
    await fixture.fake?.stop();
  });
  return fixture;
}
