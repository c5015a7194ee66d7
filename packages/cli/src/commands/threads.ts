// `toolmesh thread start|say|show`: conversations with an agent over the api. `say` sends the
// next message and, with --wait, prints the agent's answer once its turn ends; `show` prints the
// thread as a chat (or the api's JSON with --json).
import type { Command } from 'commander';
import type { Context } from '../context.ts';
import { CliError, ExitCode } from '../exit.ts';
import { printJson, printLine } from '../output.ts';
import { projectOf } from '../settings.ts';
import { intOption, jsonObject } from './parse.ts';

/** The action wrapper of cli.ts: a context from the command line's flags, then the command. */
export type Run = <A extends unknown[]>(
  fn: (ctx: Context, ...args: A) => Promise<number>,
) => (...args: unknown[]) => Promise<void>;

interface Card {
  kind: string;
  content: unknown;
}
interface ThreadTurn {
  seq: number;
  task_id: string;
  status: string;
  input: unknown;
  cards: Card[];
  final_card: Card | null;
}
interface ThreadDetail {
  thread_id: string;
  agent_id: string;
  title: string | null;
  turns: ThreadTurn[];
}

const threadsPath = (ctx: Context, agent: string) =>
  `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}/agents/${encodeURIComponent(agent)}/threads`;

const asText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** The answer a turn ended with, as one line of the chat. */
function answerOf(t: ThreadTurn): string {
  const c = (t.final_card?.content ?? {}) as {
    result?: unknown;
    text?: unknown;
    error?: { message?: string };
  };
  if (t.status === 'succeeded') return asText(c.result ?? c.text ?? '');
  if (t.status === 'pending') return '(waiting for the turn before it)';
  if (t.status === 'running') return '(working…)';
  return `(${t.status}: ${c.error?.message ?? 'no reason kept'})`;
}

function printChat(ctx: Context, thread: ThreadDetail): void {
  printLine(
    ctx.io,
    `thread ${thread.thread_id} with ${thread.agent_id}${thread.title ? ` — ${thread.title}` : ''}`,
  );
  for (const t of thread.turns) {
    printLine(ctx.io, `[${t.seq}] you: ${asText(t.input)}`);
    const calls = t.cards.filter((c) => c.kind === 'tool.call');
    for (const c of calls) {
      const name = (c.content as { tool_name?: string } | null)?.tool_name ?? '?';
      printLine(ctx.io, `    (called ${name})`);
    }
    printLine(ctx.io, `[${t.seq}] ${thread.agent_id}: ${answerOf(t)}`);
  }
}

export async function threadStart(
  ctx: Context,
  agent: string,
  f: { title?: string; channel?: string },
): Promise<number> {
  const body = await ctx.api.request<{ thread_id: string }>({
    method: 'POST',
    path: threadsPath(ctx, agent),
    json: { ...(f.title ? { title: f.title } : {}), ...(f.channel ? { channel: f.channel } : {}) },
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else printLine(ctx.io, body.thread_id);
  return ExitCode.ok;
}

export async function threadSay(
  ctx: Context,
  agent: string,
  threadId: string,
  f: { input: string; wait?: boolean; timeoutMs?: string },
): Promise<number> {
  // A JSON object is structured input; anything else is the message text itself.
  const input = f.input.trimStart().startsWith('{') ? jsonObject(f.input, '--input') : f.input;
  const waitMs = intOption(f.timeoutMs, '--timeout-ms') ?? 300_000;
  const path = `${threadsPath(ctx, agent)}/${encodeURIComponent(threadId)}`;
  const sent = await ctx.api.request<{ task_id: string; seq: number; woken: boolean }>({
    method: 'POST',
    path: `${path}/messages`,
    json: { input },
  });
  if (!sent.woken) ctx.io.stderr.write('the agent was not woken: the message waits in its inbox\n');
  if (!f.wait) {
    if (ctx.settings.json) printJson(ctx.io, sent);
    else printLine(ctx.io, `message ${sent.seq} sent (task ${sent.task_id})`);
    return ExitCode.ok;
  }
  const deadline = Date.now() + waitMs;
  for (;;) {
    const thread = await ctx.api.request<ThreadDetail>({
      path,
      query: { before: sent.seq + 1, limit: 1 },
    });
    const turn = thread.turns.find((t) => t.seq === sent.seq);
    if (turn && ['succeeded', 'failed', 'canceled'].includes(turn.status)) {
      if (ctx.settings.json) printJson(ctx.io, turn);
      else printLine(ctx.io, answerOf(turn));
      return turn.status === 'succeeded' ? ExitCode.ok : ExitCode.failed;
    }
    if (Date.now() >= deadline) {
      throw new CliError(
        ExitCode.timeout,
        'timeout',
        `message ${sent.seq} of thread ${threadId} is still ${turn?.status ?? 'pending'} after ${waitMs} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export async function threadShow(ctx: Context, agent: string, threadId: string): Promise<number> {
  const thread = await ctx.api.request<ThreadDetail>({
    path: `${threadsPath(ctx, agent)}/${encodeURIComponent(threadId)}`,
    query: { limit: 500 },
  });
  if (ctx.settings.json) printJson(ctx.io, thread);
  else printChat(ctx, thread);
  return ExitCode.ok;
}

export function addThreadCommands(program: Command, run: Run): void {
  const thread = program.command('thread').description('conversations with an agent');
  thread
    .command('start')
    .description('open a thread with an agent; prints its id')
    .argument('<agent>')
    .option('-t, --title <text>')
    .option('-c, --channel <id>')
    .action(
      run((ctx, agent: string, f: { title?: string; channel?: string }) =>
        threadStart(ctx, agent, f),
      ),
    );
  thread
    .command('say')
    .description("send the thread's next message; with --wait, print the agent's answer")
    .argument('<agent>')
    .argument('<thread_id>')
    .requiredOption('-i, --input <text|json>', 'the message, or a JSON object')
    .option('-w, --wait', 'wait for the answer; exit 1 when the turn failed or was canceled')
    .option('--timeout-ms <ms>', 'how long --wait waits (default 300000); then exit 5')
    .action(
      run(
        (
          ctx,
          agent: string,
          id: string,
          f: { input: string; wait?: boolean; timeoutMs?: string },
        ) => threadSay(ctx, agent, id, f),
      ),
    );
  thread
    .command('show')
    .description('the thread as a chat: each message, the tools called, the answer')
    .argument('<agent>')
    .argument('<thread_id>')
    .action(run((ctx, agent: string, id: string) => threadShow(ctx, agent, id)));
}
