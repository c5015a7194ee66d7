// `pnpm stack`'s flags. An unknown one is refused rather than ignored: a mistyped
// --allow-loopback would otherwise start a stack other than the one asked for, in silence.
import { parseArgs } from 'node:util';

export const STACK_USAGE = `usage: pnpm stack [--once] [--cluster] [--json] [--allow-loopback]
  --once            stop after the demo (exit code 0 when the demo succeeded)
  --cluster         run NATS as a three-node cluster on loopback ports, streams at replicas 3
  --json            the services' log lines as JSON even on a terminal (the default elsewhere)
  --allow-loopback  let every project's HTTP tools and MCP servers reach 127.0.0.1 and localhost,
                    for servers you run on this machine; they reach this stack's own ports too,
                    so leave it off where others have projects (refused by default, as deployed)
  --help            this text
Variables: CG__* set any configuration key (docs/operations.md); NATS_URL and DATABASE_URL use
servers of yours; STACK_DATA_DIR names another folder than .data.`;

export interface StackArgs {
  once: boolean;
  cluster: boolean;
  json: boolean;
  allowLoopback: boolean;
  help: boolean;
}

/** The flags of `pnpm stack` (argv without node and the script); throws on anything else. */
export function parseStackArgs(args: readonly string[]): StackArgs {
  const { values } = parseArgs({
    args: [...args],
    strict: true,
    allowPositionals: false,
    options: {
      once: { type: 'boolean', default: false },
      cluster: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      'allow-loopback': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  return {
    once: values.once,
    cluster: values.cluster,
    json: values.json,
    allowLoopback: values['allow-loopback'],
    help: values.help,
  };
}
