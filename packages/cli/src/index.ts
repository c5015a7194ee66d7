export { runCli } from './cli.ts';
export type { RunCliOptions } from './cli.ts';
export { ExitCode, CliError } from './exit.ts';
export { zipFolder } from './commands/skills.ts';
