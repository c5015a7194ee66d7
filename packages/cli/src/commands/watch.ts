// `toolmesh watch`: live events of a project, every channel: tool results and progress, agent
// task/step/state events (evt, JetStream) and streamed model output (str, lossy). It reads the
// core NATS subjects, so it shows what happens from now on, not the streams' history.
import { createSubjects } from '@toolmesh/protocol';
import type { Context } from '../context.ts';
import { CliError, ExitCode } from '../exit.ts';
import { printLine } from '../output.ts';
import { projectOf } from '../settings.ts';
import { intOption } from './parse.ts';

export interface WatchFlags {
  count?: string;
  timeoutMs?: string;
}

export async function watchCommand(ctx: Context, flags: WatchFlags): Promise<number> {
  const project = projectOf(ctx.settings);
  const count = intOption(flags.count, '--count');
  const timeoutMs = intOption(flags.timeoutMs, '--timeout-ms');
  const subjects = createSubjects(ctx.settings.root);
  const filters = subjects.projectActivityFilters(project);
  const nc = await ctx.nats();
  const decoder = new TextDecoder();
  let seen = 0;
  let timedOut = false;
  let refused: Error | undefined;

  const done = new Promise<void>((resolve) => {
    const subs = filters.map((filter) =>
      nc.subscribe(filter, {
        callback: (err, msg) => {
          // A credential without this project's events: the server refused the subscription
          // and nats.js hands the error over with no message (never read it).
          if (err) {
            refused ??= err;
            finish();
            return;
          }
          if (seen === count) return;
          seen++;
          printEvent(ctx, msg.subject, decoder.decode(msg.data), subjects);
          if (seen === count) finish();
        },
      }),
    );
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => ((timedOut = true), finish()), timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      for (const s of subs) s.unsubscribe();
      resolve();
    };
    ctx.signal.addEventListener('abort', finish, { once: true });
    void nc.closed().then(finish);
  });
  await nc.flush();
  // On stderr, so a script piping the events sees only events; tests wait for this line.
  ctx.io.stderr.write(`watching ${filters.join(' ')}\n`);
  await done;
  if (refused) {
    throw new CliError(
      ExitCode.connection,
      'refused',
      `the server refused to watch ${project}'s events: ${refused.message}`,
    );
  }
  if (timedOut && count !== undefined) {
    throw new CliError(
      ExitCode.timeout,
      'timeout',
      `saw ${seen} of ${count} events within ${timeoutMs} ms`,
    );
  }
  return ExitCode.ok;
}

function printEvent(
  ctx: Context,
  subject: string,
  text: string,
  subjects: ReturnType<typeof createSubjects>,
): void {
  let data: unknown = text;
  try {
    data = JSON.parse(text);
  } catch {
    // A chunk may be plain text; it is shown as it came.
  }
  let parsed: Record<string, unknown> = {};
  try {
    parsed = { ...subjects.parse(subject) };
  } catch {
    // Not a v1 subject this CLI knows (a newer producer): still shown, by its subject.
  }
  if (ctx.settings.json) {
    // One JSON object per line (NDJSON), so `toolmesh watch --json | jq` works line by line.
    printLine(ctx.io, JSON.stringify({ at: new Date().toISOString(), subject, ...parsed, data }));
    return;
  }
  const what = ['kind', 'component', 'target', 'agent', 'event', 'stream']
    .map((k) => parsed[k])
    .filter((v): v is string => typeof v === 'string')
    .join('.');
  const d = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const summary = ['tool_name', 'tool_call_id', 'status', 'task_id', 'state', 'card_id']
    .filter((k) => d[k] !== undefined)
    .map((k) => `${k}=${typeof d[k] === 'string' ? d[k] : JSON.stringify(d[k])}`)
    .join(' ');
  const channel = typeof parsed['channel'] === 'string' ? parsed['channel'] : '?';
  printLine(
    ctx.io,
    `${new Date().toISOString()}  ${channel}  ${what || subject}  ${summary || text.slice(0, 200)}`,
  );
}
