// The agent worker process: configuration, start, and a clean stop on SIGTERM/SIGINT.
import { runService } from '@toolmesh/service';
import { startAgentWorker } from './app.ts';

await runService({ name: 'agent-worker', env: process.env, start: startAgentWorker });
