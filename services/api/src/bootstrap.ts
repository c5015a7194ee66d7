// A new project's tool registry: the twelve skills.* tools and the builtin diagnostic tools,
// with the JSON Schemas of their arguments, all under reserved names.
import { TOOL_CATALOG } from '@toolmesh/skills';
import type { NewTool } from '@toolmesh/store';

export function bootstrapTools(): NewTool[] {
  return TOOL_CATALOG.map((t) => ({
    name: t.name,
    target: t.target,
    description: t.description,
    category: t.category,
    parameters: t.parameters,
    annotations: t.annotations,
    origin: t.target === 'skills' ? 'skills' : 'builtin',
    // Shown in the registry; the skills service's handlers declare the same (define.ts).
    options: { idempotent: t.idempotent },
  }));
}
