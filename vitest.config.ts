import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'tests/**/*.test.ts'],
    // Many tests start processes (services, the CLI, scripts) whose start is slow on a loaded
    // 2-core host: timeouts catch a hang, they do not measure speed (benchmarks do).
    testTimeout: 90_000,
    hookTimeout: 120_000,
    // Two cores: integration files start processes of their own, so keep the parallelism low.
    maxWorkers: 2,
    // A NATS permission violation during a test fails it (packages/testing/src/violations.ts).
    setupFiles: ['packages/testing/src/vitest-setup.ts'],
    // Where the tests' sandboxes live: a folder the sandbox uid can enter, as the stack's.
    globalSetup: ['tests/support/global-setup.ts'],
  },
});
