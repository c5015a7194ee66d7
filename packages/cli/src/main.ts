#!/usr/bin/env node
// The `toolmesh` command. Ctrl-C ends a waiting call or a watch cleanly; a second one exits.
import { runCli } from './cli.ts';

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
