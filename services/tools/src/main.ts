// The tools service process: configuration, start, and a clean stop on SIGTERM/SIGINT.
import { runService } from '@toolmesh/service';
import { startToolsService } from './app.ts';

await runService({ name: 'tools', env: process.env, start: startToolsService });
