// Builds the skills service from its configuration: NATS, JetStream provisioning, the Postgres
// store and the tool-service runtime serving the builtin diagnostic tools. `main.ts` runs it as
// a process; tests start it the same way.
import type { Logger } from 'pino';
import { createBus } from '@toolmesh/bus';
import type { Config } from '@toolmesh/config';
import {
  connectNatsFromConfig,
  createStoreFromConfig,
  instanceIdOf,
  streamSettingsOf,
} from '@toolmesh/service';
import { createToolService, type ToolServiceLimits } from '@toolmesh/tool-service';
import { BUILTIN_TARGET, builtinTools } from './builtin/index.ts';

export interface SkillsService {
  readonly instanceId: string;
  stop(graceMs?: number): Promise<void>;
}

export function toolLimits(t: Config['tools']): ToolServiceLimits {
  return {
    concurrency: t.concurrency,
    maxCallBytes: t.max_call_bytes,
    maxResultBytes: t.max_result_bytes,
    defaultTimeoutMs: t.default_timeout_ms,
    maxTimeoutMs: t.max_timeout_ms,
    ackWaitMs: t.ack_wait_ms,
    maxDeliver: t.max_deliver,
    leaseTtlMs: t.lease_ttl_ms,
    retryBaseMs: t.retry_base_ms,
    retryMaxMs: t.retry_max_ms,
    persistRetryMaxMs: t.persist_retry_max_ms,
  };
}

export async function startSkillsService(config: Config, logger: Logger): Promise<SkillsService> {
  const instanceId = instanceIdOf(config);
  const log = logger.child({ instance: instanceId });
  const nc = await connectNatsFromConfig(config, `skills:${instanceId}`, log);
  const bus = await createBus({ nc, root: config.nats.subject_root, logger: log });
  await bus.provision(streamSettingsOf(config));
  const store = createStoreFromConfig(config, `skills:${instanceId}`, log);
  const builtin = createToolService({
    target: BUILTIN_TARGET,
    tools: builtinTools,
    bus,
    store,
    limits: toolLimits(config.tools),
    instanceId,
    logger: log,
  });
  await builtin.start();
  return {
    instanceId,
    stop: async (graceMs) => {
      await builtin.stop(graceMs);
      await bus.close();
      await store.close();
    },
  };
}
