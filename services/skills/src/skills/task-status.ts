// skills.task_status: the head of an async task, read from Postgres, so any instance answers.
import { TaskRef } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';
import type { SkillsStore } from '@toolmesh/store';
import type { SkillsDeps } from './deps.ts';
import { endpointsView } from './run-service.ts';
import { headOf, viewOf } from './tasks.ts';

export function taskStatusTool(deps: SkillsDeps<SkillsStore>) {
  return defineTool({
    name: 'task_status',
    description: 'Returns the state of an async task: status, exit code, output tails, artifacts.',
    args: TaskRef,
    handler: async (args, ctx) => {
      const head = await headOf(deps, ctx.project, args.task_id);
      return { ...viewOf(head), endpoints: await endpointsView(head.status, head.endpoints) };
    },
  });
}
