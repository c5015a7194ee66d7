// Builds the agent worker from its configuration: NATS and JetStream provisioning, the Postgres
// store, the model client, the step runner with its periodic scan, and the durable wakeup
// consumer shared by every instance. `main.ts` runs it as a process; tests start it the same way.
import type { Logger } from 'pino';
import { createBus } from '@toolmesh/bus';
import { redactConfig, type Config } from '@toolmesh/config';
import {
  connectNatsFromConfig,
  createStoreFromConfig,
  instanceIdOf,
  startHealthServer,
  streamSettingsOf,
} from '@toolmesh/service';
import type { AgentsStore, SkillsStore, Store } from '@toolmesh/store';
import { createLlm } from './llm.ts';
import { createPublisher } from './publish.ts';
import { createRunner, type Runner } from './runner.ts';
import { wakeupHandler } from './wakeup.ts';

/** The store domains this process uses: agents' (tasks, threads, turns) and skills' for the
 * skills a profile offers. */
type WorkerProcessStore = AgentsStore & SkillsStore & Pick<Store, 'close'>;

/** The consumer name's target: one durable for all agents, shared by every instance. */
export const AGENT_WORKER_TARGET = 'worker';

export interface AgentWorker {
  readonly instanceId: string;
  readonly runner: Runner;
  /** The port of GET /healthz and GET /metrics. */
  readonly healthPort: number;
  stop(graceMs?: number): Promise<void>;
}

export async function startAgentWorker(config: Config, logger: Logger): Promise<AgentWorker> {
  const instanceId = instanceIdOf(config);
  const log = logger.child({ instance: instanceId });
  const nc = await connectNatsFromConfig(config, `agent-worker:${instanceId}`, log);
  const bus = await createBus({
    nc,
    root: config.nats.subject_root,
    logger: log,
    drainTimeoutMs: config.nats.drain_timeout_ms,
  });
  await bus.provision(streamSettingsOf(config));
  const store: WorkerProcessStore = createStoreFromConfig(
    config,
    `agent-worker:${instanceId}`,
    log,
  );
  const runner = createRunner({
    store,
    llm: createLlm(config.llm),
    publish: createPublisher(bus),
    agent: config.agent,
    llmConfig: config.llm,
    instanceId,
    logger: log,
  });
  const a = config.agent;
  // The worker's slots are shared round robin between the projects with wakeups waiting
  // (@toolmesh/bus consumeProjects): one project's burst of tasks never queues another's.
  const consumption = await bus.consumeProjects(
    {
      durable: bus.names.agentConsumer(AGENT_WORKER_TARGET),
      filter: (project) => bus.subjects.agentWakeupFilter(project),
      ackWaitMs: a.ack_wait_ms,
      maxDeliver: a.max_deliver,
      maxAckPending: a.concurrency * 16,
    },
    {
      concurrency: a.concurrency,
      ackWaitMs: a.ack_wait_ms,
      retryBaseMs: config.tools.retry_base_ms,
      retryMaxMs: config.tools.retry_max_ms,
      handler: wakeupHandler(bus.subjects, runner, log),
    },
  );
  runner.start();
  let stopping = false;
  let stopped: Promise<void> | undefined;
  const startedAt = new Date().toISOString();
  const health = await startHealthServer({
    host: a.health_host,
    port: a.health_port,
    key: 'agent.health_port',
    check: () => ({
      ok: !stopping && !nc.isClosed(),
      body: { instance_id: instanceId, started_at: startedAt, running: runner.running() },
    }),
  });
  log.info(
    // Redacted: a base URL may carry credentials (https://user:key@host/v1).
    { concurrency: a.concurrency, llm: redactConfig(config.llm), health_port: health.port },
    'agent worker started',
  );
  return {
    instanceId,
    runner,
    healthPort: health.port,
    // Once: a second stop (a test's fixture after the test stopped it) waits for the first.
    stop: (graceMs) =>
      (stopped ??= (async () => {
        stopping = true;
        await health.close();
        await consumption.stop(graceMs);
        await runner.stop();
        await bus.close();
        await store.close();
      })()),
  };
}
