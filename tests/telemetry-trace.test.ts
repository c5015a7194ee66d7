// One agent task is one trace: the api's span for POST .../tasks is the root, and every hop the
// task causes (the wakeup, the worker's steps and model requests, the tool call's publish,
// delivery, lease, handler, sandbox exec, card write, result event and the wakeup back) is a
// span of that trace, parented through the `traceparent` the messages carry over NATS. The mesh
// runs in this process, so the SDK's in-memory exporter sees every span of every service.
import { join } from 'node:path';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import { initTracing, traceHeaders, withSpan, type Tracing } from '@toolmesh/telemetry';
import type { AgentWorker } from '../services/agent-worker/src/app.ts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPO_ROOT } from './support/mesh.ts';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let mesh: AgentMesh;
let worker: AgentWorker;

beforeAll(async () => {
  tracing = await initTracing({
    serviceName: 'mesh-under-test',
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  // Steps are driven by wakeups only: the worker's periodic scan (which starts a trace of its
  // own when it picks up a turn whose wakeup was lost) stays out of the way.
  mesh = await startAgentMesh({ CG__AGENT__SCAN_INTERVAL_MS: '60000' });
  await mesh.startSkills();
  worker = await mesh.startWorker();
  await mesh.uploadSkill(join(REPO_ROOT, 'examples/skills/draw-image'));
}, 60_000);

afterAll(async () => {
  await mesh?.close();
  await tracing?.shutdown();
});

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

it('an agent task that runs a skill is one connected trace rooted at the task creation', async () => {
  const agent = await mesh.createAgent({
    id: 'traced',
    allowedTools: ['skills.*'],
    script: [
      {
        toolCalls: [
          {
            name: 'skills__run_cmd',
            arguments: {
              skill: 'draw-image',
              command: 'python3 draw.py --out out/pic.png --caption traced --width 32 --height 24',
              outputs: ['out/pic.png'],
            },
          },
        ],
      },
      { toolCalls: [{ name: 'submit_result', arguments: { result: 'drawn' } }] },
    ],
  });
  exporter.reset();
  const taskId = await mesh.startTask(agent, 'Draw a picture.');
  const task = await mesh.finished(taskId, 90_000);
  expect(task.status, JSON.stringify(task)).toBe('succeeded');
  // The last spans (the final task event) end just after the task row says succeeded.
  await new Promise((r) => setTimeout(r, 300));

  const spans = exporter.getFinishedSpans();
  const roots = spans.filter(
    (s) => s.name === 'task create' && s.attributes['toolmesh.task_id'] === taskId,
  );
  expect(roots).toHaveLength(1);
  const root = roots[0]!;
  expect(parentOf(root)).toBeUndefined();
  const traceId = root.spanContext().traceId;
  const trace = spans.filter((s) => s.spanContext().traceId === traceId);

  // Every hop of the task is in the trace.
  const names = trace.map((s) => s.name);
  for (const hop of [
    'task create',
    'cmd.agent publish', // the api's wakeup, and the tool service's wakeup back
    'cmd.agent process',
    'agent step',
    'model request',
    'cmd.tool publish',
    'cmd.tool process',
    'lease',
    'handler skills.run_cmd',
    'sandbox exec',
    'card write',
    'evt.tool publish',
  ]) {
    expect(names, `span "${hop}" in the trace`).toContain(hop);
  }
  expect(names.filter((n) => n === 'agent step')).toHaveLength(2);
  expect(names.filter((n) => n === 'model request')).toHaveLength(2);
  expect(names.filter((n) => n === 'cmd.agent process')).toHaveLength(2);

  // One tree: a single root, and every other span's parent is a span of the same trace.
  const ids = new Set(trace.map((s) => s.spanContext().spanId));
  expect(trace.filter((s) => parentOf(s) === undefined)).toEqual([root]);
  for (const s of trace) {
    if (s === root) continue;
    expect(ids.has(parentOf(s)!), `parent of "${s.name}" is in the trace`).toBe(true);
  }

  // The hops sit where they happen: the sandbox ran inside the handler, the handler inside the
  // delivery of the call the worker published during its first step.
  const byId = new Map(trace.map((s) => [s.spanContext().spanId, s]));
  const ancestry = (s: ReadableSpan): string[] => {
    const out: string[] = [];
    for (let p = byId.get(parentOf(s) ?? ''); p; p = byId.get(parentOf(p) ?? '')) out.push(p.name);
    return out;
  };
  const exec = trace.find((s) => s.name === 'sandbox exec')!;
  expect(ancestry(exec)).toEqual([
    'handler skills.run_cmd',
    'cmd.tool process',
    'cmd.tool publish',
    'agent step',
    'cmd.agent process',
    'cmd.agent publish',
    'task create',
  ]);

  // Nothing the task caused went into another trace.
  for (const name of ['agent step', 'model request', 'cmd.tool process', 'sandbox exec']) {
    const elsewhere = spans.filter((s) => s.name === name && s.spanContext().traceId !== traceId);
    expect(
      elsewhere.map((s) => s.name),
      `"${name}" spans outside the trace`,
    ).toEqual([]);
  }
}, 120_000);

it("a step the worker's scan picks up (its wakeup lost) joins the task's trace", async () => {
  // The first test's worker leaves; one that scans often takes over.
  await worker.stop(5_000);
  await mesh.startWorker({ CG__AGENT__SCAN_INTERVAL_MS: '200' });
  const agent = await mesh.createAgent({
    id: 'scanned',
    allowedTools: ['builtin.*'],
    script: [
      { toolCalls: [{ name: 'builtin__echo', arguments: { n: 1 } }] },
      { toolCalls: [{ name: 'submit_result', arguments: { result: 'echoed' } }] },
    ],
  });
  exporter.reset();
  // The task is filed as the api files it, in a span of the caller's, but no wakeup is sent.
  const { taskId, traceId } = await withSpan('caller', {}, async (span) => {
    const task = await mesh.api.store.tx(async (tx) => {
      const t = await tx.tasks.create({
        projectId: mesh.project.id,
        agentId: agent,
        channel: 'main',
        input: 'echo',
        traceparent: traceHeaders()['traceparent'],
      });
      await tx.inbox.addTask({
        projectId: mesh.project.id,
        agentId: agent,
        taskId: t!.task_id,
        payload: { channel: 'main' },
      });
      return t!;
    });
    return { taskId: task.task_id, traceId: span.spanContext().traceId };
  });
  const task = await mesh.finished(taskId, 30_000);
  expect(task.status, JSON.stringify(task)).toBe('succeeded');
  await new Promise((r) => setTimeout(r, 300));

  const spans = exporter.getFinishedSpans();
  const steps = spans.filter(
    (s) => s.name === 'agent step' && s.attributes['toolmesh.task_id'] === taskId,
  );
  expect(steps).toHaveLength(2);
  for (const s of steps) expect(s.spanContext().traceId).toBe(traceId);
  const trace = spans.filter((s) => s.spanContext().traceId === traceId);
  const root = trace.find((s) => s.name === 'caller')!;
  // The scan's step hangs off the caller's span; the step after the tool's wakeup hangs off
  // that wakeup, inside the same trace.
  expect(steps.some((s) => parentOf(s) === root.spanContext().spanId)).toBe(true);
  const ids = new Set(trace.map((s) => s.spanContext().spanId));
  for (const s of trace) if (s !== root) expect(ids.has(parentOf(s)!), s.name).toBe(true);
  expect(trace.map((s) => s.name)).toEqual(
    expect.arrayContaining(['cmd.tool process', 'handler builtin.echo', 'cmd.agent process']),
  );
}, 120_000);
