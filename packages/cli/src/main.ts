#!/usr/bin/env node
// The `toolmesh` command. Ctrl-C ends a waiting call or a watch cleanly; a second one exits.
// Every command is a process of its own: the module compile cache (in the OS temp folder) is
// turned on before the command's modules load, which halves the CPU a start costs.
import { enableCompileCache } from 'node:module';

enableCompileCache();
const { runCli } = await import('./cli.ts');

const controller = new AbortController();
process.once('SIGINT', () => {
  controller.abort(new Error('interrupted'));
  process.once('SIGINT', () => process.exit(130));
});

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  io: { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  signal: controller.signal,
});
