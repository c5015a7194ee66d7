// The command tree (commander): global connection flags, one subcommand per task, and the one
// place where errors become exit codes and messages.
import { Command, CommanderError } from 'commander';
import { describeStack } from '@toolmesh/client';
import { callCommand, type CallFlags } from './commands/call.ts';
import {
  executionsCancel,
  executionsList,
  executionsShow,
  sandboxesList,
  taskShow,
  taskCancel,
  taskStart,
  toolsList,
} from './commands/manage.ts';
import { collect } from './commands/mcp.ts';
import { toolsImportOpenApi, type ImportOpenApiFlags } from './commands/openapi.ts';
import { toolsApprove, type ApproveFlags } from './commands/definitions.ts';
import {
  approvalsDecide,
  approvalsList,
  type ApprovalsListFlags,
  type DecideFlags,
} from './commands/approvals.ts';
import {
  inputsAnswer,
  inputsList,
  inputsShow,
  type AnswerFlags,
  type InputsListFlags,
} from './commands/inputs.ts';
import {
  secretsDelete,
  secretsList,
  secretsSet,
  toolsAddHttp,
  type AddHttpFlags,
  type SecretSetFlags,
} from './commands/registry.ts';
import {
  schedulesCreate,
  schedulesList,
  schedulesSet,
  schedulesShow,
  type ScheduleCreateFlags,
} from './commands/schedules.ts';
import {
  agentsCreate,
  agentsDelete,
  agentsList,
  agentsShow,
  artifactsGet,
  artifactsShow,
  skillsActivate,
  skillsList,
  skillsShow,
} from './commands/resources.ts';
import { skillsUploadCommand, skillsValidateCommand } from './commands/skills.ts';
import { addThreadCommands } from './commands/threads.ts';
import { addMcpCommands } from './commands/mcp-commands.ts';
import { addAdminCommands } from './commands/admin.ts';
import { watchCommand, type WatchFlags } from './commands/watch.ts';
import { createContext, type Context } from './context.ts';
import { CliError, EXIT_CODES_HELP, ExitCode } from './exit.ts';
import type { Io } from './output.ts';
import { ENV_HELP, resolveSettings, type GlobalFlags } from './settings.ts';

export interface RunCliOptions {
  env: Readonly<Record<string, string | undefined>>;
  io: Io;
  /** Aborts long-running commands (Ctrl-C). */
  signal?: AbortSignal;
  /** Where to look for a running local stack (default: the process's cwd). */
  cwd?: string;
}

/** Runs the CLI on `argv` (without node and the script); resolves with the exit code. */
export async function runCli(argv: string[], opts: RunCliOptions): Promise<number> {
  const { io } = opts;
  const signal = opts.signal ?? new AbortController().signal;
  let exitCode: number = ExitCode.ok;
  const contexts: Context[] = [];
  let json = argv.includes('--json');

  // Each action gets a context built from the flags of its whole command line.
  const run =
    <A extends unknown[]>(fn: (ctx: Context, ...args: A) => Promise<number>) =>
    async (...args: unknown[]) => {
      const cmd = args.at(-1) as Command;
      const flags = cmd.optsWithGlobals<GlobalFlags>();
      json = flags.json ?? false;
      const settings = resolveSettings(flags, opts.env, opts.cwd);
      if (settings.stack) io.stderr.write(`toolmesh: ${describeStack(settings.stack)}\n`);
      const ctx = createContext(settings, io, signal);
      contexts.push(ctx);
      // commander passes positionals, then the command's own options, then the command.
      exitCode = await fn(ctx, ...(args.slice(0, -1) as A));
    };

  const program = new Command('toolmesh')
    .description('Call tools, watch events and manage a toolmesh deployment.')
    .option('--api-url <url>', 'the api (env TOOLMESH_API_URL)')
    .option('--api-key <key>', 'api key (env TOOLMESH_API_KEY)')
    .option('--nats-url <url>', 'the NATS server (env NATS_URL)')
    .option(
      '--bus-creds <file>',
      "a project's bus credential, a .creds file (env TOOLMESH_BUS_CREDS)",
    )
    .option('-p, --project <id>', 'the project (env TOOLMESH_PROJECT)')
    .option('--root <root>', 'subject root of the deployment (env TOOLMESH_SUBJECT_ROOT)')
    .option('--json', 'print JSON (NDJSON for watch) instead of text')
    .addHelpText('after', `\n${EXIT_CODES_HELP}\n\n${ENV_HELP}\n`)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    })
    .showHelpAfterError('(toolmesh --help lists the commands)');

  program
    .command('call')
    .description('call a tool over NATS and print its result')
    .argument('<tool>', 'full tool name, e.g. builtin.echo, skills.run_cmd or any registered tool')
    .option('-a, --args <json>', 'the arguments, a JSON object', '{}')
    .option('-c, --channel <id>', 'channel of the call', 'cli')
    .option('--timeout-ms <ms>', "the call's deadline, enforced by the tool service")
    .option('--wait-ms <ms>', 'how long to wait for the result (default: deadline + 5 s)')
    .option(
      '--id <tool_call_id>',
      'tool call id (default: a new UUIDv7); a retry under the same id never runs the tool twice',
    )
    .option('--no-wait', 'print the tool call id once published, do not wait')
    .option('--session <id>', "the call's context session id (history filters by it)")
    .option('--metadata <json>', "the call's context metadata, a JSON object (4 KiB at most)")
    .action(run((ctx, tool: string, f: CallFlags) => callCommand(ctx, tool, f)));

  program
    .command('watch')
    .description("print a project's live events (tool results, agent events, model chunks)")
    .option('--count <n>', 'exit after n events')
    .option('--timeout-ms <ms>', 'stop after this long (exit 5 if --count was not reached)')
    .action(run((ctx, f: WatchFlags) => watchCommand(ctx, f)));

  const skills = program.command('skills').description('skill packages');
  skills
    .command('upload')
    .description('upload a skill folder (zipped for you) or zip')
    .argument('<path>', 'a folder holding SKILL.md, or a .zip')
    .option('--no-activate', 'keep the active version as it is')
    .action(
      run((ctx, path: string, f: { activate: boolean }) => skillsUploadCommand(ctx, path, f)),
    );

  skills
    .command('validate')
    .description(
      'check a skill folder or zip as an upload would (Agent Skills format), without uploading',
    )
    .argument('<path>', 'a folder holding SKILL.md, or a .zip')
    .action(run((ctx, path: string) => skillsValidateCommand(ctx, path)));
  skills
    .command('list')
    .description("the project's skills and their active versions")
    .action(run((ctx) => skillsList(ctx)));
  skills
    .command('show')
    .description('a skill and its versions (* marks the active one)')
    .argument('<name>')
    .action(run((ctx, name: string) => skillsShow(ctx, name)));
  skills
    .command('activate')
    .description('make a version the active one')
    .argument('<name>')
    .argument('<version>', 'its sha256, or the first 6+ characters of it')
    .action(run((ctx, name: string, version: string) => skillsActivate(ctx, name, version)));

  const agents = program.command('agents').description("the project's agents");
  agents
    .command('list')
    .description('every agent with its profile')
    .action(run((ctx) => agentsList(ctx)));
  agents
    .command('show')
    .description('an agent, its profile and its own tool list')
    .argument('<id>')
    .action(run((ctx, id: string) => agentsShow(ctx, id)));
  agents
    .command('create')
    .description('create an agent (its id appears in NATS subjects: [A-Za-z0-9_-]{1,64})')
    .argument('<id>')
    .option('--name <text>', 'display name (default: the id)')
    .option('--profile <name>', 'the profile giving its model, prompt and tools')
    .action(
      run((ctx, id: string, f: { name?: string; profile?: string }) => agentsCreate(ctx, id, f)),
    );
  agents
    .command('delete')
    .description('delete an agent')
    .argument('<id>')
    .action(run((ctx, id: string) => agentsDelete(ctx, id)));

  const artifacts = program.command('artifacts').description('files produced by tool calls');
  artifacts
    .command('show')
    .description("an artifact's name, type, size and origin")
    .argument('<artifact_id>')
    .action(run((ctx, id: string) => artifactsShow(ctx, id)));
  artifacts
    .command('get')
    .description('download an artifact: to a file with -o, else its bytes to stdout')
    .argument('<artifact_id>')
    .option('-o, --output <file>', 'write it here')
    .action(run((ctx, id: string, f: { output?: string }) => artifactsGet(ctx, id, f)));

  const tools = program.command('tools').description('the tool registry');
  tools
    .command('list')
    .description("list the project's tools")
    .option('--category <name>')
    .option('--tag <tag>', 'only tools with this tag; repeat: tools with every one', collect)
    .option('--include-deprecated', 'list deprecated tools too')
    .option('-q, --query <text>', 'text in name or description')
    .option('--origin <origin>')
    .option('--limit <n>')
    .action(run((ctx, f: Parameters<typeof toolsList>[1]) => toolsList(ctx, f)));

  tools
    .command('add-http')
    .description('register an HTTP tool, from flags or a JSON file (the body of POST /tools)')
    .argument('[name]', '<target>.<tool>; optional with --file when the file names it')
    .option('--file <path>', 'a JSON file with name, description, parameters, http, options')
    .option('--url <template>', 'URL template; {param} placeholders come from the arguments')
    .option('--method <method>', 'GET, POST, PUT, PATCH or DELETE', 'GET')
    .option('--description <text>')
    .option('--category <name>')
    .option('--parameters <json>', 'JSON Schema of the arguments (default: any object)')
    .option('--query <names>', 'comma-separated arguments sent as query parameters')
    .option('--body <names>', 'comma-separated arguments sent in the JSON body (default: the rest)')
    .option(
      '--header <name:value>',
      'a fixed request header (repeatable)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option(
      '--auth <spec>',
      'bearer:<secret>, basic:<secret>, header:<Header-Name>:<secret>, or @<file>: an OAuth 2.0 config (JSON)',
    )
    .option('--options <json>', 'policies: timeout_ms, rate_limit, retries, cost')
    .action(run((ctx, name: string | undefined, f: AddHttpFlags) => toolsAddHttp(ctx, name, f)));

  tools
    .command('import-openapi')
    .description(
      'import an OpenAPI 3.0/3.1 or Swagger 2.0 document (JSON or YAML): each operation becomes an http tool <prefix>.<operationId>; again to update (dropped operations are disabled)',
    )
    .argument('<file|url>', 'a file, or an http(s) URL fetched from this machine')
    .requiredOption('--prefix <target>', 'the tools are named <prefix>.<operationId>')
    .option('--base-url <url>', "replaces the document's servers")
    .option(
      '--security <scheme=secret>',
      'send this project secret for a security scheme, or <scheme>=@<file>: an OAuth 2.0 config (JSON) for an oauth2 scheme (repeatable)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--include <ids>', 'comma-separated operation ids or tags to import')
    .option('--exclude <ids>', 'comma-separated operation ids or tags to leave out')
    .option('--category <name>', 'category of the tools (default openapi)')
    .option(
      '--tag <tag>',
      'a tag for every tool (repeatable)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .action(
      run((ctx, source: string, f: ImportOpenApiFlags) => toolsImportOpenApi(ctx, source, f)),
    );

  tools
    .command('approve')
    .description(
      "approve the changed definition an MCP tool's server lists (`tools list --json` shows pending_definition); the tool is held until then",
    )
    .argument('<name>', '<server>.<tool>')
    .option('--hash <sha256>', 'the pending definition you reviewed; refused if another is pending')
    .action(run((ctx, name: string, f: ApproveFlags) => toolsApprove(ctx, name, f)));

  const approvals = program
    .command('approvals')
    .description('tool calls waiting for a person to approve or deny them');
  approvals
    .command('list')
    .description('pending approvals, newest first (with their arguments)')
    .option('--status <status>', 'pending (default), approved, denied, timed_out or canceled')
    .option('--limit <n>', 'at most this many (1-500, default 50)')
    .action(run((ctx, f: ApprovalsListFlags) => approvalsList(ctx, f)));
  approvals
    .command('approve')
    .description('approve a waiting call: it runs once')
    .argument('<approval_id>')
    .option('--reason <text>', 'why (recorded with the decision)')
    .action(run((ctx, id: string, f: DecideFlags) => approvalsDecide(ctx, 'approve', id, f)));
  approvals
    .command('deny')
    .description('deny a waiting call: it fails approval_denied with your reason')
    .argument('<approval_id>')
    .requiredOption('--reason <text>', 'why (the caller sees it in the failed result)')
    .action(run((ctx, id: string, f: DecideFlags) => approvalsDecide(ctx, 'deny', id, f)));

  const inputs = program
    .command('inputs')
    .description('what MCP servers asked during calls that no MCP client could answer');
  inputs
    .command('list')
    .description('pending input requests, newest first')
    .option('--status <status>', 'pending (default), answered, expired or closed')
    .option('--limit <n>', 'at most this many (1-500, default 50)')
    .action(run((ctx, f: InputsListFlags) => inputsList(ctx, f)));
  inputs
    .command('show')
    .description("one input request: the server's message and the form it asks for")
    .argument('<input_request_id>')
    .action(run((ctx, id: string) => inputsShow(ctx, id)));
  inputs
    .command('answer')
    .description('answer an input request: the MCP server gets it and the call goes on')
    .argument('<input_request_id>')
    .requiredOption('--action <action>', 'accept, decline or cancel')
    .option('--content <json>', 'with accept: a JSON object matching the requested form')
    .action(run((ctx, id: string, f: AnswerFlags) => inputsAnswer(ctx, id, f)));

  const secrets = program
    .command('secrets')
    .description('project secrets (write-only: values are never shown)');
  secrets
    .command('set')
    .description('store or replace a secret')
    .argument('<name>')
    .option('--from-env <var>', 'read the value from this environment variable')
    .option('--from-file <path>', 'read the value from a file (one trailing newline dropped)')
    .option('--value <text>', 'the value itself (visible in ps and shell history)')
    .action(run((ctx, name: string, f: SecretSetFlags) => secretsSet(ctx, name, f, opts.env)));
  secrets
    .command('list')
    .description('names and dates of the stored secrets')
    .action(run((ctx) => secretsList(ctx)));
  secrets
    .command('delete')
    .description('delete a secret')
    .argument('<name>')
    .action(run((ctx, name: string) => secretsDelete(ctx, name)));

  const schedules = program
    .command('schedules')
    .description('schedules: a cron pattern that fires a tool call or an agent task');
  schedules
    .command('create')
    .description('create a schedule (a tool with --tool/--args, or an agent with --agent/--input)')
    .argument('<name>')
    .requiredOption('--cron <pattern>', 'five fields, or six with seconds first')
    .option('--timezone <zone>', 'an IANA time zone (default UTC)')
    .option('--tool <name>', 'the tool to call, e.g. builtin.echo')
    .option('--args <json>', "the call's arguments, a JSON object")
    .option('--agent <id>', 'the agent to give a task')
    .option('-i, --input <text|json>', "the task's input")
    .option('-c, --channel <id>')
    .option('--catch-up <rule>', 'missed ticks: skip (default) or once')
    .option('--paused', 'create it paused')
    .action(run((ctx, name: string, f: ScheduleCreateFlags) => schedulesCreate(ctx, name, f)));
  schedules
    .command('list')
    .description("the project's schedules with their next and last run")
    .action(run((ctx) => schedulesList(ctx)));
  schedules
    .command('show')
    .description('a schedule and its recent firings')
    .argument('<name>')
    .action(run((ctx, name: string) => schedulesShow(ctx, name)));
  for (const action of ['pause', 'resume', 'delete'] as const) {
    schedules
      .command(action)
      .description(`${action} a schedule`)
      .argument('<name>')
      .action(run((ctx, name: string) => schedulesSet(ctx, name, action)));
  }

  const executions = program.command('executions').description('tool executions');
  executions
    .command('list')
    .description('execution history, newest first')
    .option('--tool <name>')
    .option('--status <status>', 'queued, running, succeeded, failed, timeout or canceled')
    .option('--channel <id>')
    .option('--session <id>', 'calls whose context carried this session_id')
    .option('--limit <n>')
    .option('--cursor <cursor>', 'the next page, as printed by the previous one')
    .action(run((ctx, f: Parameters<typeof executionsList>[1]) => executionsList(ctx, f)));
  executions
    .command('show')
    .description("an execution's status and result")
    .argument('<tool_call_id>')
    .action(run((ctx, id: string) => executionsShow(ctx, id)));
  executions
    .command('cancel')
    .description('cancel a queued or running execution')
    .argument('<tool_call_id>')
    .option('--reason <text>')
    .action(run((ctx, id: string, f: { reason?: string }) => executionsCancel(ctx, id, f)));

  const task = program.command('task').description('agent tasks');
  task
    .command('start')
    .description('start a task for an agent; prints the task id, or with --wait its end')
    .argument('<agent>')
    .requiredOption('-i, --input <text|json>', 'the prompt, or a JSON object')
    .option('-c, --channel <id>')
    .option('-w, --wait', 'wait for the task to end; exit 1 when it failed or was canceled')
    .option('--timeout-ms <ms>', 'how long --wait waits (default 300000); then exit 5')
    .action(
      run(
        (
          ctx,
          agent: string,
          f: { input: string; channel?: string; wait?: boolean; timeoutMs?: string },
        ) => taskStart(ctx, agent, f),
      ),
    );
  task
    .command('show')
    .description("a task's status and final card")
    .argument('<task_id>')
    .action(run((ctx, id: string) => taskShow(ctx, id)));
  task
    .command('cancel')
    .description('cancel a task: its turn stops, its running tool calls are canceled')
    .argument('<task_id>')
    .option('--reason <text>')
    .action(run((ctx, id: string, f: { reason?: string }) => taskCancel(ctx, id, f)));

  addThreadCommands(program, run);

  addMcpCommands(program, run);

  addAdminCommands(program, run);

  const sandboxes = program.command('sandboxes').description('sandbox sessions');
  sandboxes
    .command('list')
    .description("the project's sandboxes")
    .option('--state <state>', 'active, reaping, destroyed or error')
    .action(run((ctx, f: { state?: string }) => sandboxesList(ctx, f)));

  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are not errors; every other parse failure is a usage error.
      return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    const e =
      err instanceof CliError
        ? err
        : new CliError(ExitCode.connection, 'internal', (err as Error).message ?? String(err));
    if (json)
      io.stdout.write(`${JSON.stringify({ error: { code: e.code, message: e.message } })}\n`);
    io.stderr.write(`toolmesh: ${e.message}\n`);
    return e.exitCode;
  } finally {
    for (const c of contexts) await c.close();
  }
}
