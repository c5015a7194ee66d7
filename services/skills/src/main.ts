// The skills service process: configuration, start, and a clean stop on SIGTERM/SIGINT.
import { runService } from '@toolmesh/service';
import { startSkillsService } from './app.ts';

await runService({ name: 'skills', env: process.env, start: startSkillsService });
