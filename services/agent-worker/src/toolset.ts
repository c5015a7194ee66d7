// What an agent may call: the project's enabled tools that the profile's `allowed_tools` admits
// (a name, or `<target>.*`) and, when the agent has tools attached, only those; plus the
// internal tools its profile lists. Function names cannot hold a dot, so `skills.run_cmd` is
// shown to the model as `skills__run_cmd`, and mapped back through this table (never by
// parsing, so a name the model invents cannot reach a tool it was not shown).
import type { AgentToolRecord, ProfileRecord, ToolRecord } from '@toolmesh/store';
import type { FunctionSpec } from './llm.ts';

export const SUBMIT_RESULT = 'submit_result';

export interface Toolset {
  specs: FunctionSpec[];
  /** Function name -> registry tool. */
  byFunction: Map<string, ToolRecord>;
  /** Internal tools this agent may use. */
  internal: Set<string>;
  /** Whether any skills.* tool is visible (the prompt then lists the skills). */
  skills: boolean;
}

const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export const functionName = (toolName: string): string => toolName.replace('.', '__');
/** The tool name a function name stands for, for messages about names outside the table. */
export const toolNameOf = (fn: string): string => (fn.includes('.') ? fn : fn.replace('__', '.'));

export function allows(patterns: readonly string[], name: string): boolean {
  return patterns.some((p) =>
    p.endsWith('.*') ? name.startsWith(p.slice(0, -1)) && name.length > p.length - 1 : p === name,
  );
}

const submitSpec: FunctionSpec = {
  type: 'function',
  function: {
    name: SUBMIT_RESULT,
    description:
      'Finish the task: give the final answer. Call it once, when the work is done; nothing after it runs.',
    parameters: {
      type: 'object',
      properties: {
        result: { description: 'the final answer: text, or any JSON value the task asked for' },
      },
      required: ['result'],
      additionalProperties: false,
    },
  },
};

export function buildToolset(
  profile: ProfileRecord | undefined,
  projectTools: ToolRecord[],
  attached: AgentToolRecord[],
): Toolset {
  const allowed = profile?.allowed_tools ?? [];
  const only = new Set(attached.map((t) => t.name));
  const byFunction = new Map<string, ToolRecord>();
  const specs: FunctionSpec[] = [];
  for (const t of projectTools) {
    if (!t.enabled || !allows(allowed, t.name)) continue;
    if (only.size > 0 && !only.has(t.name)) continue;
    const fn = functionName(t.name);
    if (!FUNCTION_NAME.test(fn)) continue;
    byFunction.set(fn, t);
    specs.push({
      type: 'function',
      function: { name: fn, description: t.description, parameters: t.parameters },
    });
  }
  const internal = new Set(profile?.allowed_internal_tools ?? []);
  if (internal.has(SUBMIT_RESULT)) specs.push(submitSpec);
  const skills = [...byFunction.values()].some((t) => t.name.startsWith('skills.'));
  return { specs, byFunction, internal, skills };
}
