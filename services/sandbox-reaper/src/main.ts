// The sandbox-reaper process: configuration, start, and on SIGTERM/SIGINT the pass in flight is
// finished before it exits 0.
import { runService } from '@toolmesh/service';
import { startReaperService } from './app.ts';

await runService({ name: 'sandbox-reaper', env: process.env, start: startReaperService });
