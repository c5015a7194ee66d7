// The peer of `pnpm bench agent`: the same agent turn as a DBOS durable workflow
// (@dbos-inc/dbos-sdk), run as a child process of bench/agent.ts on the same Postgres server and
// against the same scripted model server. The turn is the mesh's: ask the model (the worker's
// own first request, streamed), run the tool it called (builtin.echo's work: its arguments
// checked against the catalog's schema and returned), ask again with the call and its result,
// read the submit_result call. Each model call and the tool call is a DBOS step, so each is
// checkpointed in Postgres before the next begins, as DBOS's agent examples do. The workflows
// are started and awaited in this process (DBOS's own way: the application is its runtime), so
// this process's CPU holds the load generator too, as the bench process's does for the mesh.
//
// Input (env): DBOS_SYSTEM_DATABASE_URL, BENCH_MODEL_URL, BENCH_FIRST_REQUEST (a file holding the
// worker's first request body), BENCH_SEQUENTIAL, BENCH_CONCURRENT, BENCH_BURSTS,
// BENCH_POSTMASTER_PID, BENCH_POSTGRES_DATABASE. Output: one line `result <json>` on stdout.
import { readFile } from 'node:fs/promises';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { EchoArgs } from '@toolmesh/skills';
import { cpuMeter, databaseCpuSeconds, processCpuSeconds, treeCpuSeconds } from './cpu.ts';
import { summarize } from './stats.ts';
import { bursts, drive } from './support.ts';

interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}
interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

const env = (name: string) => {
  const v = process.env[name];
  if (v === undefined) throw new Error(`${name} is not set`);
  return v;
};
const SEQUENTIAL = Number(env('BENCH_SEQUENTIAL'));
const CONCURRENT = Number(env('BENCH_CONCURRENT'));
const BURSTS = Number(env('BENCH_BURSTS'));
const WARMUP = 10;
const modelUrl = env('BENCH_MODEL_URL');
const firstRequest = JSON.parse(await readFile(env('BENCH_FIRST_REQUEST'), 'utf8')) as {
  messages: ChatMessage[];
  [key: string]: unknown;
};

/** One streamed chat completion, its events parsed and its tool calls put together. */
async function chat(body: unknown): Promise<ToolCall[]> {
  const res = await fetch(`${modelUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`model answered ${res.status}`);
  const calls: ToolCall[] = [];
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6)) as {
      choices?: {
        delta?: {
          tool_calls?: {
            index: number;
            id?: string;
            function?: { name?: string; arguments?: string };
          }[];
        };
      }[];
    };
    for (const d of chunk.choices?.[0]?.delta?.tool_calls ?? []) {
      const c = (calls[d.index] ??= { id: '', name: '', arguments: '' });
      c.id ||= d.id ?? '';
      c.name += d.function?.name ?? '';
      c.arguments += d.function?.arguments ?? '';
    }
  }
  return calls;
}

const agentTurn = DBOS.registerWorkflow(
  async (): Promise<unknown> => {
    const [call] = await DBOS.runStep(() => chat(firstRequest), { name: 'model' });
    if (call?.name !== 'builtin__echo') throw new Error(`the model called ${call?.name}`);
    const result = await DBOS.runStep(
      () => Promise.resolve(EchoArgs.parse(JSON.parse(call.arguments))),
      { name: 'builtin.echo' },
    );
    const messages: ChatMessage[] = [
      ...firstRequest.messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: call.arguments },
          },
        ],
      },
      { role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) },
    ];
    const [submit] = await DBOS.runStep(() => chat({ ...firstRequest, messages }), {
      name: 'model',
    });
    if (submit?.name !== 'submit_result') throw new Error(`the model called ${submit?.name}`);
    return JSON.parse(submit.arguments) as unknown;
  },
  { name: 'agentTurn' },
);

DBOS.setConfig({
  name: 'bench-agent',
  systemDatabaseUrl: env('DBOS_SYSTEM_DATABASE_URL'),
  logLevel: 'error',
});
await DBOS.launch();
try {
  const turn = () => agentTurn();
  const postmaster = Number(env('BENCH_POSTMASTER_PID'));
  const database = env('BENCH_POSTGRES_DATABASE');
  const meter = cpuMeter({
    dbos: () => processCpuSeconds(process.pid),
    postgres: () => databaseCpuSeconds(postmaster, database),
  });
  const serverMeter = cpuMeter({ server: () => treeCpuSeconds(postmaster) });
  await drive(WARMUP, 1, turn);
  const seq = await drive(SEQUENTIAL, 1, turn);
  await drive(CONCURRENT, CONCURRENT, turn); // warm-up burst, as for the mesh
  const [cpu, serverCpu] = await Promise.all([meter.start(), serverMeter.start()]);
  const conc = await bursts(BURSTS, CONCURRENT, turn);
  const cpuPerTurn = await cpu.msPer(BURSTS * CONCURRENT);
  const serverCpuPerTurn = (await serverCpu.msPer(BURSTS * CONCURRENT))['server'];
  const s = summarize(seq.latencies);
  const c = summarize(conc.latencies);
  const result = {
    p50_ms: s.p50_ms,
    p99_ms: s.p99_ms,
    concurrent_p50_ms: c.p50_ms,
    concurrent_p99_ms: c.p99_ms,
    per_s: Math.round(((BURSTS * CONCURRENT) / conc.seconds) * 10) / 10,
    cpu_ms_per_turn: cpuPerTurn,
    postgres_server_cpu_ms_per_turn: serverCpuPerTurn,
  };
  process.stdout.write(`result ${JSON.stringify(result)}\n`);
} finally {
  await DBOS.shutdown();
}
